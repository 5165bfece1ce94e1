// The server: listeners, connections, and the reading of their frames.

package remote

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
)

// ServerOptions configure a Server.
type ServerOptions struct {
	// Logger receives the connections closed for breaking the protocol;
	// nil means slog.Default().
	Logger *slog.Logger
	// Call, if not nil, answers the clients' calls (DB.Call): payload is
	// the caller's, and what it returns goes back, its error as errors
	// cross the wire. ctx ends when the caller's context does, or the
	// connection or the server closes: a call may still be running then,
	// and the server waits for it to return before Close returns.
	Call func(ctx context.Context, payload []byte) ([]byte, error)

	version string // the handshake's fdbqueue version; "": moduleVersion
}

// Server serves a kv.Database's transactions to clients (DBs) on
// listeners. Each client transaction is a transaction of the database,
// its operations applied there in order.
type Server struct {
	db      kv.Database
	call    func(ctx context.Context, payload []byte) ([]byte, error)
	log     *slog.Logger
	caps    byte
	version string

	mu        sync.Mutex
	closed    bool
	listeners map[net.Listener]struct{}
	conns     map[*sconn]struct{}
	wg        sync.WaitGroup // every goroutine of every connection, and the workers

	work chan *stxn    // to an idle worker
	quit chan struct{} // closed by Close: the idle workers exit
}

// workerIdle is how long a worker waits for a transaction to drain before
// it exits.
const workerIdle = 10 * time.Second

// schedule has a worker drain x: an idle one if there is one, whose stack
// grew already in the engine's calls (a goroutine of its own for each
// drain spent as much time growing its stack as applying a small
// transaction's operations), else a new one.
func (s *Server) schedule(x *stxn) {
	select {
	case s.work <- x:
	default:
		s.wg.Add(1)
		go s.worker(x)
	}
}

func (s *Server) worker(x *stxn) {
	defer s.wg.Done()
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		x.drain()
		idle.Reset(workerIdle)
		select {
		case x = <-s.work:
		case <-idle.C:
			return
		case <-s.quit:
			return
		}
	}
}

// NewServer returns a server of db's transactions. db stays the caller's:
// close the Server before it.
func NewServer(db kv.Database, opts ServerOptions) *Server {
	s := &Server{db: db, call: opts.Call, log: opts.Logger, version: versionOr(opts.version),
		listeners: map[net.Listener]struct{}{}, conns: map[*sconn]struct{}{},
		work: make(chan *stxn), quit: make(chan struct{})}
	if s.log == nil {
		s.log = slog.Default()
	}
	if tr, err := db.CreateTransaction(context.Background()); err == nil {
		if _, ok := tr.(interface{ MetadataVersion() ([]byte, error) }); ok {
			s.caps |= capMetadataVersion
		}
		if kv.CanAddWriteConflictRange(tr) {
			s.caps |= capWriteConflictRanges
		}
		tr.Cancel()
	}
	if s.call != nil {
		s.caps |= capCalls
	}
	return s
}

// pauseAccept is how long Serve waits after an Accept that failed for a
// while (too many open files, say) before it accepts again.
const pauseAccept = 50 * time.Millisecond

// acceptPaused reports whether Accept failed for a while only: a timeout,
// or the process or the system out of descriptors or memory. EMFILE is no
// timeout (net.Error's Timeout is false for it): ending Serve on it closed
// the listener (and removed kv/shared's socket) for good, though its
// process went on holding the database.
func acceptPaused(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() ||
		errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM) ||
		errors.Is(err, syscall.ECONNABORTED)
}

// Serve accepts connections on l and serves them, until Close (it then
// returns nil) or an error of l. It closes l when it returns.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = l.Close()
		return nil
	}
	s.listeners[l] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, l)
		s.mu.Unlock()
		_ = l.Close()
	}()
	for {
		nc, err := l.Accept()
		if err != nil {
			if s.isClosed() {
				return nil
			}
			if acceptPaused(err) {
				time.Sleep(pauseAccept)
				continue
			}
			return err
		}
		c := s.add(nc)
		if c == nil {
			return nil
		}
		go func() {
			defer s.wg.Done()
			c.serve()
		}()
	}
}

// ServeConn serves one connection (one end of a net.Pipe, say) until it
// ends or the server is closed, and returns why it ended: nil if the peer
// hung up or the server was closed.
func (s *Server) ServeConn(nc net.Conn) error {
	c := s.add(nc)
	if c == nil {
		return nil
	}
	defer s.wg.Done()
	return c.serve()
}

