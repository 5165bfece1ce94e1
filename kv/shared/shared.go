package shared

import (
	"context"
	"errors"
	"fmt"
	"log"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/kv/remote"
)

// SocketName is the name of the serving process's socket in a database's
// directory.
const SocketName = "fdbqueue.sock"

// OpenTimeout bounds how long Open tries to reach a database that another
// process holds: to connect to its socket, or to take the database over
// once that process is gone.
var OpenTimeout = 10 * time.Second

// ErrNoServer is returned (wrapped) by Open when another process holds a
// database's lock but does not serve it within OpenTimeout: a process
// that opened it with an fdbqueue older than sharing, or a process that
// hangs.
var ErrNoServer = errors.New("fdbqueue: the database is locked by a process that does not serve it")

// ErrNetworkFS is returned (wrapped, naming the filesystem) by Open for a
// directory on a network filesystem such as NFS.
var ErrNetworkFS = errors.New("fdbqueue: a network filesystem")

// DB is a file database that the processes of one host share: the first to
// open it serves it, the others are its clients. It implements
// kv.Database. See the package doc.
type DB struct {
	h        *host
	readOnly bool
	closed   atomic.Bool
	// handler answers the calls other processes forward (Forward: a
	// statement to run here, say) while this process serves (ServeCalls);
	// nil if none.
	handler func(ctx context.Context, req []byte) ([]byte, error)
	// running are the calls its handler runs, guarded by h.mu.
	running map[*runningCall]struct{}
}

// runningCall is a call a handler runs: Close cancels it, and counts it
// stale until it returns (see call).
type runningCall struct {
	cancel context.CancelFunc
	stale  bool
}

var (
	_ kv.Database       = (*DB)(nil)
	_ kv.CertainCommits = (*DB)(nil)
)

// host is this process's share in one database: the server it runs, or
// its connection to another's. Every Open of the directory in the process
// shares it.
type host struct {
	dir  string   // absolute, symbolic links resolved
	sock string   // the socket's address
	dirf *os.File // the directory, open when sock names it through /proc
	cfg  embedded.FileConfig
	refs int // guarded by registry.mu

	// certain: this process has served since it opened the database, so
	// every transaction it ever made ran in the engine itself, whose
	// commits are certain; a client's commits are not, and so are not
	// those of a process that took over (its earlier transactions retry
	// through the connection).
	certain bool

	// dirFile is the directory as this process first served it: the
	// socket is made again (keep) only in that directory, not in one
	// that replaced it under its name.
	dirFile os.FileInfo
	// Tests: wrapListener and wrapConn, if set, wrap each listener the
	// process serves on and each connection it dials; checkEvery, if not
	// 0, is keep's socketCheck; relistened, if set, is called with the
	// outcome of each of keep's tries to listen again; clientOnly makes
	// the share another process's in this one (embedded shares one
	// engine among a process's opens): it never serves.
	wrapListener func(net.Listener) net.Listener
	wrapConn     func(net.Conn) net.Conn
	checkEvery   time.Duration
	relistened   func(error)
	clientOnly   bool

	mu     sync.Mutex
	local  *embedded.DB // the engine, while this process serves
	ro     *embedded.DB // a read-only handle on it, for read-only DBs
	server *remote.Server
	client *remote.DB // the connection to the server, if this process was ever a client
	closed bool
	// handlers are the open handles' ServeCalls handlers, the first of
	// which answers the calls of other processes.
	handlers []*DB
	// stale counts the calls still running in the handlers of closed
	// handles; staleDone is closed once none is.
	stale     int
	staleDone chan struct{}
	// callWaits, if set (tests), is called when a call waits for stale
	// ones.
	callWaits func()
	stop      chan struct{} // closed by close: keep stops serving
	served    chan struct{} // keep's end
}

var registry = struct {
	mu    sync.Mutex
	hosts map[string]*host
	// opening holds the directories being opened (Open), each with a
	// channel closed once it is done.
	opening map[string]chan struct{}
}{hosts: make(map[string]*host), opening: make(map[string]chan struct{})}

