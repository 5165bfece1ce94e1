package shared

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
)

// openHost opens dir with a share of its own, outside this process's
// registry; setup, if not nil, sets the share's test hooks before it
// opens. A process's opens share one engine (package embedded), so only
// one share of a test process may serve a directory: the others are made
// clientOnly, as another process's would be while it is served.
func openHost(t *testing.T, dir string, setup func(h *host)) *DB {
	t.Helper()
	abs, err := filepath.Abs(dir)
	require.NoError(t, err)
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	h := &host{dir: abs, cfg: embedded.FileConfig{Sync: embedded.SyncNone}, refs: 1}
	h.sock, h.dirf, err = socketAddr(abs)
	require.NoError(t, err)
	if setup != nil {
		setup(h)
	}
	require.NoError(t, h.open())
	db := &DB{h: h}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// asClient makes a share another process's, which does not serve.
func asClient(h *host) { h.clientOnly = true }

func putKey(t *testing.T, db kv.Database, k, v string) {
	t.Helper()
	require.NoError(t, db.Transact(context.Background(), func(tr kv.Transaction) error {
		tr.Set([]byte(k), []byte(v))
		return nil
	}))
}

func getKey(t *testing.T, db kv.Database, k string) string {
	t.Helper()
	var v []byte
	require.NoError(t, db.ReadTransact(context.Background(), func(tr kv.ReadTransaction) error {
		var err error
		v, err = tr.Get([]byte(k))
		return err
	}))
	return string(v)
}

var errAcceptFailed = errors.New("injected: accept failed for good")

// failingListener's Accept fails for good once fail is closed.
type failingListener struct {
	net.Listener
	fail chan struct{}
}

func (l *failingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	select {
	case <-l.fail:
		if err == nil {
			c.Close()
		}
		return nil, errAcceptFailed
	default:
	}
	return c, err
}

// TestServeAgainAfterAcceptFails: the serving process's Accept fails with
// an error it cannot wait out, which ends remote.Server.Serve. The process
// still holds the database's lock, so no other can serve it: it must
// serve again on a fresh socket, or every other process's Open fails
// (ErrNoServer) until it exits. The connections made before go on.
func TestServeAgainAfterAcceptFails(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fail := make(chan struct{})
	var wrapped atomic.Bool
	srv := openHost(t, dir, func(h *host) {
		h.wrapListener = func(ln net.Listener) net.Listener {
			if wrapped.CompareAndSwap(false, true) {
				return &failingListener{Listener: ln, fail: fail}
			}
			return ln
		}
	})
	require.True(t, srv.Serving())
	before := openHost(t, dir, asClient)
	require.False(t, before.Serving())
	putKey(t, before, "a", "1")

	close(fail) // the next connection's Accept fails, and Serve ends
	after := openHost(t, dir, asClient)
	require.False(t, after.Serving())
	require.Equal(t, "1", getKey(t, after, "a"))
	putKey(t, before, "b", "2")
	require.Equal(t, "2", getKey(t, after, "b"))
	require.Equal(t, "2", getKey(t, srv, "b"))
}

// TestSocketFileGone: the serving process's socket file is removed (a
// cleaner of temporary files, say) or replaced while it serves. It must
// make it again, or every other process's Open fails until it exits.
func TestSocketFileGone(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		do   func(t *testing.T, path string)
	}{
		{"removed", func(t *testing.T, path string) {
			require.NoError(t, os.Remove(path))
		}},
		{"replaced by a file", func(t *testing.T, path string) {
			require.NoError(t, os.Remove(path))
			require.NoError(t, os.WriteFile(path, []byte("x"), 0o600))
		}},
		{"replaced by a dead socket", func(t *testing.T, path string) {
			require.NoError(t, os.Remove(path))
			l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
			require.NoError(t, err)
			l.SetUnlinkOnClose(false)
			require.NoError(t, l.Close())
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			srv := openHost(t, dir, func(h *host) { h.checkEvery = 5e6 })
			require.True(t, srv.Serving())
			before := openHost(t, dir, asClient)
			putKey(t, before, "a", "1")

			c.do(t, filepath.Join(dir, SocketName))
			after := openHost(t, dir, asClient)
			require.False(t, after.Serving())
			require.Equal(t, "1", getKey(t, after, "a"))
			putKey(t, before, "b", "2")
			require.Equal(t, "2", getKey(t, after, "b"))
			serveInChild(t, dir, "FDBQUEUE_SHARED_PUT=c=3") // another process's Open
			require.Equal(t, "3", getKey(t, srv, "c"))
		})
	}
}

// TestNoSocketInAnotherDirectory: the serving process's directory is moved
// away and another made under its name (for a new database, which a new
// process may serve). The process finds its socket gone from that name,
// and must not make one in a directory that is not its database's: a
// client opening that directory would reach the wrong database, and the
// two processes would take the name from each other.
func TestNoSocketInAnotherDirectory(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	dir := filepath.Join(parent, "db")
	require.NoError(t, os.Mkdir(dir, 0o700))
	srv, tried := checkingHost(t, dir)
	require.True(t, srv.Serving())
	require.NoError(t, os.Rename(dir, filepath.Join(parent, "moved")))
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.ErrorContains(t, <-tried, "no longer the directory this process opened")
	_, err := os.Stat(filepath.Join(dir, SocketName))
	require.ErrorIs(t, err, os.ErrNotExist, "a socket made in the directory that replaced the database's")
}

// checkingHost opens dir in a host that checks its socket's file every 5
// ms, and sends the outcome of its first try to listen again on tried.
func checkingHost(t *testing.T, dir string) (srv *DB, tried chan error) {
	t.Helper()
	tried = make(chan error, 1)
	srv = openHost(t, dir, func(h *host) {
		h.checkEvery = 5e6
		h.relistened = func(err error) {
			select {
			case tried <- err:
			default:
			}
		}
	})
	return srv, tried
}
