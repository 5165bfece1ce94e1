package remote_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/kv/remote"
)

// holdDB is a database whose reads of the key "held" wait until release
// is closed or their transaction's context ends: reads that are pending in
// the server when it goes away.
type holdDB struct {
	kv.Database
	release chan struct{}
	waiting chan struct{} // receives when a read starts waiting
}

type holdTxn struct {
	kv.Transaction
	db *holdDB
}

func (d *holdDB) CreateTransaction(ctx context.Context) (kv.Transaction, error) {
	tr, err := d.Database.CreateTransaction(ctx)
	if err != nil {
		return nil, err
	}
	return &holdTxn{Transaction: tr, db: d}, nil
}

func (t *holdTxn) Get(key []byte) ([]byte, error) {
	if string(key) == "held" {
		t.db.waiting <- struct{}{}
		select {
		case <-t.db.release:
		case <-t.Context().Done():
			return nil, kv.Join(kv.ErrTransactionCancelled, t.Context().Err())
		}
	}
	return t.Transaction.Get(key)
}

// requireLost fails t unless err is a lost connection's error for a read:
// retryable, certainly not committed.
func requireLost(t *testing.T, err error, what string) {
	t.Helper()
	require.ErrorIs(t, err, kv.ErrConnectionFailed, what)
	require.True(t, kv.IsRetryable(err), what)
	require.False(t, kv.IsMaybeCommitted(err), what)
}

// setKey commits key=value.
func setKey(t *testing.T, db kv.Database, key, value string) {
	t.Helper()
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		tr.Set([]byte(key), []byte(value))
		return nil
	}))
}

func getKey(t *testing.T, db kv.Database, key string) string {
	t.Helper()
	return string(getKeyBytes(t, db, key))
}

// slowCommitsDB is a memory database whose read-write commits never end
// (unless their context does).
func slowCommitsDB(t *testing.T) *embedded.DB {
	db := embedded.Open("", embedded.Config{Faults: &embedded.Faults{CommitLatency: time.Hour}})
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// newHoldDB is a holdDB over a memory database, which it returns too.
func newHoldDB(t *testing.T) (*holdDB, *embedded.DB) {
	plain := embedded.Open("", embedded.Config{})
	t.Cleanup(func() { _ = plain.Close() })
	return &holdDB{Database: plain, release: make(chan struct{}), waiting: make(chan struct{}, 8)}, plain
}

// TestServerClosed: the server is closed while a client has reads, a
// commit and watches pending. The reads fail with connection_failed
// (retryable, not committed), the commit with commit_unknown_result, and
// nothing hangs. The committed watches are armed again once a server
// serves the database on the same path: one whose key changed meanwhile
// fires then, the other when its key changes next. The client's next
// transaction, through Transact's retries, succeeds on the new server.
func TestServerClosed(t *testing.T) {
	t.Parallel()
	mem := slowCommitsDB(t)
	hold, plain := newHoldDB(t)
	// Two servers, on two paths: one whose commits never end, one whose
	// reads of "held" wait.
	slow := serve(t, mem)
	held := serve(t, hold)
	cslow := slow.dial(t, remote.Options{})
	chold := held.dial(t, remote.Options{})

	setKey(t, chold, "w1", "before")
	setKey(t, chold, "w2", "before")
	w1 := watchOn(t, chold, "w1")
	w2 := watchOn(t, chold, "w2")

	// A commit in flight, and reads in flight, a synchronous one and
	// futures.
	commitErr := make(chan error, 1)
	go func() {
		tr, err := cslow.CreateTransaction(bg)
		if err != nil {
			commitErr <- err
			return
		}
		tr.Set([]byte("k"), []byte("v"))
		commitErr <- tr.Commit()
	}()
	tr, err := chold.CreateTransaction(bg)
	require.NoError(t, err)
	defer tr.Cancel()
	getErr := make(chan error, 1)
	go func() {
		_, err := tr.Get([]byte("held"))
		getErr <- err
	}()
	<-hold.waiting
	// The futures are sent after the held read, so they wait behind it.
	fv := kv.GetAsync(tr.Snapshot(), []byte("w1"))
	fr := kv.GetRangeAsync(tr, kv.PrefixRange([]byte("w")), kv.RangeOptions{})
	time.Sleep(10 * time.Millisecond) // let the slow commit reach its server

	slow.stop()
	held.stop()

	requireLost(t, <-getErr, "the held read")
	_, err = fv.Get()
	requireLost(t, err, "a value future")
	_, err = fr.Get()
	requireLost(t, err, "a range future")
	err = <-commitErr
	require.ErrorIs(t, err, kv.ErrCommitUnknownResult, "the commit in flight")
	require.True(t, kv.IsMaybeCommitted(err))
	_, err = tr.Get([]byte("w1"))
	requireLost(t, err, "a read after the loss")
	require.ErrorIs(t, tr.Commit(), kv.ErrConnectionFailed, "a commit never sent did not commit")

	// No server: the watches wait.
	select {
	case <-w1.Done():
		t.Fatalf("the watch settled while no server served: %v", w1.Err())
	case <-time.After(20 * time.Millisecond):
	}
	// w1's key changes while no server serves.
	setKey(t, plain, "w1", "meanwhile")

	close(hold.release)
	held.start()
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	require.NoError(t, w1.Wait(ctx), "changed while no server watched")
	select {
	case <-w2.Done():
		t.Fatalf("a watch whose key did not change settled: %v", w2.Err())
	case <-time.After(20 * time.Millisecond):
	}
	setKey(t, chold, "w2", "after")
	require.NoError(t, w2.Wait(ctx), "armed again on the new server")

	// The transaction that lost its connection goes on after OnError.
	require.NoError(t, tr.OnError(err))
	v, err := tr.Get([]byte("w1"))
	require.NoError(t, err)
	require.Equal(t, "meanwhile", string(v))
	require.Equal(t, "after", getKey(t, chold, "w2"))

	// The other server comes back too: a new transaction retries through
	// the reconnect.
	slow.mu.Lock()
	slow.db = plain
	slow.mu.Unlock()
	slow.start()
	setKey(t, cslow, "again", "1")
	require.Equal(t, "1", getKey(t, plain, "again"))
}

// watchOn commits a transaction that makes a watch on key.
func watchOn(t *testing.T, db kv.Database, key string) kv.Watch {
	t.Helper()
	var w kv.Watch
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		if w != nil {
			w.Cancel()
		}
		w = tr.Watch([]byte(key))
		return nil
	}))
	return w
}

