package remote_test

import (
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/kv/remote"
)

// TestRestartsExactlyOnce: concurrent clients add to a counter through
// remote, each increment a transaction that also writes its receipt (and
// does nothing if the receipt is there: a retry of an increment that was
// applied), while the file database injects FoundationDB's commit faults
// (conflicts, commit_unknown_result applied or not) and its server is
// stopped, the database closed and reopened (recovered from its log) and
// served again, several times. Every increment must succeed, and the
// counter must equal their number: a lost increment or a doubled one (a
// 1021 retried without its receipt) breaks it.
func TestRestartsExactlyOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := embedded.FileConfig{Sync: embedded.SyncNone, Config: embedded.Config{Faults: &embedded.Faults{
		Seed: 7, Conflict: 0.05, UnknownApplied: 0.05, UnknownNotApplied: 0.05,
		CommitLatency: 100 * time.Microsecond,
	}}}
	open := func() *embedded.DB {
		db, err := embedded.OpenFile(dir, cfg)
		require.NoError(t, err)
		return db
	}
	db := open()
	s := serve(t, db)

	const clients, workers, each = 3, 4, 60
	const total, restarts = clients * workers * each, 4
	var (
		wg       sync.WaitGroup
		failures atomic.Int64
		firstErr atomic.Value
		applied  atomic.Int64 // retries that found their increment applied (a 1021)
		finished atomic.Int64
	)
	// A restart is due each time another fifth of the increments is done:
	// they happen while the workload runs, whatever the machine's speed.
	due := make(chan struct{}, restarts)
	for c := range clients {
		client := s.dial(t, remote.Options{RetryLimit: -1})
		for w := range workers {
			wg.Go(func() {
				for i := range each {
					receipt := []byte(fmt.Sprintf("r/%d/%d/%03d", c, w, i))
					err := client.Transact(bg, func(tr kv.Transaction) error {
						v, err := tr.Get(receipt)
						if err != nil {
							return err
						}
						if v != nil {
							applied.Add(1)
							return nil // applied by an attempt whose outcome was unknown
						}
						tr.Add([]byte("counter"), 1)
						tr.Set(receipt, []byte{1})
						return nil
					})
					if err != nil {
						failures.Add(1)
						firstErr.CompareAndSwap(nil, err)
					}
					if n := finished.Add(1); n%(total/(restarts+1)) == 0 && n < total {
						due <- struct{}{}
					}
				}
			})
		}
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	for range restarts {
		<-due
		s.stop()
		require.NoError(t, db.Close())
		db = open()
		s.mu.Lock()
		s.db = db
		s.mu.Unlock()
		s.start()
	}
	<-done
	defer db.Close()
	require.Zero(t, failures.Load(), "increments that failed; the first: %v", firstErr.Load())

	var counter uint64
	var receipts int
	require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
		v, err := tr.Get([]byte("counter"))
		if err != nil {
			return err
		}
		counter = binary.LittleEndian.Uint64(v)
		rows, err := kv.Collect(tr.GetRange(kv.PrefixRange([]byte("r/")), kv.RangeOptions{}))
		receipts = len(rows)
		return err
	}))
	require.Equal(t, total, receipts, "every increment's receipt")
	require.Equal(t, uint64(total), counter, "no increment lost or applied twice")
	t.Logf("%d increments, %d restarts, %d retries found their increment applied", receipts, restarts, applied.Load())
}
