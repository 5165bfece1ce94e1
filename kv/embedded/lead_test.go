package embedded_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
)

// A transaction opened before its database closed fails its commit
// instead of waiting for a log writer that is gone.
func TestFileCommitAfterCloseFails(t *testing.T) {
	t.Parallel()
	db, err := embedded.OpenFile(t.TempDir(), embedded.FileConfig{})
	require.NoError(t, err)
	tr, err := db.CreateTransaction(context.Background())
	require.NoError(t, err)
	tr.Set([]byte("k"), []byte("v"))
	require.NoError(t, db.Close())
	done := make(chan error, 1)
	go func() { done <- tr.Commit() }()
	select {
	case err := <-done:
		require.ErrorContains(t, err, "closed")
	case <-time.After(10 * time.Second):
		t.Fatal("the commit of a transaction opened before Close hangs")
	}
}

// A lone client's commits are written by the client's goroutine (the log is
// idle), and they still start checkpoints as the log grows: the writer
// goroutine, asleep, is woken for them.
func TestFileLoneClientStartsCheckpoints(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	const commits = 1000
	db, err := embedded.OpenFile(dir, embedded.FileConfig{CheckpointBytes: 8 << 10})
	require.NoError(t, err)
	defer db.Close()
	// 50 keys written over and over: the log grows, the live data (6 KiB)
	// does not.
	commit := func(i int) {
		require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
			tr.Set([]byte(fmt.Sprintf("k%04d", i%50)), []byte(strings.Repeat("v", 100)))
			return nil
		}))
	}
	for i := 0; i < commits; i++ {
		commit(i)
	}
	// A checkpoint every 12 KiB of log (twice the live data), about every
	// 90 commits: one starts near the end (checkpoint files are named by
	// their version). One that is due while another runs waits for a later
	// commit, so on a loaded machine a few more commits may be needed: the
	// checkpoints must keep coming, not keep pace with the clock.
	last := func() uint64 {
		var last uint64
		names, err := filepath.Glob(filepath.Join(dir, "ckpt-*.db"))
		require.NoError(t, err)
		for _, name := range names {
			var ver uint64
			_, err := fmt.Sscanf(filepath.Base(name), "ckpt-%d.db", &ver)
			require.NoError(t, err)
			last = max(last, ver)
		}
		return last
	}
	for i := commits; last() < commits-commits/4; i++ {
		require.Less(t, i, 20*commits, "no checkpoint near the end of %d commits, nor after %d more", commits, i-commits)
		commit(i)
		time.Sleep(time.Millisecond) // a checkpoint running finishes meanwhile
	}
}
