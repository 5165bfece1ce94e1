package embedded

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// TestCheckpointCallWaitsForItsOwnCheckpoint: a Checkpoint call made while a
// background checkpoint runs is not answered by that checkpoint, which took
// its version before the call and so misses the commits the caller made
// before asking. It gets a checkpoint that covers them.
func TestCheckpointCallWaitsForItsOwnCheckpoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	db, err := OpenFile(dir, FileConfig{CheckpointBytes: 1 << 10})
	require.NoError(t, err)
	defer db.Close()
	w := db.s.log

	// Hold the first background checkpoint once it has pinned its version.
	started, release := make(chan uint64, 1), make(chan struct{})
	first := true
	w.ckptStarted = func(ver uint64) {
		if first { // only the writer goroutine starts checkpoints
			first = false
			started <- ver
			<-release
		}
	}
	set := func(k string) {
		require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
			tr.Set([]byte(k), make([]byte, 100))
			return nil
		}))
	}
	var background uint64
	for i := 0; background == 0; i++ {
		set(fmt.Sprintf("before/%04d", i))
		select {
		case background = <-started:
		default:
		}
	}
	// Commits the held checkpoint cannot contain.
	for i := 0; i < 5; i++ {
		set(fmt.Sprintf("after/%d", i))
	}
	last := db.s.version.Load()
	require.Greater(t, last, background)

	answered := make(chan error, 1)
	go func() { answered <- db.Checkpoint() }()
	require.Eventually(t, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.ckptWaiters) == 1
	}, 10*time.Second, time.Millisecond, "the Checkpoint call is registered")
	close(release)
	require.NoError(t, <-answered)

	ckpts, err := filepath.Glob(filepath.Join(dir, "ckpt-*.db"))
	require.NoError(t, err)
	require.Len(t, ckpts, 1)
	ver, ok := versionOf(ckpts[0], "ckpt-", ".db")
	require.True(t, ok)
	require.GreaterOrEqual(t, ver, last, "the checkpoint covers every commit made before Checkpoint was called")
	require.NoError(t, db.Close())

	db, err = OpenFile(dir, FileConfig{})
	require.NoError(t, err)
	defer db.Close()
	require.Zero(t, db.Recovery().Records, "nothing before the Checkpoint call is replayed")
}

// TestCheckpointAfterClose: a Checkpoint call on a closed file database
// returns an error instead of waiting for a writer that is gone.
func TestCheckpointAfterClose(t *testing.T) {
	t.Parallel()
	db, err := OpenFile(t.TempDir(), FileConfig{})
	require.NoError(t, err)
	require.NoError(t, db.Close())
	done := make(chan error, 1)
	go func() { done <- db.Checkpoint() }()
	select {
	case err := <-done:
		require.ErrorIs(t, err, kv.ErrClientInvalidOperation)
	case <-time.After(10 * time.Second):
		t.Fatal("Checkpoint on a closed database hangs")
	}
}