// Open opens the file database in dir, shared with the other processes of
// the host that open it: it serves the database when no process does, and
// is a client of the process that does otherwise. cfg is as for
// embedded.OpenFile; a read-only open (cfg.Mode ReadOnly) reads the
// database that others write, and serves it too (a process must) when it
// is the first: then it opens the database to write, and only its own
// handle refuses writes. When it may not write the directory, it opens
// the files read-only as embedded.OpenFile does, alone with other readers.
func Open(dir string, cfg embedded.FileConfig) (*DB, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	ro := cfg.Mode == embedded.ReadOnly
	// The registry is not held while the directory opens, which can take
	// OpenTimeout (its lock held by a process that does not serve yet)
	// or a take-over's recovery: the process's Opens and Closes of other
	// directories go on meanwhile. Opens of this one wait for it.
	registry.mu.Lock()
	for {
		if h, ok := registry.hosts[abs]; ok {
			h.refs++
			registry.mu.Unlock()
			return &DB{h: h, readOnly: ro}, nil
		}
		opening, ok := registry.opening[abs]
		if !ok {
			break
		}
		registry.mu.Unlock()
		<-opening
		registry.mu.Lock()
	}
	opening := make(chan struct{})
	registry.opening[abs] = opening
	registry.mu.Unlock()
	h, err := newHost(abs, cfg)
	registry.mu.Lock()
	defer registry.mu.Unlock()
	delete(registry.opening, abs)
	close(opening)
	if err != nil {
		return nil, err
	}
	h.refs = 1
	registry.hosts[abs] = h
	return &DB{h: h, readOnly: ro}, nil
}

// newHost makes the process's share in the database in dir (absolute,
// symbolic links resolved), which no Open of the process holds.
func newHost(abs string, cfg embedded.FileConfig) (*host, error) {
	if err := checkFilesystem(abs); err != nil {
		return nil, err
	}
	h := &host{dir: abs, cfg: cfg}
	var err error
	if h.sock, h.dirf, err = socketAddr(abs); err != nil {
		return nil, err
	}
	if err := h.open(); err != nil {
		if h.dirf != nil {
			h.dirf.Close()
		}
		return nil, err
	}
	return h, nil
}

// open serves the database or connects to the process that does,
// retrying while the holder of the lock is not yet (or no longer)
// listening, for OpenTimeout.
func (h *host) open() error {
	ctx, cancel := context.WithTimeout(context.Background(), OpenTimeout)
	defer cancel()
	var lockErr error
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		served, err := h.tryServe(true)
		if served {
			h.certain = true
			return nil
		}
		if !errors.Is(err, embedded.ErrLocked) {
			return err
		}
		lockErr = err
		c, err := remote.Dial(ctx, remote.Options{Dial: h.redial})
		if err == nil {
			h.client = c
			return nil
		}
		if h.serving() {
			// The holder died while Dial waited for it, and redial took
			// the database over: serve it, even if the take-over (a
			// recovery) ran past the timeout, rather than fail and leave
			// the engine open and served with no handle to close it.
			h.certain = true
			return nil
		}
		if ve := (*remote.VersionError)(nil); errors.As(err, &ve) {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %w; none answered on %s for %v", ErrNoServer, lockErr, h.sock, OpenTimeout)
		}
		sleep(ctx, pause)
	}
}

// tryServe opens the engine and serves it if no other process holds the
// database. It opens the engine to write whatever the handle's mode: a
// read-only handle's process serves the others too. Only at the first
// open (first), a read-only handle that may not write the directory opens
// the engine read-only instead, alone with other readers, as
// embedded.OpenFile does. false with embedded.ErrLocked: another process
// holds the database.
func (h *host) tryServe(first bool) (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false, kv.Errorf(kv.CodeClientInvalidOperation, "database handle is closed")
	}
	if h.local != nil {
		return true, nil
	}
	if h.clientOnly {
		return false, embedded.ErrLocked
	}
	cfg := h.cfg
	if cfg.Mode == embedded.ReadOnly || !first {
		// The database exists: a take-over must not create one where
		// the directory was removed.
		cfg.Mode = embedded.ReadWrite
	}
	db, err := embedded.OpenFile(h.dir, cfg)
	if first && h.cfg.Mode == embedded.ReadOnly && errors.Is(err, os.ErrPermission) {
		cfg.Mode = embedded.ReadOnly
		db, err = embedded.OpenFile(h.dir, cfg)
		if err == nil {
			h.local, h.ro = db, db
			return true, nil
		}
	}
	if err != nil {
		return false, err
	}
	if err := h.serveLocked(db); err != nil {
		db.Close()
		return false, err
	}
	return true, nil
}

