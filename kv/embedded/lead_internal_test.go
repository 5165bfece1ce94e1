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

// A file database's commit calls its OnCommitQueued function once checked
// and queued for the log, while the log's fsync is still to come; a memory
// database's commits, and commits that write nothing, never call it.
func TestCommitQueuedBeforeDurable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := OpenFile(t.TempDir(), FileConfig{})
	require.NoError(t, err)
	defer db.Close()
	hold := make(chan struct{})
	release := sync.OnceFunc(func() { close(hold) })
	defer release()
	db.s.log.syncFault = func() error {
		<-hold
		return nil
	}
	tr, err := db.CreateTransaction(ctx)
	require.NoError(t, err)
	var queued atomic.Int64
	tr.(kv.CommitQueuer).OnCommitQueued(func() { queued.Add(1) })
	tr.Set([]byte("k"), []byte("v"))
	committed := make(chan error, 1)
	go func() { committed <- tr.Commit() }()
	require.Eventually(t, func() bool { return queued.Load() == 1 }, 10*time.Second, time.Millisecond)
	select {
	case err := <-committed:
		t.Fatalf("the commit returned (%v) before its fsync", err)
	default:
	}
	release()
	require.NoError(t, <-committed)
	require.EqualValues(t, 1, queued.Load())

	// Nothing written: nothing queued.
	ro, err := db.CreateTransaction(ctx)
	require.NoError(t, err)
	ro.(kv.CommitQueuer).OnCommitQueued(func() { queued.Add(1) })
	_, err = ro.Get([]byte("k"))
	require.NoError(t, err)
	require.NoError(t, ro.Commit())
	require.EqualValues(t, 1, queued.Load())

	mem := Open("", Config{})
	defer mem.Close()
	mt, err := mem.CreateTransaction(ctx)
	require.NoError(t, err)
	mt.(kv.CommitQueuer).OnCommitQueued(func() { queued.Add(1) })
	mt.Set([]byte("k"), []byte("v"))
	require.NoError(t, mt.Commit())
	require.EqualValues(t, 1, queued.Load(), "memory: commits never wait for a disk")
}
