package shared

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv/embedded"
)

// TestOpenWaitsAlone: an Open that waits for another directory (locked
// by a process that does not serve yet: it waits up to OpenTimeout; or
// taking it over: a recovery, seconds at a million rows) must not hold up
// the process's Closes and Opens of other databases. A second Open of the
// same directory waits for the first, and shares its handle's state.
func TestOpenWaitsAlone(t *testing.T) {
	// Not parallel: it sets OpenTimeout and the hook.
	cfg := embedded.FileConfig{Sync: embedded.SyncNone}
	x, err := Open(t.TempDir(), cfg)
	require.NoError(t, err)
	ydir := t.TempDir()
	child := serveInChild(t, ydir, "FDBQUEUE_SHARED_LONE=1")

	retrying := make(chan struct{}, 1)
	release := make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	defer releaseOnce()
	oldHook, oldTimeout := testHookRedial, OpenTimeout
	testHookRedial = func() {
		select {
		case retrying <- struct{}{}:
		default:
		}
		<-release
	}
	OpenTimeout = time.Minute
	defer func() { testHookRedial, OpenTimeout = oldHook, oldTimeout }()

	type opened struct {
		db  *DB
		err error
	}
	first, second := make(chan opened, 1), make(chan opened, 1)
	go func() {
		db, err := Open(ydir, cfg)
		first <- opened{db, err}
	}()
	<-retrying // the Open of y waits for its lock's holder
	go func() {
		db, err := Open(ydir, cfg)
		second <- opened{db, err}
	}()

	closed := make(chan error, 1)
	go func() { closed <- x.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Close of one database waits for the Open of another")
	}
	z, err := Open(t.TempDir(), cfg)
	require.NoError(t, err)
	require.True(t, z.Serving())
	require.NoError(t, z.Close())

	child.Kill(t)
	releaseOnce()
	a, b := <-first, <-second
	require.NoError(t, a.err)
	require.NoError(t, b.err)
	defer a.db.Close()
	defer b.db.Close()
	require.Same(t, a.db.h, b.db.h, "two Opens of one directory in a process share it")
	require.True(t, a.db.Serving(), "it took the database over")
}