// serveLocked serves db, the engine this process just opened (and so
// holds the directory's lock), on the directory's socket.
func (h *host) serveLocked(db *embedded.DB) error {
	if fi, err := os.Stat(h.dir); err == nil {
		h.dirFile = fi
	}
	ln, file, err := h.listen()
	if err != nil {
		return fmt.Errorf("fdbqueue: serving %s to other processes: %w", h.dir, err)
	}
	ro, err := embedded.OpenFile(h.dir, embedded.FileConfig{Config: h.cfg.Config, Sync: h.cfg.Sync, Mode: embedded.ReadOnly})
	if err != nil {
		ln.Close()
		return err
	}
	h.local, h.ro = db, ro
	h.server = remote.NewServer(db, remote.ServerOptions{Call: h.call})
	h.stop, h.served = make(chan struct{}), make(chan struct{})
	go h.keep(h.server, ln, file, h.stop, h.served)
	return nil
}

// listen listens on the directory's socket, and returns the listener and
// the socket's file (nil if it cannot be told: keep then only sees it
// removed, not replaced).
func (h *host) listen() (net.Listener, os.FileInfo, error) {
	if h.dirFile != nil {
		if fi, err := os.Stat(h.dir); err != nil || !os.SameFile(fi, h.dirFile) {
			return nil, nil, fmt.Errorf("%s is no longer the directory this process opened (moved or removed): no socket is made in it", h.dir)
		}
	}
	ln, err := listen(h.sock)
	if err != nil {
		return nil, nil, err
	}
	// Closing it leaves the name alone: it may not be the listener's any
	// more (another directory's socket, if this one was moved away); keep
	// removes the socket when it is.
	if u, ok := ln.(*net.UnixListener); ok {
		u.SetUnlinkOnClose(false)
	}
	file, _ := os.Stat(h.sock)
	if h.wrapListener != nil {
		ln = h.wrapListener(ln)
	}
	return ln, file, nil
}

// Keeping the socket. A serving process holds the directory's lock, so no
// other process can serve the database while it lives: should it stop
// listening, every other process's Open would fail (ErrNoServer) and their
// reconnects give up, until it exits. So it listens again, on a fresh
// socket, when serving ends other than by close (an Accept that failed for
// good), and when the socket's file is removed (a cleaner of temporary
// files, a careless rm) or replaced: its connections go on meanwhile.
// Listening again that fails is retried with backoff.
var (
	// socketCheck is how often keep checks the socket's file.
	socketCheck = time.Second
	// minServePause and maxServePause bound the pause before listening
	// again; a socket that served for maxServePause starts at the least.
	minServePause = 10 * time.Millisecond
	maxServePause = 5 * time.Second
)

// keep serves s on ln, file being ln's socket file, and on a fresh socket
// each time serving on the last one ends (see above), until stop is
// closed or s is; it closes done when it returns.
func (h *host) keep(s *remote.Server, ln net.Listener, file os.FileInfo, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	// remove removes the socket's file once s closed ln, if the name is
	// still ln's.
	remove := func() {
		if file == nil || socketGone(h.sock, file) == nil {
			if err := os.Remove(h.sock); err != nil && !errors.Is(err, os.ErrNotExist) {
				log.Printf("fdbqueue: serving %s to other processes: removing the socket: %v", h.dir, err)
			}
		}
	}
	every := socketCheck
	if h.checkEvery != 0 {
		every = h.checkEvery
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	pause := minServePause
	for {
		ended := make(chan error, 1)
		go func(ln net.Listener) { ended <- s.Serve(ln) }(ln)
		start := time.Now()
		var why error
		for why == nil {
			select {
			case err := <-ended:
				if err == nil {
					remove()
					return // closed
				}
				why = err
			case <-tick.C:
				if why = socketGone(h.sock, file); why != nil {
					ln.Close()
					if err := <-ended; err == nil {
						return // closed meanwhile
					}
				}
			case <-stop:
				<-ended // close closes s
				remove()
				return
			}
		}
		if time.Since(start) >= maxServePause {
			pause = minServePause
		}
		log.Printf("fdbqueue: serving %s to other processes: %v; listening again", h.dir, why)
		for failed := false; ; {
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-stop:
				t.Stop()
				return
			}
			pause = min(2*pause, maxServePause)
			var err error
			ln, file, err = h.listen()
			if h.relistened != nil {
				h.relistened(err)
			}
			if err == nil {
				if failed {
					log.Printf("fdbqueue: serving %s to other processes again", h.dir)
				}
				break
			}
			if !failed {
				log.Printf("fdbqueue: serving %s to other processes: listening again: %v; retrying", h.dir, err)
				failed = true
			}
		}
	}
}

