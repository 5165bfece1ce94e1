// The client: the DB, its connection to the server, the calls waiting for
// answers, and reconnecting.

package remote

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
)

// Options configure a DB.
type Options struct {
	// Dial opens a connection to the server; required. Dial (the
	// package's) calls it once, and the DB again each time it reconnects
	// after losing its connection, with a context that ends when
	// ReconnectTimeout does. It may do whatever ends in a connection: a
	// process that takes over serving the database may open it, serve it
	// (Server), and return one end of a net.Pipe whose other it hands to
	// Server.ServeConn, so that its own DB goes on through its server.
	Dial func(ctx context.Context) (net.Conn, error)
	// RetryLimit bounds how many times OnError retries one transaction
	// after it lost its connection: 0 means DefaultRetryLimit, -1 no
	// limit (the context still bounds them). The other retryable errors
	// are retried as the server's engine decides: OnError runs there.
	RetryLimit int
	// ReconnectTimeout is how long one reconnect keeps calling Dial (with
	// backoff) before it gives up, failing the transactions that wait
	// for it; the next one to need a connection starts another.
	// 0 means DefaultReconnectTimeout.
	ReconnectTimeout time.Duration
	// Logger receives lost connections and reconnects; nil means
	// slog.Default().
	Logger *slog.Logger

	version string // the handshake's fdbqueue version; "": moduleVersion
}

// Defaults of Options.
const (
	DefaultRetryLimit       = 100
	DefaultReconnectTimeout = 10 * time.Second
)

// Backoff between the Dial calls of a reconnect, and between the retries
// of a transaction that lost its connection.
const (
	minBackoff = time.Millisecond
	maxBackoff = 250 * time.Millisecond
)

// DB is a kv.Database whose transactions run in a Server's process, over
// one connection that carries all of them. Safe for concurrent use.
type DB struct {
	opts Options
	log  *slog.Logger
	ctx  context.Context // done once the DB is closed
	stop context.CancelFunc
	wg   sync.WaitGroup // reconnects, and watches being armed again

	mu     sync.Mutex
	conn   *conn      // the live connection; nil when there is none
	rc     *reconnect // the reconnect under way, if any
	cause  error      // why there is no live connection
	closed bool

	nextWatch atomic.Uint64
}

var _ kv.Database = (*DB)(nil)

// reconnect is one reconnect: done is closed once it ended, with c (the new
// connection) or err.
type reconnect struct {
	done chan struct{}
	c    *conn
	err  error
}

// Dial connects to a server and completes the handshake: a server of
// another protocol or fdbqueue version fails it with a *VersionError.
func Dial(ctx context.Context, opts Options) (*DB, error) {
	if opts.Dial == nil {
		return nil, errors.New("fdbqueue: kv/remote: Options.Dial is required")
	}
	if opts.RetryLimit == 0 {
		opts.RetryLimit = DefaultRetryLimit
	}
	if opts.ReconnectTimeout <= 0 {
		opts.ReconnectTimeout = DefaultReconnectTimeout
	}
	d := &DB{opts: opts, log: opts.Logger}
	if d.log == nil {
		d.log = slog.Default()
	}
	d.ctx, d.stop = context.WithCancel(context.Background())
	c, err := d.connect(ctx)
	if err != nil {
		d.stop()
		return nil, err
	}
	d.mu.Lock()
	d.conn = c
	d.mu.Unlock()
	return d, nil
}

// connect dials and completes the handshake.
func (d *DB) connect(ctx context.Context) (*conn, error) {
	nc, err := d.opts.Dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("fdbqueue: kv/remote: dialing the server: %w", err)
	}
	deadline := time.Now().Add(handshakeTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	// The context's cancellation ends the handshake too.
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	br := bufio.NewReaderSize(nc, 64<<10)
	caps, err := clientHandshake(nc, br, versionOr(d.opts.version), deadline)
	if !stop() && err == nil {
		err = ctx.Err()
	}
	if err != nil {
		_ = nc.Close()
		return nil, err
	}
	c := &conn{d: d, nc: nc, caps: caps, calls: map[uint64]*call{}, watches: map[uint64]*watch{}}
	c.w = newWriter(nc, c.fail)
	go c.w.loop()
	go c.read(br)
	return c, nil
}

// Close closes the connection and stops reconnecting. What was waiting
// for an answer gets one: reads and their transactions fail with
// connection_failed (1026), a commit in flight with commit_unknown_result
// (1021), watches with client_invalid_operation (2000).
func (d *DB) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	c := d.conn
	d.conn = nil
	d.mu.Unlock()
	d.stop()
	if c != nil {
		c.fail(errClosed)
	}
	d.wg.Wait()
	return nil
}

// Transact implements kv.Database.
func (d *DB) Transact(ctx context.Context, fn func(kv.Transaction) error) error {
	return kv.Transact(ctx, d, fn)
}

