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
	// A few keys written over and over: the log grows, the live data
	// does not, so a checkpoint is soon due.
	var background uint64
	for i := 0; background == 0; i++ {
		set(fmt.Sprintf("before/%d", i%4))
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

// TestCheckpointPolicy pins the default policy: a checkpoint is due once
// the log has grown since the last one and the checkpoint and log on disk
// reach the larger of DefaultCheckpointBytes and 3 times the live data; at
// Close, the larger of an eighth of it and 3 times the live data.
func TestCheckpointPolicy(t *testing.T) {
	t.Parallel()
	require.Equal(t, newCkptPolicy(0), newCkptPolicy(DefaultCheckpointBytes))
	require.Equal(t, newCkptPolicy(-1), newCkptPolicy(DefaultCheckpointBytes))
	p := newCkptPolicy(0)
	const MiB = 1 << 20
	for _, c := range []struct {
		ckpt, log, live int64
		due, atClose    bool
	}{
		{},
		{log: 8},                      // an empty segment
		{log: 1*MiB - 1},              // a few rows an open
		{log: 1 * MiB, atClose: true}, // an empty queue's churn
		{log: 8*MiB - 1, atClose: true},
		{log: 8 * MiB, due: true, atClose: true}, // the floor
		{ckpt: 8 * MiB, live: 1 * MiB},           // nothing written since the checkpoint
		{ckpt: 6 * MiB, log: 2 * MiB, due: true, atClose: true}, // a checkpoint of a queue since drained
		{log: 8 * MiB, live: 3 * MiB},                           // less than 3 times the live data
		{ckpt: 2 * MiB, log: 6 * MiB, live: 2 * MiB, due: true, atClose: true},
		{ckpt: 1 * MiB, log: 2 * MiB, live: 1 * MiB, atClose: true},
		{ckpt: 1 * MiB, log: 1 * MiB, live: 1 * MiB},
		{log: 1 << 30, live: 1 << 30},                                          // a queue that only grows
		{ckpt: 1 << 30, log: 2 << 30, live: 1 << 30, due: true, atClose: true}, // as much churned as kept
	} {
		require.Equal(t, c.due, p.due(c.ckpt, c.log, c.live), "due(%+v)", c)
		require.Equal(t, c.atClose, p.dueAtClose(c.ckpt, c.log, c.live), "dueAtClose(%+v)", c)
	}
}