// socketGone says why the socket's file at path is not file any more
// (removed, or replaced), or nil if it is, or if that cannot be told.
func socketGone(path string, file os.FileInfo) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return errors.New("the socket's file was removed")
	case err == nil && file != nil && !os.SameFile(fi, file):
		return errors.New("the socket's file was replaced")
	}
	return nil
}

// redial connects to the serving process again after the connection was
// lost (remote.Options.Dial): to the same process if it still serves, or
// to the one that took over from it, which may be this one.
func (h *host) redial(ctx context.Context) (net.Conn, error) {
	for pause := time.Millisecond; ; pause = min(2*pause, 20*time.Millisecond) {
		c, err := dial(ctx, h.sock)
		if err == nil {
			if h.wrapConn != nil {
				c = h.wrapConn(c)
			}
			return c, nil
		}
		// No process listens: the one that served is gone. Take the
		// database over if its lock is free; another process may be
		// faster, and then we connect to it.
		served, err := h.tryServe(false)
		if err != nil && !errors.Is(err, embedded.ErrLocked) {
			return nil, err
		}
		if served {
			testHookServed()
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		testHookRedial()
		sleep(ctx, pause/2+rand.N(pause/2+1))
	}
}

// Close releases the handle. When the last handle of the process closes,
// a serving process stops serving, which its clients see as a lost
// connection; one of them takes over.
func (db *DB) Close() error {
	if !db.closed.CompareAndSwap(false, true) {
		return nil
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	h := db.h
	h.mu.Lock()
	if i := slices.Index(h.handlers, db); i >= 0 {
		h.handlers = slices.Delete(h.handlers, i, i+1)
	}
	// The calls its handler runs end now (they may have done their work,
	// or part of it: their callers are told the outcome is unknown), and
	// the next calls wait for them (see call).
	for r := range db.running {
		if h.stale == 0 {
			h.staleDone = make(chan struct{})
		}
		h.stale++
		r.stale = true
		r.cancel()
	}
	clear(db.running)
	h.mu.Unlock()
	h.refs--
	if h.refs > 0 {
		return nil
	}
	if registry.hosts[h.dir] == h {
		delete(registry.hosts, h.dir)
	}
	return h.close()
}

func (h *host) close() error {
	// Take the state and let go of the lock before closing: a reconnect
	// in progress (redial) takes it, and closing the client waits for it.
	h.mu.Lock()
	h.closed = true
	client, server, stop, served, local, ro, dirf := h.client, h.server, h.stop, h.served, h.local, h.ro, h.dirf
	h.mu.Unlock()
	var errs []error
	if client != nil {
		errs = append(errs, client.Close())
	}
	if server != nil {
		// Stop serving before the engine closes and so lets go of the
		// directory's lock: a client that finds the socket gone takes
		// the lock over only once no one serves (and keep makes no
		// socket after).
		close(stop)
		errs = append(errs, server.Close())
		<-served // keep removed the socket
	}
	if ro != nil && ro != local {
		errs = append(errs, ro.Close())
	}
	if local != nil {
		errs = append(errs, local.Close())
	}
	if dirf != nil {
		errs = append(errs, dirf.Close())
	}
	return errors.Join(errs...)
}

// backend is the database a new transaction runs on: the engine while
// this process serves, the connection otherwise.
func (db *DB) backend() (kv.Database, error) {
	if db.closed.Load() {
		return nil, kv.Errorf(kv.CodeClientInvalidOperation, "database handle is closed")
	}
	h := db.h
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.local != nil && db.readOnly:
		return h.ro, nil
	case h.local != nil:
		return h.local, nil
	case h.client != nil:
		return h.client, nil
	}
	return nil, kv.Errorf(kv.CodeClientInvalidOperation, "database handle is closed")
}

// CreateTransaction implements kv.Database.
func (db *DB) CreateTransaction(ctx context.Context) (kv.Transaction, error) {
	b, err := db.backend()
	if err != nil {
		return nil, err
	}
	tr, err := b.CreateTransaction(ctx)
	if err != nil || !db.readOnly || b != kv.Database(db.h.client) {
		return tr, err
	}
	return readOnly(tr), nil
}

// Transact implements kv.Database.
func (db *DB) Transact(ctx context.Context, fn func(kv.Transaction) error) error {
	return kv.Transact(ctx, db, fn)
}

// ReadTransact implements kv.Database.
func (db *DB) ReadTransact(ctx context.Context, fn func(kv.ReadTransaction) error) error {
	return kv.ReadTransact(ctx, db, fn)
}

// CertainCommits implements kv.CertainCommits: only a process that has
// served the database since it opened it runs every transaction in the
// engine; a client's commit can end in commit_unknown_result when the
// serving process dies.
func (db *DB) CertainCommits() bool {
	return db.h.certain && kv.CommitsCertain(db.h.local)
}

// Serving reports whether this process serves the database now.
func (db *DB) Serving() bool { return db.h.serving() }

func (h *host) serving() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.local != nil
}

