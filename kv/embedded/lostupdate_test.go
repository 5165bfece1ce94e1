package embedded_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
)

// TestNoLostUpdatesAfterPendingWrites: clients increment a counter they
// read through Get, GetMany, First or GetRange after writes of their own
// (still pending, unsorted), and add to another with ADD: no increment is
// lost, on memory: and file:.
func TestNoLostUpdatesAfterPendingWrites(t *testing.T) {
	t.Parallel()
	onMemoryAndFile(t, embedded.Config{RetryLimit: -1}, func(t *testing.T, db *embedded.DB) {
		ctx := context.Background()
		const clients, incs = 6, 60
		counter := []byte("c/counter")
		var wg sync.WaitGroup
		for c := range clients {
			wg.Go(func() {
				for i := range incs {
					require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
						tr.Set(fmt.Appendf(nil, "c/z/%d/%d", c, i), []byte("x"))
						tr.Add([]byte("c/added"), 1)
						tr.Set(fmt.Appendf(nil, "c/a/%d/%d", c, i), []byte("y"))
						var v []byte
						switch i % 4 {
						case 0:
							var err error
							if v, err = tr.Get(counter); err != nil {
								return err
							}
						case 1:
							vs, err := kv.GetMany(tr, [][]byte{[]byte("c/a"), counter})
							if err != nil {
								return err
							}
							v = vs[1]
						case 2:
							e, ok, err := kv.First(tr, kv.Range{Begin: counter, End: []byte("c/d")}, false)
							if err != nil {
								return err
							}
							if ok {
								v = e.Value
							}
						case 3:
							kvs, err := kv.Collect(tr.GetRange(kv.Range{Begin: counter, End: []byte("c/counter\xff")}, kv.RangeOptions{}))
							if err != nil {
								return err
							}
							if len(kvs) > 0 {
								v = kvs[0].Value
							}
						}
						n := uint64(0)
						if len(v) == 8 {
							n = binary.LittleEndian.Uint64(v)
						}
						tr.Set(counter, binary.LittleEndian.AppendUint64(nil, n+1))
						tr.Add([]byte("c/added"), 1)
						return nil
					}))
				}
			})
		}
		wg.Wait()
		require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
			v, err := tr.Get(counter)
			require.NoError(t, err)
			require.Equal(t, uint64(clients*incs), binary.LittleEndian.Uint64(v))
			v, err = tr.Get([]byte("c/added"))
			require.NoError(t, err)
			require.Equal(t, uint64(2*clients*incs), binary.LittleEndian.Uint64(v))
			return nil
		}))
	})
}