// killable is a listener whose connections can all be cut at once, as the
// death of the server's process cuts them, without the Server's Close.
type killable struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func (k *killable) Accept() (net.Conn, error) {
	c, err := k.Listener.Accept()
	if err == nil {
		k.mu.Lock()
		k.conns = append(k.conns, c)
		k.mu.Unlock()
	}
	return c, err
}

func (k *killable) kill() {
	_ = k.Listener.Close()
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, c := range k.conns {
		_ = c.Close()
	}
}

// TestServerDies: the server's listener and connections are cut under it
// (its process died): a transaction in flight fails as after a Close, and
// Transact on a client succeeds once another server serves the path. A
// transaction that waits for the reconnect gives up after
// ReconnectTimeout.
func TestServerDies(t *testing.T) {
	t.Parallel()
	db, path, l := listening(t)
	k := &killable{Listener: l}
	srv := remote.NewServer(db, remote.ServerOptions{Logger: quiet})
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(k) }()

	client, err := remote.Dial(bg, remote.Options{Dial: unixDial(path), Logger: quiet, ReconnectTimeout: 200 * time.Millisecond})
	require.NoError(t, err)
	defer client.Close()
	setKey(t, client, "a", "1")
	tr, err := client.CreateTransaction(bg)
	require.NoError(t, err)
	defer tr.Cancel()
	_, err = tr.Get([]byte("a"))
	require.NoError(t, err)
	tr.Set([]byte("b"), []byte("2"))

	k.kill()
	require.Error(t, <-serveErr, "Serve returns its listener's error")
	_, err = tr.Get([]byte("c"))
	requireLost(t, err, "after the connections were cut")

	// No server: OnError waits for the reconnect, which gives up.
	err = tr.OnError(err)
	require.ErrorIs(t, err, kv.ErrConnectionFailed, "no server came back within ReconnectTimeout: %v", err)
	tr.Cancel()
	require.NoError(t, srv.Close())

	// Another server on the path: Transact succeeds.
	s2 := &served{t: t, db: db, path: path, opts: remote.ServerOptions{Logger: quiet}}
	s2.start()
	defer s2.stop()
	setKey(t, client, "b", "3")
	require.Equal(t, "3", getKey(t, db, "b"))
}

// TestCloseUnblocks: closing the client ends what waits: a commit in
// flight gets commit_unknown_result, a watch client_invalid_operation,
// and the handle refuses new transactions.
func TestCloseUnblocks(t *testing.T) {
	t.Parallel()
	s := serve(t, slowCommitsDB(t))
	client := s.dial(t, remote.Options{})
	w := func() kv.Watch {
		tr, err := client.CreateTransaction(bg)
		require.NoError(t, err)
		w := tr.Watch([]byte("w"))
		require.NoError(t, tr.Commit(), "read-only: no latency")
		return w
	}()
	errc := make(chan error, 1)
	go func() {
		errc <- client.Transact(bg, func(tr kv.Transaction) error {
			tr.Set([]byte("k"), []byte("v"))
			return nil
		})
	}()
	time.Sleep(10 * time.Millisecond)
	require.NoError(t, client.Close())
	err := <-errc
	require.True(t, kv.IsMaybeCommitted(err), "%v", err)
	require.Equal(t, kv.CodeClientInvalidOperation, kv.Code(w.Err()))
	_, err = client.CreateTransaction(bg)
	require.Equal(t, kv.CodeClientInvalidOperation, kv.Code(err))
}