// add files a new connection, counting its serving goroutine in s.wg; nil
// once the server is closed (nc is then closed).
func (s *Server) add(nc net.Conn) *sconn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = nc.Close()
		return nil
	}
	c := &sconn{s: s, nc: nc, done: make(chan struct{}), txns: map[uint64]*stxn{}, watches: map[uint64]*swatch{}, calls: map[uint64]context.CancelFunc{}}
	c.w = newWriter(nc, c.close)
	c.room.L = &c.mu
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	return c
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Close stops the listeners and drops every connection: their
// transactions are cancelled (a commit the database already has completes
// or not; its client is told commit_unknown_result), and their watches.
// It returns once nothing of the server's runs any more.
func (s *Server) Close() error {
	s.mu.Lock()
	if !s.closed {
		close(s.quit)
	}
	s.closed = true
	var ls []net.Listener
	for l := range s.listeners {
		ls = append(ls, l)
	}
	var cs []*sconn
	for c := range s.conns {
		cs = append(cs, c)
	}
	s.mu.Unlock()
	for _, l := range ls {
		_ = l.Close()
	}
	for _, c := range cs {
		c.close(errServerClosed)
	}
	s.wg.Wait()
	return nil
}

// maxTxns bounds the transactions a connection has open at once: a client
// that opens more (and never ends them) is cut off.
const maxTxns = 1 << 16

// maxInflight is how many bytes of a connection's frames may wait for its
// transactions before the connection is read further.
const maxInflight = 16 << 20

// sconn is one client's connection: this goroutine reads its frames and
// hands each transaction's to the transaction (stxn), which applies them
// in order on a goroutine of its own; the writer sends the answers.
type sconn struct {
	s    *Server
	nc   net.Conn
	w    *writer
	done chan struct{} // closed once the connection ends
	wg   sync.WaitGroup

	mu       sync.Mutex
	cause    error
	txns     map[uint64]*stxn
	watches  map[uint64]*swatch
	calls    map[uint64]context.CancelFunc // the calls running, by request
	inflight int                           // bytes of frames handed to transactions, not yet applied
	room     sync.Cond                     // inflight went down, or the connection ended
}

// serve runs the connection to its end, and returns why it ended: nil if
// the peer hung up or the server was closed.
func (c *sconn) serve() error {
	br := bufio.NewReaderSize(c.nc, 64<<10)
	err := serverHandshake(c.nc, br, c.s.version, c.s.caps)
	if err == nil {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.w.loop()
		}()
		err = c.read(br)
	}
	select {
	case <-c.done:
		// Closed from this side first (Close, a failed write): the
		// read's error follows from that.
		c.mu.Lock()
		err = c.cause
		c.mu.Unlock()
		if err == errServerClosed {
			err = nil
		}
	default:
		switch {
		case errors.Is(err, errProtocol) || errors.Is(err, errMalformed):
			c.s.log.Error("fdbqueue: kv/remote: closing a connection that broke the protocol", "remote", c.nc.RemoteAddr(), "err", err)
		case errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed):
			err = nil
		default:
			c.s.log.Warn("fdbqueue: kv/remote: closing a connection", "remote", c.nc.RemoteAddr(), "err", err)
		}
		c.close(err)
	}
	c.wg.Wait()
	c.s.mu.Lock()
	delete(c.s.conns, c)
	c.s.mu.Unlock()
	return err
}

// close ends the connection, once: its transactions are cancelled as soon
// as what they apply returns, and its watches. Nothing is sent from then
// on: the client must not take the watches cancelled here, or those of its
// transactions cancelled here, for its own.
func (c *sconn) close(cause error) {
	if cause == nil {
		cause = io.EOF
	}
	c.w.fail(cause)
	c.mu.Lock()
	select {
	case <-c.done:
		c.mu.Unlock()
		return
	default:
	}
	c.cause = cause
	close(c.done)
	txns, calls := c.txns, c.calls
	c.txns, c.calls = nil, nil
	c.room.Broadcast()
	c.mu.Unlock()
	_ = c.nc.Close()
	for _, x := range txns {
		x.end()
	}
	for _, cancel := range calls {
		cancel()
	}
}

// read reads frames until the connection ends.
func (c *sconn) read(br *bufio.Reader) error {
	var fr frameReader
	for {
		f, err := fr.read(br)
		if err != nil {
			return err
		}
		if err := c.handle(f); err != nil {
			return err
		}
	}
}