// ReadTransact implements kv.Database.
func (d *DB) ReadTransact(ctx context.Context, fn func(kv.ReadTransaction) error) error {
	return kv.ReadTransact(ctx, d, fn)
}

// CreateTransaction implements kv.Database. It sends nothing: the server's
// transaction begins with the first operation. Without a connection (one
// is being made again), the transaction's operations fail with
// connection_failed, and its OnError waits for the new connection.
func (d *DB) CreateTransaction(ctx context.Context) (kv.Transaction, error) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil, kv.Errorf(kv.CodeClientInvalidOperation, "database handle is closed")
	}
	c, cause := d.conn, d.cause
	if c == nil {
		d.kickLocked()
	}
	d.mu.Unlock()
	return newTxn(d, ctx, c, cause), nil
}

// kickLocked starts a reconnect unless one is under way, and returns it;
// nil once the DB is closed. Callers hold d.mu.
func (d *DB) kickLocked() *reconnect {
	if d.rc == nil && !d.closed {
		d.rc = &reconnect{done: make(chan struct{})}
		d.wg.Add(1)
		go d.reconnect(d.rc)
	}
	return d.rc
}

// awaitConn returns the live connection, waiting for the reconnect under
// way (starting one if none is) if there is none. A connection that a
// reconnect just made is returned even if it died since: the transaction
// that uses it fails, and its retry counts.
func (d *DB) awaitConn(ctx context.Context) (*conn, error) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil, errClosed
	}
	if c := d.conn; c != nil {
		d.mu.Unlock()
		return c, nil
	}
	rc := d.kickLocked()
	d.mu.Unlock()
	select {
	case <-rc.done:
		return rc.c, rc.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// reconnect dials until it connects, the DB is closed, the server is of
// another version, or ReconnectTimeout passes.
func (d *DB) reconnect(rc *reconnect) {
	defer d.wg.Done()
	start := time.Now()
	deadline := start.Add(d.opts.ReconnectTimeout)
	backoff := minBackoff
	for tries := 1; ; tries++ {
		ctx, cancel := context.WithDeadline(d.ctx, deadline)
		c, err := d.connect(ctx)
		cancel()
		d.mu.Lock()
		if err == nil && d.closed {
			d.mu.Unlock()
			c.fail(errClosed)
			err = errClosed
			d.mu.Lock()
		}
		if err == nil {
			d.conn, d.rc, d.cause = c, nil, nil
			rc.c = c
			d.mu.Unlock()
			close(rc.done)
			d.log.Info("fdbqueue: kv/remote: reconnected", "after", time.Since(start).Round(time.Millisecond), "tries", tries)
			return
		}
		var ve *VersionError
		wait := backoff/2 + rand.N(backoff/2+1)
		if d.closed || errors.As(err, &ve) || time.Now().Add(wait).After(deadline) {
			d.rc, d.cause = nil, err
			rc.err = err
			closed := d.closed
			d.mu.Unlock()
			close(rc.done)
			if !closed {
				d.log.Warn("fdbqueue: kv/remote: gave up reconnecting", "after", time.Since(start).Round(time.Millisecond), "tries", tries, "err", err)
			}
			return
		}
		d.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-d.ctx.Done():
			t.Stop()
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// lost is called once c failed: the DB starts reconnecting, and c's
// watches are armed again or failed.
func (d *DB) lost(c *conn, cause error, watches map[uint64]*watch) {
	d.mu.Lock()
	if d.conn == c {
		d.conn, d.cause = nil, cause
		d.kickLocked()
	}
	closed := d.closed
	d.mu.Unlock()
	if !closed {
		d.log.Warn("fdbqueue: kv/remote: lost the connection to the server; reconnecting", "err", cause)
	}
	for _, w := range watches {
		w.connLost(c, cause)
	}
}

func (d *DB) isClosed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closed
}

// conn is one connection to the server: a reader goroutine dispatching
// answers, and the writer's goroutine.
type conn struct {
	d    *DB
	nc   net.Conn
	w    *writer
	caps byte
	dead atomic.Bool // set once failed

	mu      sync.Mutex
	cause   error            // why it failed
	calls   map[uint64]*call // waiting for answers; nil once failed
	watches map[uint64]*watch
	nextReq uint64

	nextTxn atomic.Uint64
}

// failure returns why c failed, or nil.
func (c *conn) failure() error {
	if !c.dead.Load() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cause
}

// fail ends c, once: every call waiting gets its error, and the DB
// reconnects.
func (c *conn) fail(cause error) {
	c.mu.Lock()
	if c.cause != nil {
		c.mu.Unlock()
		return
	}
	c.cause = cause
	c.dead.Store(true)
	calls, watches := c.calls, c.watches
	c.calls, c.watches = nil, nil
	c.mu.Unlock()
	c.w.fail(cause)
	_ = c.nc.Close()
	// The watches first: one of a transaction whose commit was in flight
	// fails with 1021, which it learns from its attempt's committing,
	// cleared once the commit's call has its answer.
	c.d.lost(c, cause, watches)
	for _, cl := range calls {
		switch cl.typ {
		case mCommit:
			cl.err = errLostCommit(cause)
		case mCall:
			cl.err = errLostCall(cause)
		default:
			cl.err = errLost(cause)
		}
		cl.ch <- struct{}{}
	}
}

// register gives cl a request id and files it to wait for its answer;
// false once c failed.
func (c *conn) register(cl *call) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		return false
	}
	c.nextReq++
	cl.req = c.nextReq
	c.calls[cl.req] = cl
	return true
}

