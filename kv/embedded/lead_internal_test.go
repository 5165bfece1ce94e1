package embedded

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// Concurrent commits share fsyncs (group commit), whoever writes the log:
// with every fsync taking a millisecond, 8 clients committing 25 times each
// need far fewer than 200 of them. A lone client's commits take one each.
func TestFileConcurrentCommitsShareFsyncs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := OpenFile(t.TempDir(), FileConfig{})
	require.NoError(t, err)
	defer db.Close()
	var fsyncs atomic.Int64
	db.s.log.syncFault = func() error {
		fsyncs.Add(1)
		time.Sleep(time.Millisecond)
		return nil
	}
	set := func(k string) error {
		return db.Transact(ctx, func(tr kv.Transaction) error {
			tr.Set([]byte(k), []byte("v"))
			return nil
		})
	}
	for i := range 10 {
		require.NoError(t, set(fmt.Sprint("lone", i)))
	}
	require.EqualValues(t, 10, fsyncs.Load(), "a lone client's commits")

	fsyncs.Store(0)
	const clients, each = 8, 25
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := set(fmt.Sprintf("c%d/%d", c, i)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	n := fsyncs.Load()
	t.Logf("%d commits, %d fsyncs", clients*each, n)
	require.Less(t, n, int64(clients*each/2), "concurrent commits share fsyncs")
}