// handle decodes a frame and hands it to its transaction.
func (c *sconn) handle(f []byte) error {
	typ := f[0]
	d := dec{b: f[1:]}
	id := d.uvarint()
	switch typ {
	case mBegin:
		if err := d.end(); err != nil {
			return err
		}
		return c.begin(id)
	case mCall:
		payload := d.bytes()
		if err := d.end(); err != nil {
			return fmt.Errorf("%w: a malformed call", errProtocol)
		}
		return c.startCall(id, payload)
	case mCallAbort:
		if err := d.end(); err != nil {
			return fmt.Errorf("%w: a malformed call abort", errProtocol)
		}
		c.abortCall(id)
		return nil
	case mAbort:
		if err := d.end(); err != nil {
			return err
		}
		if x := c.txn(id); x != nil {
			x.cancel()
		}
		return nil
	}
	o := op{typ: typ, size: len(f)}
	if needsReply(typ) {
		o.req = d.uvarint()
	}
	switch typ {
	case mGet, mMetadataVersion:
		o.flags = d.u8()
		if typ == mGet {
			o.key = d.key()
		}
	case mGetMany:
		o.flags = d.u8()
		n := d.count(1)
		o.keys = make([][]byte, n)
		for i := range o.keys {
			o.keys[i] = d.key()
		}
	case mRange:
		o.flags = d.u8()
		o.limit = d.varint()
		o.mode = kv.StreamingMode(d.u8())
		o.key, o.val = d.key(), d.key()
		if o.mode > kv.StreamingModeSmall {
			d.fail()
		}
	case mFirst:
		o.flags = d.u8()
		o.key, o.val = d.key(), d.key()
	case mReadVersion, mCommit, mBump, mCancel:
	case mSet, mCompareAndClear, mBitAnd:
		o.key = d.key()
		o.val = d.bytes()
		if len(o.val) > kv.MaxValueSize+1 {
			d.fail()
		}
	case mClear, mReadConflictKey, mWriteConflictKey:
		o.key = d.key()
	case mClearRange, mReadConflictRange, mWriteConflictRange:
		o.key, o.val = d.key(), d.key()
	case mAdd:
		o.key = d.key()
		o.val = d.bytes()
		if len(o.val) != 8 {
			d.fail()
		}
	case mWatch:
		o.watch = d.uvarint()
		o.key = d.key()
		switch d.u8() {
		case 0:
		case 1:
			o.expect, o.hasExpect = d.opt(), true
		default:
			d.fail()
		}
	case mWatchCancel:
		o.watch = d.uvarint()
	case mOnError:
		o.err = decodeErr(&d)
	default:
		return fmt.Errorf("%w: a frame of type %d", errProtocol, typ)
	}
	if o.flags&^(fSnapshot|fReverse|fWhole) != 0 {
		d.fail()
	}
	if err := d.end(); err != nil {
		return fmt.Errorf("%w: a malformed frame of type %d", errProtocol, typ)
	}
	x := c.txn(id)
	if x == nil {
		c.unknown(&o)
		return nil
	}
	if !c.reserve(o.size) {
		return nil // the connection ended
	}
	x.enqueue(o)
	return nil
}

func needsReply(typ byte) bool {
	switch typ {
	case mGet, mGetMany, mRange, mFirst, mReadVersion, mMetadataVersion, mCommit, mOnError:
		return true
	}
	return false
}

func (c *sconn) txn(id uint64) *stxn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.txns[id]
}

// unknown answers an operation of a transaction the server does not have:
// one it forgot (committed, or cancelled), whose client's own checks
// should have kept it from sending more. A watch's cancel may come after
// its transaction committed: it cancels the watch.
func (c *sconn) unknown(o *op) {
	switch {
	case o.typ == mWatchCancel:
		c.cancelWatch(o.watch)
	case needsReply(o.typ):
		c.respondErr(o.req, kv.Errorf(kv.CodeClientInvalidOperation, "the server has no such transaction (it committed, or was cancelled)"))
	}
}

// begin makes a transaction of the database for the client's id.
func (c *sconn) begin(id uint64) error {
	ctx, cancel := context.WithCancel(context.Background())
	x := &stxn{c: c, id: id, ctx: ctx, cancelCtx: cancel}
	x.tr, x.err = c.s.db.CreateTransaction(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.txns == nil {
		cancel()
		if x.tr != nil {
			x.tr.Cancel()
		}
		return nil
	}
	if c.txns[id] != nil || len(c.txns) >= maxTxns {
		cancel()
		if x.tr != nil {
			x.tr.Cancel()
		}
		if len(c.txns) >= maxTxns {
			return fmt.Errorf("%w: more than %d transactions open at once", errProtocol, maxTxns)
		}
		return fmt.Errorf("%w: transaction %d begun twice", errProtocol, id)
	}
	c.txns[id] = x
	return nil
}

// forget drops a transaction the client is done with.
func (c *sconn) forget(x *stxn) {
	c.mu.Lock()
	if c.txns != nil && c.txns[x.id] == x {
		delete(c.txns, x.id)
	}
	c.mu.Unlock()
}

// reserve counts n bytes of a frame handed to a transaction, waiting while
// too many wait to be applied; false once the connection ended.
func (c *sconn) reserve(n int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.inflight > maxInflight && c.txns != nil {
		c.room.Wait()
	}
	if c.txns == nil {
		return false
	}
	c.inflight += n
	return true
}

func (c *sconn) release(n int) {
	c.mu.Lock()
	c.inflight -= n
	c.room.Signal()
	c.mu.Unlock()
}