// read dispatches the server's frames until c fails.
func (c *conn) read(br *bufio.Reader) {
	var fr frameReader
	for {
		f, err := fr.read(br)
		if err == nil {
			err = c.dispatch(f)
		}
		if err != nil {
			if errors.Is(err, errProtocol) || errors.Is(err, errMalformed) {
				c.d.log.Error("fdbqueue: kv/remote: closing the connection: the server broke the protocol", "err", err)
			}
			c.fail(err)
			return
		}
	}
}

func (c *conn) dispatch(f []byte) error {
	d := dec{b: f[1:]}
	switch f[0] {
	case mResp:
		return c.answer(&d)
	case mWatchValue:
		id := d.uvarint()
		v := d.opt()
		if err := d.end(); err != nil {
			return err
		}
		c.mu.Lock()
		w := c.watches[id]
		c.mu.Unlock()
		if w != nil {
			w.setValue(v)
		}
	case mWatchDone:
		id := d.uvarint()
		var err error
		if d.u8() == 1 {
			err = decodeErr(&d)
		}
		if err := d.end(); err != nil {
			return err
		}
		c.mu.Lock()
		w := c.watches[id]
		delete(c.watches, id)
		c.mu.Unlock()
		if w != nil {
			w.serverDone(c, id, err)
		}
	default:
		return fmt.Errorf("%w: a frame of type %d", errProtocol, f[0])
	}
	return nil
}

// answer decodes a response into its call; the last frame of the answer
// wakes the caller.
func (c *conn) answer(d *dec) error {
	req := d.uvarint()
	st := d.u8()
	c.mu.Lock()
	cl := c.calls[req]
	if cl == nil {
		c.mu.Unlock()
		return fmt.Errorf("%w: an answer to no request (%d)", errProtocol, req)
	}
	if st == stErr {
		cl.err = decodeErr(d)
	} else {
		cl.decode(d, st == stOK)
	}
	if err := d.end(); err != nil {
		c.mu.Unlock()
		return err
	}
	if st == stMore {
		c.mu.Unlock()
		return nil
	}
	delete(c.calls, req)
	if cl.typ == mCommit && cl.err == nil {
		// The watches of a committed transaction outlive c: marked here,
		// before c can fail, so that failing it arms them again.
		for _, w := range cl.att.watches {
			w.committed(c)
		}
	}
	c.mu.Unlock()
	cl.ch <- struct{}{}
	return nil
}

// call is a request waiting for its answer.
type call struct {
	typ   byte
	req   uint64
	ch    chan struct{} // receives once the answer is in
	att   *attempt      // a commit's
	err   error
	val   []byte        // mGet, mMetadataVersion, mFirst's value
	key   []byte        // mFirst
	found bool          // mFirst; mOnError: retry
	vals  [][]byte      // mGetMany
	rows  []kv.KeyValue // mRange
	more  bool          // mRange: the page was cut short
	ver   int64         // mReadVersion
}

var callPool = sync.Pool{New: func() any { return &call{ch: make(chan struct{}, 1)} }}

// newCall returns a call of type typ. A call waited for to its answer may
// go back to the pool (freeCall); one given up on may not.
func newCall(typ byte) *call {
	cl := callPool.Get().(*call)
	cl.typ = typ
	return cl
}

func freeCall(cl *call) {
	ch := cl.ch
	*cl = call{ch: ch}
	callPool.Put(cl)
}

// decode reads one frame of an answer; last says whether it is the last.
func (cl *call) decode(d *dec, last bool) {
	switch cl.typ {
	case mGet, mMetadataVersion:
		cl.val = d.opt()
	case mFirst:
		cl.found = d.u8() == 1
		if cl.found {
			cl.key, cl.val = d.bytes(), d.bytes()
		}
	case mReadVersion:
		cl.ver = d.varint()
	case mOnError:
		cl.found = d.u8() == 1
	case mGetMany:
		n := d.count(1)
		for range n {
			cl.vals = append(cl.vals, d.opt())
		}
	case mRange:
		n := d.count(2)
		if cl.rows == nil {
			cl.rows = make([]kv.KeyValue, 0, n)
		}
		for range n {
			cl.rows = append(cl.rows, kv.KeyValue{Key: d.bytes(), Value: d.bytes()})
		}
		if last {
			cl.more = d.u8() == 1
		}
	case mCall:
		cl.val = append(cl.val, d.bytes()...)
	case mCommit:
	default:
		d.fail()
	}
}
