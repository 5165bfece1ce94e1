package shared

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
)

// TestOpenTakesOverLate: Open finds the lock held by a process that does
// not serve yet; that process dies, and Open takes the database over
// (recovering its log) as OpenTimeout runs out. The open must not fail
// while leaving the engine it opened locked and served, with no handle to
// close it: it serves, as an Open that took over in time does.
func TestOpenTakesOverLate(t *testing.T) {
	// Not parallel: it sets OpenTimeout and the hook.
	dir := t.TempDir()
	child := serveInChild(t, dir, "FDBQUEUE_SHARED_LONE=1")

	oldTimeout, oldHook := OpenTimeout, testHookServed
	OpenTimeout = 300 * time.Millisecond
	// The take-over's recovery outlasts what is left of the timeout.
	testHookServed = func() { time.Sleep(OpenTimeout) }
	defer func() { OpenTimeout, testHookServed = oldTimeout, oldHook }()
	go func() {
		time.Sleep(OpenTimeout / 3)
		child.Kill(t)
	}()

	db, err := Open(dir, embedded.FileConfig{Sync: embedded.SyncNone})
	if err != nil {
		// Then nothing of the take-over may remain: the lock is free
		// and no one listens.
		sock, _, serr := socketAddr(dir)
		require.NoError(t, serr)
		_, derr := dial(context.Background(), sock)
		require.Error(t, derr, "Open failed (%v), yet this process serves the database", err)
		return
	}
	defer db.Close()
	require.True(t, db.Serving())
	require.True(t, db.CertainCommits(), "it never was a client")
	require.NoError(t, db.Transact(context.Background(), func(tr kv.Transaction) error {
		tr.Set([]byte("a"), []byte("1"))
		return nil
	}))
}
