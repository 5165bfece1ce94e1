package remote_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/kv/kvtest"
	"github.com/fdbqueue/fdbqueue/kv/remote"
)

var bg = context.Background()

// quiet is a logger for servers and clients whose logs the test does not
// read.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// fakeClock is an engine clock the tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *fakeClock { return &fakeClock{now: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// sockPath returns a path for a Unix socket in a directory of t's. Socket
// paths are short (108 bytes on Linux): a test's directory may be too
// deep, and then a shorter one is used.
// listening returns a memory database, closed when the test ends, and a
// listener on a fresh socket path, for a server the test wraps or kills.
func listening(t *testing.T) (*embedded.DB, string, net.Listener) {
	t.Helper()
	db := embedded.Open("", embedded.Config{})
	t.Cleanup(func() { _ = db.Close() })
	path := sockPath(t)
	l, err := net.Listen("unix", path)
	require.NoError(t, err)
	return db, path, l
}

func sockPath(t testing.TB) string {
	p := filepath.Join(t.TempDir(), "s")
	if len(p) < 100 {
		return p
	}
	dir, err := os.MkdirTemp("", "kvr")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return filepath.Join(dir, "s")
}

// unixDial dials path.
func unixDial(path string) func(context.Context) (net.Conn, error) {
	return func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}
}

// served is a Server on a Unix socket, which the test may stop and start
// again on the same path.
type served struct {
	t    testing.TB
	db   kv.Database
	path string
	opts remote.ServerOptions

	mu   sync.Mutex
	srv  *remote.Server
	done chan error
}

// serve serves db on a new socket; t's cleanup stops the server (not db).
func serve(t testing.TB, db kv.Database) *served {
	s := &served{t: t, db: db, path: sockPath(t), opts: remote.ServerOptions{Logger: quiet}}
	s.start()
	t.Cleanup(s.stop)
	return s
}

// start serves the database on the path.
func (s *served) start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, err := net.Listen("unix", s.path)
	require.NoError(s.t, err)
	s.srv = remote.NewServer(s.db, s.opts)
	s.done = make(chan error, 1)
	srv, done := s.srv, s.done
	go func() { done <- srv.Serve(l) }()
}

// stop closes the server; Serve must return nil.
func (s *served) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil {
		return
	}
	require.NoError(s.t, s.srv.Close())
	require.NoError(s.t, <-s.done)
	s.srv = nil
}

// dial connects a client, closed at t's cleanup.
func (s *served) dial(t testing.TB, opts remote.Options) *remote.DB {
	if opts.Dial == nil {
		opts.Dial = unixDial(s.path)
	}
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	db, err := remote.Dial(bg, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// TestContract runs the kv contract suite through a client and a server on
// a Unix socket, serving a memory database.
func TestContract(t *testing.T) {
	kvtest.Run(t, func(t *testing.T) kvtest.Instance {
		clock := newClock()
		db := embedded.Open("", embedded.Config{Clock: clock.Now, RetryLimit: 5, MaxWatches: 64})
		t.Cleanup(func() { _ = db.Close() })
		s := serve(t, db)
		rdb, err := remote.Dial(bg, remote.Options{Dial: unixDial(s.path), Logger: quiet})
		require.NoError(t, err)
		return kvtest.Instance{DB: rdb, Advance: clock.Advance, MaxWatches: 64}
	})
}

// TestFileContract runs the suite on a file database, served over
// net.Pipe connections (Server.ServeConn).
func TestFileContract(t *testing.T) {
	kvtest.Run(t, func(t *testing.T) kvtest.Instance {
		clock := newClock()
		db, err := embedded.OpenFile(t.TempDir(), embedded.FileConfig{Config: embedded.Config{Clock: clock.Now, RetryLimit: 5}})
		require.NoError(t, err)
		t.Cleanup(func() { _ = db.Close() })
		srv := remote.NewServer(db, remote.ServerOptions{Logger: quiet})
		t.Cleanup(func() { require.NoError(t, srv.Close()) })
		rdb, err := remote.Dial(bg, remote.Options{Logger: quiet, Dial: func(context.Context) (net.Conn, error) {
			a, b := net.Pipe()
			go func() { _ = srv.ServeConn(b) }()
			return a, nil
		}})
		require.NoError(t, err)
		return kvtest.Instance{DB: rdb, Advance: clock.Advance}
	})
}