// TestVersionMismatch: a client and a server of different fdbqueue
// versions do not talk; Dial's error names both versions.
func TestVersionMismatch(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	s := &served{t: t, db: db, path: sockPath(t), opts: remote.ServerWithVersion(remote.ServerOptions{Logger: quiet}, "v9.9.9")}
	s.start()
	defer s.stop()
	_, err := remote.Dial(bg, remote.Options{Dial: unixDial(s.path), Logger: quiet})
	var ve *remote.VersionError
	require.True(t, errors.As(err, &ve), "%v", err)
	require.Contains(t, err.Error(), "v9.9.9")
	require.Contains(t, err.Error(), remote.ModuleVersion())
	require.Equal(t, remote.ProtocolVersion, ve.ServerProtocol)

	same, err := remote.Dial(bg, remote.WithVersion(remote.Options{Dial: unixDial(s.path), Logger: quiet}, "v9.9.9"))
	require.NoError(t, err, "the same version")
	require.NoError(t, same.Close())
}

// TestContextCancelsServerTransaction: the client's context ending cancels
// the server's transaction: a read blocked in the server's engine returns,
// and a commit waiting there fails with the context's error, promptly.
func TestContextCancelsServerTransaction(t *testing.T) {
	t.Parallel()
	hold, _ := newHoldDB(t)
	chold := serve(t, hold).dial(t, remote.Options{})
	cslow := serve(t, slowCommitsDB(t)).dial(t, remote.Options{})

	ctx, cancel := context.WithCancel(bg)
	tr, err := chold.CreateTransaction(ctx)
	require.NoError(t, err)
	defer tr.Cancel()
	f := kv.GetAsync(tr, []byte("held"))
	<-hold.waiting
	cancel()
	_, err = f.Get()
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, kv.ErrTransactionCancelled)
	// The server's read returned: the next read of the key waits again.
	tr2, err := chold.CreateTransaction(bg)
	require.NoError(t, err)
	defer tr2.Cancel()
	f2 := kv.GetAsync(tr2, []byte("held"))
	<-hold.waiting
	close(hold.release)
	_, err = f2.Get()
	require.NoError(t, err)

	ctx, cancel = context.WithTimeout(bg, 50*time.Millisecond)
	defer cancel()
	err = cslow.Transact(ctx, func(tr kv.Transaction) error {
		tr.Set([]byte("k"), []byte("v"))
		return nil
	})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, kv.ErrTransactionCancelled, "the server answered: not committed")
	require.False(t, kv.IsMaybeCommitted(err))
}

// TestWatchOfUncommittedTransaction: a watch whose transaction had not
// committed when the connection was lost fails as its transaction does:
// connection_failed, or commit_unknown_result if its commit was in flight.
func TestWatchOfUncommittedTransaction(t *testing.T) {
	t.Parallel()
	s := serve(t, slowCommitsDB(t))
	client := s.dial(t, remote.Options{})
	tr, err := client.CreateTransaction(bg)
	require.NoError(t, err)
	defer tr.Cancel()
	pending := tr.Watch([]byte("a"))

	tr2, err := client.CreateTransaction(bg)
	require.NoError(t, err)
	defer tr2.Cancel()
	committing := tr2.Watch([]byte("b"))
	tr2.Set([]byte("b"), []byte("x")) // a write: the commit waits an hour
	commitErr := make(chan error, 1)
	go func() { commitErr <- tr2.Commit() }()
	time.Sleep(10 * time.Millisecond)
	s.stop()

	require.ErrorIs(t, <-commitErr, kv.ErrCommitUnknownResult)
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	require.ErrorIs(t, pending.Wait(ctx), kv.ErrConnectionFailed)
	require.ErrorIs(t, committing.Wait(ctx), kv.ErrCommitUnknownResult)
}

// TestSharedReconnect: transactions that lose the connection together
// share one reconnect: one new connection after a restart, whatever the
// number of transactions retrying; and they all succeed on it.
func TestSharedReconnect(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	s := serve(t, db)
	var dials, conns atomic.Int64
	client := s.dial(t, remote.Options{Dial: func(ctx context.Context) (net.Conn, error) {
		dials.Add(1)
		c, err := unixDial(s.path)(ctx)
		if err == nil {
			conns.Add(1)
		}
		return c, err
	}})
	const workers = 8
	var wg sync.WaitGroup
	started := make(chan struct{}, workers)
	release := make(chan struct{})
	for i := range workers {
		wg.Go(func() {
			first := true
			require.NoError(t, client.Transact(bg, func(tr kv.Transaction) error {
				if _, err := tr.Get([]byte("k")); err != nil {
					return err
				}
				if first {
					first = false
					started <- struct{}{}
					<-release // the server is restarted meanwhile
				}
				tr.Set([]byte(fmt.Sprintf("w%d", i)), []byte("done"))
				return nil
			}))
		})
	}
	for range workers {
		<-started
	}
	s.stop()
	s.start()
	close(release)
	wg.Wait()
	require.Equal(t, int64(2), conns.Load(), "the first connection and one reconnect (%d dials)", dials.Load())
	for i := range workers {
		require.Equal(t, "done", getKey(t, db, fmt.Sprintf("w%d", i)))
	}
}
