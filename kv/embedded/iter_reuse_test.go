package embedded_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
)

// TestRangeReadsOfReusedBuffers: the batch a finished range read fetched
// into goes back with the transaction's buffers when it ends, for the
// next transaction's range reads. Two range reads open at once in that
// next transaction must not share it: each returns exactly the rows of
// its range, read in turns, on memory: and file:.
func TestRangeReadsOfReusedBuffers(t *testing.T) {
	t.Parallel()
	onMemoryAndFile(t, embedded.Config{}, func(t *testing.T, db *embedded.DB) {
		ctx := context.Background()
		require.NoError(t, kv.Transact(ctx, db, func(tr kv.Transaction) error {
			for i := range 30 {
				tr.Set(fmt.Appendf(nil, "x/%02d", i), []byte("x"))
				tr.Set(fmt.Appendf(nil, "y/%02d", i), []byte("y"))
			}
			return nil
		}))
		for round := range 10 {
			before, err := db.CreateTransaction(ctx)
			require.NoError(t, err)
			_, err = before.Get([]byte("x/00")) // its buffers
			require.NoError(t, err)
			rows, err := kv.Collect(before.GetRange(kv.PrefixRange([]byte("y/")), kv.RangeOptions{}))
			require.NoError(t, err)
			require.Len(t, rows, 30)
			before.Cancel()

			tr, err := db.CreateTransaction(ctx)
			require.NoError(t, err)
			_, err = tr.Get([]byte("y/00")) // its buffers: the ones before's, mostly
			require.NoError(t, err)
			its := []kv.Iterator{
				tr.GetRange(kv.PrefixRange([]byte("x/")), kv.RangeOptions{}),
				tr.GetRange(kv.PrefixRange([]byte("y/")), kv.RangeOptions{}),
			}
			for i := range 30 {
				for j, it := range its {
					require.True(t, it.Next(), "round %d: row %d of range %d", round, i, j)
					require.Equal(t, fmt.Sprintf("%c/%02d", "xy"[j], i), string(it.KeyValue().Key), "round %d", round)
				}
			}
			tr.Cancel()
		}
	})
}