// Dir is the database's directory, absolute.
func (db *DB) Dir() string { return db.h.dir }

// testHookRedial runs in redial each time it waits to try again.
var testHookRedial = func() {}

// testHookServed runs in redial once this process serves (tests make a
// take-over outlast Open's timeout with it).
var testHookServed = func() {}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// ServeCalls has fn answer, while this process serves the database, the
// calls other processes make with Forward: the first open handle's that
// has one, until it closes. A read-only handle's handler answers none: its
// transactions refuse writes, and the calls are pops of other processes
// (which then run them themselves, if no writable handle has a handler).
func (db *DB) ServeCalls(fn func(ctx context.Context, req []byte) ([]byte, error)) {
	db.h.mu.Lock()
	defer db.h.mu.Unlock()
	if db.handler == nil && fn != nil && !db.closed.Load() && !db.readOnly {
		db.handler = fn
		db.h.handlers = append(db.h.handlers, db)
	}
}

// ServingCertain reports whether this process serves the database on an
// engine whose commits are certain (no injected commit_unknown_result):
// what it runs for others then commits or fails for sure.
func (db *DB) ServingCertain() bool {
	db.h.mu.Lock()
	defer db.h.mu.Unlock()
	return db.h.local != nil && kv.CommitsCertain(db.h.local)
}

// call answers a call of another process with a handler of this one. A
// handle that closed while its handler ran may have failed the call half
// way (its transactions fail once it is closed), or not: the caller is told
// that the outcome is unknown, and calls again (another handle's handler,
// or none, answers then).
//
// Such a call again must not run while the first still does: the caller
// that lost its connection to the first calls again at once, and another
// handle's handler (an executor with claims and combining of its own) or
// the caller itself (ErrNoCalls) would not wait for the first, as the
// handler that runs it does (one call of a statement's token at a time),
// and could pop a task that the first then pops too, or pop another. So
// no call is answered while a call of a closed handle's handler runs:
// Close cancels those, and the next calls wait for them to return.
func (h *host) call(ctx context.Context, req []byte) ([]byte, error) {
	h.mu.Lock()
	for h.stale > 0 {
		done, waits := h.staleDone, h.callWaits
		h.mu.Unlock()
		if waits != nil {
			waits()
		}
		select {
		case <-done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		h.mu.Lock()
	}
	var db *DB
	if len(h.handlers) > 0 {
		db = h.handlers[0]
	}
	if db == nil {
		h.mu.Unlock()
		return nil, remote.ErrNoCalls
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &runningCall{cancel: cancel}
	if db.running == nil {
		db.running = make(map[*runningCall]struct{})
	}
	db.running[r] = struct{}{}
	h.mu.Unlock()
	resp, err := db.handler(ctx, req)
	cancel()
	h.mu.Lock()
	delete(db.running, r)
	if r.stale {
		if h.stale--; h.stale == 0 {
			close(h.staleDone)
		}
	}
	h.mu.Unlock()
	if db.closed.Load() {
		return nil, kv.Errorf(kv.CodeCommitUnknownResult, "fdbqueue: the database handle that ran the call was closed meanwhile: it may or may not have been applied")
	}
	return resp, err
}

// Forward has the serving process answer req with its handler (see
// ServeCalls), and reports whether it did: false, with no error, when this
// process serves the database itself (or serves it read-only to this
// handle, or the serving process has no handler), so that the caller
// does the work here. The errors are remote.DB.Call's: one that
// kv.IsMaybeCommitted accepts leaves it unknown whether the handler ran.
func (db *DB) Forward(ctx context.Context, req []byte) ([]byte, bool, error) {
	if db.readOnly {
		return nil, false, nil
	}
	b, err := db.backend()
	if err != nil {
		return nil, true, err
	}
	c, ok := b.(*remote.DB)
	if !ok {
		return nil, false, nil
	}
	resp, err := c.Call(ctx, req)
	if errors.Is(err, remote.ErrNoCalls) {
		return nil, false, nil
	}
	return resp, true, err
}
