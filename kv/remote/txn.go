// The client's transactions: each attempt is a transaction of the server's
// engine, which its operations reach in order.

package remote

import (
	"bytes"
	"context"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
)

// txn is a transaction of a DB. Like the engines', it is not for
// concurrent use.
type txn struct {
	d       *DB
	ctx     context.Context
	stopCtx func() bool // unregisters abort from ctx
	state   kv.TxnState
	a       *attempt
	cur     atomic.Pointer[attempt] // a, for abort
	snap    snapshot
	// retries and backoff are those of the attempts that lost their
	// connection; the server's engine counts the others.
	retries int
	backoff time.Duration
}

var _ kv.Transaction = (*txn)(nil)

// attempt is one server transaction, on one connection: the client's
// transaction from its creation or a reset (OnError) to the next.
type attempt struct {
	ctx   context.Context // the transaction's
	n     uint64          // the attempts before it
	c     *conn           // nil: none could be had
	cause error           // why c is nil
	id    uint64          // the server transaction, on c
	// used is set once an operation was sent, or would have been had
	// the connection lasted; begun once the server was told of the
	// transaction (its first operation), read by abort.
	used       bool
	begun      atomic.Bool
	committing atomic.Bool // its commit is in flight
	werr       error       // the first write the client refused, reported by Commit
	spans      []*span     // read conflicts of serializable range reads, added at Commit
	watches    []*watch    // made by the attempt, armed by its commit
}

func newTxn(d *DB, ctx context.Context, c *conn, cause error) *txn {
	t := &txn{d: d, ctx: ctx}
	t.snap.t = t
	t.a = newAttempt(ctx, 0, c, cause)
	t.cur.Store(t.a)
	if ctx.Done() != nil {
		t.stopCtx = context.AfterFunc(ctx, t.abort)
	}
	return t
}

func newAttempt(ctx context.Context, n uint64, c *conn, cause error) *attempt {
	a := &attempt{ctx: ctx, n: n, c: c, cause: cause}
	if c != nil {
		a.id = c.nextTxn.Add(1)
	}
	return a
}

// lost returns the error of the attempt's operations once its connection
// is gone (or it never had one).
func (a *attempt) lost() error {
	if a.c == nil {
		return errLost(a.cause)
	}
	if err := a.c.failure(); err != nil {
		return errLost(err)
	}
	return nil
}

// start begins a frame of type typ for the attempt, after its mBegin if the
// server was not told of it yet; false if the connection is gone (the
// operation is then dropped: the attempt's next wait fails). The frame
// holds the transaction's id; the caller appends the rest and sends it.
func (a *attempt) start(typ byte) (enc, bool) {
	a.used = true
	if a.c == nil {
		return enc{}, false
	}
	first := typ
	if !a.begun.Load() {
		first = mBegin
	}
	e, err := a.c.w.start(first)
	if err != nil {
		return enc{}, false
	}
	if first == mBegin {
		a.begun.Store(true)
		e.uvarint(a.id)
		if a.ctx.Err() != nil {
			// The context ended as the transaction began: abort
			// (txn.abort) may have found it not begun yet.
			a.c.w.next(&e, mAbort)
			e.uvarint(a.id)
		}
		a.c.w.next(&e, typ)
	}
	e.uvarint(a.id)
	return e, true
}

// request files cl and begins its frame (start), with its request id;
// false if it could not be sent, cl then having its error.
func (a *attempt) request(cl *call) (enc, bool) {
	a.used = true
	if a.c == nil || !a.c.register(cl) {
		cl.err = a.lost()
		cl.ch <- struct{}{}
		return enc{}, false
	}
	e, ok := a.start(cl.typ)
	if !ok {
		return enc{}, false // failing the connection answers cl
	}
	e.uvarint(cl.req)
	return e, true
}

// abort tells the server that the transaction's context is done: its
// engine's transaction is cancelled, which ends an operation blocked there.
func (t *txn) abort() {
	a := t.cur.Load()
	if !a.begun.Load() {
		return
	}
	if e, err := a.c.w.start(mAbort); err == nil {
		e.uvarint(a.id)
		a.c.w.send(&e)
	}
}

func (t *txn) Context() context.Context     { return t.ctx }
func (t *txn) Snapshot() kv.ReadTransaction { return &t.snap }

// check returns the error that stops an operation before it is sent, as
// the engines check it.
func (t *txn) check() error {
	return t.state.Err(t.ctx)
}

// live returns the error of a future of attempt n once that attempt is
// over: the transaction ended, its context is done, or OnError reset it.
func (t *txn) live(n uint64) error {
	if err := t.check(); err != nil {
		return err
	}
	if n != t.a.n {
		return kv.Errorf(kv.CodeTransactionCancelled, "the future's attempt of the transaction was reset (OnError)")
	}
	return nil
}

// mapErr maps a server's error: a cancellation that the client's context
// caused is the client's context's, as the engines report it.
func (t *txn) mapErr(err error) error {
	if err != nil && kv.Code(err) == kv.CodeTransactionCancelled {
		if cerr := t.ctx.Err(); cerr != nil {
			return kv.Join(kv.ErrTransactionCancelled, cerr)
		}
	}
	return err
}

// wait waits for cl's answer, or the end of the context (answered false:
// cl must not go back to the pool, its answer may still come).
func (t *txn) wait(cl *call) (bool, error) {
	select {
	case <-cl.ch:
		return true, t.mapErr(cl.err)
	default:
	}
	select {
	case <-cl.ch:
		return true, t.mapErr(cl.err)
	case <-t.ctx.Done():
		return false, kv.Join(kv.ErrTransactionCancelled, t.ctx.Err())
	}
}

// errKeyTooLong refuses a key too long to send.
func errKeyTooLong(k []byte) error {
	return kv.Errorf(kv.CodeKeyTooLarge, "key of %d bytes (the limit is %d; kv/remote sends none over %d)", len(k), kv.MaxKeySize, maxWireKey)
}

// flags of a read through the snapshot view or not.
func snapFlag(snapshot bool) byte {
	if snapshot {
		return fSnapshot
	}
	return 0
}

func (t *txn) Get(key []byte) ([]byte, error) { return t.get(key, false) }

func (t *txn) get(key []byte, snapshot bool) ([]byte, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	if len(key) > maxWireKey {
		return nil, errKeyTooLong(key)
	}
	cl := newCall(mGet)
	t.sendGet(cl, key, snapshot)
	ok, err := t.wait(cl)
	if !ok {
		return nil, err
	}
	v := cl.val
	freeCall(cl)
	return v, err
}

func (t *txn) sendGet(cl *call, key []byte, snapshot bool) {
	a := t.a
	if e, ok := a.request(cl); ok {
		e.u8(snapFlag(snapshot))
		e.bytes(key)
		a.c.w.send(&e)
	}
}

func (t *txn) GetReadVersion() (int64, error) {
	if err := t.check(); err != nil {
		return 0, err
	}
	cl := newCall(mReadVersion)
	a := t.a
	if e, ok := a.request(cl); ok {
		a.c.w.send(&e)
	}
	ok, err := t.wait(cl)
	if !ok {
		return 0, err
	}
	v := cl.ver
	freeCall(cl)
	return v, err
}

// GetMany is kv.GetMany: the server's engine reads the keys as it does
// (kv.GetMany there), in one round trip; keys of more than chunkBytes go
// in several requests, all sent before the first answer is waited for.
func (t *txn) GetMany(keys [][]byte) ([][]byte, error) { return t.getMany(keys, false) }

func (t *txn) getMany(keys [][]byte, snapshot bool) ([][]byte, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	for _, k := range keys {
		if len(k) > maxWireKey {
			return nil, errKeyTooLong(k)
		}
	}
	var calls []*call
	inChunks(len(keys), func(i int) int { return len(keys[i]) + 3 }, func(lo, hi int, _ bool) bool {
		cl := newCall(mGetMany)
		a := t.a
		if e, ok := a.request(cl); ok {
			e.u8(snapFlag(snapshot))
			e.uvarint(uint64(hi - lo))
			for _, k := range keys[lo:hi] {
				e.bytes(k)
			}
			a.c.w.send(&e)
		}
		calls = append(calls, cl)
		return true
	})
	vals := make([][]byte, 0, len(keys))
	var first error
	for _, cl := range calls {
		ok, err := t.wait(cl)
		if !ok {
			return nil, err
		}
		if err != nil && first == nil {
			first = err
		}
		vals = append(vals, cl.vals...)
		freeCall(cl)
	}
	if first != nil {
		return nil, first
	}
	return vals, nil
}

// First is kv.First, which the server's engine answers as it does.
func (t *txn) First(r kv.Range, reverse bool) (kv.KeyValue, bool, error) {
	return t.first(r, reverse, false)
}

func (t *txn) first(r kv.Range, reverse, snapshot bool) (kv.KeyValue, bool, error) {
	if err := t.check(); err != nil {
		return kv.KeyValue{}, false, err
	}
	if err := checkWireRange(r); err != nil {
		return kv.KeyValue{}, false, err
	}
	cl := newCall(mFirst)
	a := t.a
	if e, ok := a.request(cl); ok {
		f := snapFlag(snapshot)
		if reverse {
			f |= fReverse
		}
		e.u8(f)
		e.bytes(r.Begin)
		e.bytes(r.End)
		a.c.w.send(&e)
	}
	ok, err := t.wait(cl)
	if !ok {
		return kv.KeyValue{}, false, err
	}
	e, found := kv.KeyValue{Key: cl.key, Value: cl.val}, cl.found
	freeCall(cl)
	if err != nil || !found {
		return kv.KeyValue{}, false, err
	}
	return e, true, nil
}

// checkWireRange refuses a range whose bounds are too long to send.
func checkWireRange(r kv.Range) error {
	if len(r.Begin) > maxWireKey {
		return errKeyTooLong(r.Begin)
	}
	if len(r.End) > maxWireKey {
		return errKeyTooLong(r.End)
	}
	return nil
}

// MetadataVersion is kv.MetadataVersion, the server engine's.
func (t *txn) MetadataVersion() ([]byte, error) { return t.metadataVersion(false) }

func (t *txn) metadataVersion(snapshot bool) ([]byte, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	a := t.a
	if !a.metadataVersion() {
		return nil, kv.ErrNoMetadataVersion
	}
	cl := newCall(mMetadataVersion)
	if e, ok := a.request(cl); ok {
		e.u8(snapFlag(snapshot))
		a.c.w.send(&e)
	}
	ok, err := t.wait(cl)
	if !ok {
		return nil, err
	}
	v := cl.val
	freeCall(cl)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// The writes are sent, not waited for: the engine's errors in them come
// with the commit, as they do from the engine itself.

// writable reports whether a write may be sent: not after the transaction
// ended, as the engines ignore such writes.
func (t *txn) writable() bool { return t.state == kv.TxnActive }

// refuse records the first write the client refused to send.
func (a *attempt) refuse(err error) {
	if a.werr == nil {
		a.werr = err
	}
}

// wireValue is what is sent of a value: one over kv.MaxValueSize is sent
// cut to one byte over it, which the engine refuses with value_too_large
// (2103) as it would the whole.
func wireValue(v []byte) []byte {
	if len(v) > kv.MaxValueSize+1 {
		return v[:kv.MaxValueSize+1]
	}
	return v
}

// writeKey sends a write of typ to key, with a value unless val is nil.
func (t *txn) writeKey(typ byte, key, val []byte) {
	if !t.writable() {
		return
	}
	a := t.a
	if len(key) > maxWireKey {
		a.refuse(errKeyTooLong(key))
		return
	}
	if e, ok := a.start(typ); ok {
		e.bytes(key)
		if val != nil {
			e.bytes(wireValue(val))
		}
		a.c.w.send(&e)
	}
}

func (t *txn) Set(key, value []byte) {
	if value == nil {
		value = []byte{}
	}
	t.writeKey(mSet, key, value)
}

func (t *txn) Clear(key []byte) { t.writeKey(mClear, key, nil) }

func (t *txn) CompareAndClear(key, value []byte) {
	if value == nil {
		value = []byte{}
	}
	t.writeKey(mCompareAndClear, key, value)
}

func (t *txn) BitAnd(key, param []byte) {
	if param == nil {
		param = []byte{}
	}
	t.writeKey(mBitAnd, key, param)
}

func (t *txn) Add(key []byte, delta int64) {
	var p [8]byte
	for i := range p {
		p[i] = byte(uint64(delta) >> (8 * i))
	}
	t.writeKey(mAdd, key, p[:])
}

func (t *txn) ClearRange(r kv.Range) {
	if !t.writable() {
		return
	}
	a := t.a
	if err := checkWireRange(r); err != nil {
		a.refuse(err)
		return
	}
	t.sendRange(mClearRange, r)
}

// sendRange sends a write of typ over r.
func (t *txn) sendRange(typ byte, r kv.Range) {
	a := t.a
	if e, ok := a.start(typ); ok {
		e.bytes(r.Begin)
		e.bytes(r.End)
		a.c.w.send(&e)
	}
}

// writeConflictRanges reports whether the server's engine takes write
// conflict ranges, as far as the attempt knows: without a connection, no
// (the caller writes keys instead).
func (a *attempt) writeConflictRanges() bool {
	return a.c != nil && a.c.caps&capWriteConflictRanges != 0
}

// metadataVersion reports whether the server's engine has a metadata
// version, as far as the attempt knows (without a connection, it says yes:
// the operation fails anyway).
func (a *attempt) metadataVersion() bool {
	return a.c == nil || a.c.caps&capMetadataVersion != 0
}

// BumpMetadataVersion is kv.BumpMetadataVersion. The server's engine
// bumps it if it has a metadata version; if not, MetadataVersion says so
// (kv.ErrNoMetadataVersion), and the bump does nothing.
func (t *txn) BumpMetadataVersion() {
	if !t.writable() {
		return
	}
	a := t.a
	if !a.metadataVersion() {
		return
	}
	if e, ok := a.start(mBump); ok {
		a.c.w.send(&e)
	}
}

// The conflict ranges are sent as writes; the engine's errors in them
// (transaction_too_old, say) come with the commit.

func (t *txn) AddReadConflictKey(key []byte) error {
	if err := t.check(); err != nil {
		return err
	}
	return t.conflictKey(mReadConflictKey, key)
}

func (t *txn) conflictKey(typ byte, key []byte) error {
	if len(key) > maxWireKey {
		return errKeyTooLong(key)
	}
	t.writeKey(typ, key, nil)
	return nil
}

func (t *txn) AddReadConflictRange(r kv.Range) error {
	if err := t.check(); err != nil {
		return err
	}
	return t.conflictRange(mReadConflictRange, r)
}

// conflictRange sends a conflict range of type typ, unless it is empty.
func (t *txn) conflictRange(typ byte, r kv.Range) error {
	if c := bytes.Compare(r.Begin, r.End); c >= 0 {
		if c > 0 {
			return kv.Errorf(kv.CodeInvertedRange, "range end precedes its begin")
		}
		return nil
	}
	if err := checkWireRange(r); err != nil {
		return err
	}
	t.sendRange(typ, r)
	return nil
}

func (t *txn) AddWriteConflictKey(key []byte) error {
	if t.state != kv.TxnActive {
		return t.check()
	}
	return t.conflictKey(mWriteConflictKey, key)
}

// AddWriteConflictRange implements kv.AddWriteConflictRange, where the
// server's engine takes such ranges (WriteConflictRanges).
func (t *txn) AddWriteConflictRange(r kv.Range) error {
	if err := t.check(); err != nil {
		return err
	}
	if !t.a.writeConflictRanges() {
		return kv.Errorf(kv.CodeClientInvalidOperation, "the server's engine takes no write conflict range")
	}
	return t.conflictRange(mWriteConflictRange, r)
}

// WriteConflictRanges implements kv.WriteConflictRangesOf: taken where
// the server's engine takes them, as far as the connection knows; else
// unknown (the serving process's own transactions may).
func (t *txn) WriteConflictRanges() kv.WriteConflictRangeSupport {
	if t.a.writeConflictRanges() {
		return kv.WriteConflictRangesTaken
	}
	return kv.WriteConflictRangesUnknown
}

func (s *snapshot) WriteConflictRanges() kv.WriteConflictRangeSupport {
	return s.t.WriteConflictRanges()
}

// Commit sends the read conflicts of the attempt's serializable range
// reads, then the commit, and waits for its answer: one round trip. It
// waits for the answer whatever the context does (which cancels the
// server's transaction), or for the connection to fail: then the commit
// may have been applied, and fails with commit_unknown_result (1021).
func (t *txn) Commit() error {
	if err := t.check(); err != nil {
		return err
	}
	a := t.a
	if a.werr != nil {
		return a.werr
	}
	if !a.used {
		// Nothing to commit, as an engine commits a transaction that
		// did nothing.
		t.ended(kv.TxnCommitted)
		return nil
	}
	if err := a.lost(); err != nil {
		return err // never sent: certainly not applied
	}
	for _, sp := range a.spans {
		if bytes.Compare(sp.begin, sp.end) < 0 {
			t.sendRange(mReadConflictRange, kv.Range{Begin: sp.begin, End: sp.end})
		}
	}
	cl := newCall(mCommit)
	cl.att = a
	a.committing.Store(true)
	if e, ok := a.request(cl); ok {
		a.c.w.send(&e)
	}
	<-cl.ch
	a.committing.Store(false)
	err := t.mapErr(cl.err)
	freeCall(cl)
	if err == nil {
		t.ended(kv.TxnCommitted)
	}
	return err
}

// ended ends the transaction: the server forgets a committed one by
// itself.
func (t *txn) ended(state kv.TxnState) {
	t.state = state
	if t.stopCtx != nil {
		t.stopCtx()
	}
}

// Cancel implements kv.Transaction: the server cancels its transaction,
// which fails the watches it made that its commit did not arm.
func (t *txn) Cancel() {
	if t.state != kv.TxnActive {
		return
	}
	t.ended(kv.TxnCancelled)
	t.forget(t.a)
}

// forget has the server cancel and forget the attempt's transaction.
func (t *txn) forget(a *attempt) {
	if !a.begun.Load() || a.c == nil {
		return
	}
	if e, err := a.c.w.start(mCancel); err == nil {
		e.uvarint(a.id)
		a.c.w.send(&e)
	}
}

// OnError implements kv.Transaction. While the attempt's connection lasts,
// the server's engine decides (its OnError: its retry limit, its backoff)
// and resets its transaction. An attempt that lost its connection (or
// committed) is retried here: within Options.RetryLimit, after a backoff,
// on the DB's connection, waiting for the reconnect under way if there is
// none, in a new server transaction.
func (t *txn) OnError(err error) error {
	if t.state == kv.TxnCancelled || !kv.IsRetryable(err) {
		return err
	}
	a := t.a
	if t.state == kv.TxnActive && a.lost() == nil {
		cl := newCall(mOnError)
		if e, ok := a.request(cl); ok {
			encodeErr(&e, err)
			a.c.w.send(&e)
		}
		<-cl.ch
		retry, rerr := cl.found, cl.err
		freeCall(cl)
		if rerr == nil {
			if !retry {
				if cerr := t.ctx.Err(); cerr != nil {
					return kv.Join(err, cerr)
				}
				return err
			}
			t.reset(a.c, false)
			return nil
		}
		// The connection failed meanwhile: retried here.
	}
	if lim := t.d.opts.RetryLimit; lim >= 0 && t.retries >= lim {
		return err
	}
	t.retries++
	if t.backoff == 0 {
		t.backoff = minBackoff
	} else {
		t.backoff = min(2*t.backoff, maxBackoff)
	}
	timer := time.NewTimer(t.backoff/2 + rand.N(t.backoff/2+1))
	select {
	case <-timer.C:
	case <-t.ctx.Done():
		timer.Stop()
		return kv.Join(err, t.ctx.Err())
	}
	c, cerr := t.d.awaitConn(t.ctx)
	if cerr != nil {
		if cerr == t.ctx.Err() {
			return kv.Join(err, cerr)
		}
		return kv.Join(err, errLost(cerr))
	}
	if t.state == kv.TxnActive {
		t.forget(a)
	}
	t.reset(c, true)
	return nil
}

// reset starts the next attempt: on the same server transaction (reset
// by its engine's OnError), or on a new one on c.
func (t *txn) reset(c *conn, fresh bool) {
	old := t.a
	if fresh {
		t.a = newAttempt(t.ctx, old.n+1, c, nil)
	} else {
		t.a = &attempt{ctx: t.ctx, n: old.n + 1, c: c, id: old.id}
		t.a.begun.Store(true)
	}
	t.cur.Store(t.a)
	t.state = kv.TxnActive
}

// snapshot is the transaction's snapshot view.
type snapshot struct{ t *txn }

func (s *snapshot) Get(key []byte) ([]byte, error)          { return s.t.get(key, true) }
func (s *snapshot) GetMany(keys [][]byte) ([][]byte, error) { return s.t.getMany(keys, true) }

func (s *snapshot) GetRange(r kv.Range, opts kv.RangeOptions) kv.Iterator {
	return s.t.getRange(r, opts, true)
}

func (s *snapshot) GetAsync(key []byte) kv.FutureValue { return s.t.getAsync(key, true) }

func (s *snapshot) GetRangeAsync(r kv.Range, opts kv.RangeOptions) kv.FutureRange {
	return s.t.getRangeAsync(r, opts, true)
}

func (s *snapshot) First(r kv.Range, reverse bool) (kv.KeyValue, bool, error) {
	return s.t.first(r, reverse, true)
}

func (s *snapshot) MetadataVersion() ([]byte, error) { return s.t.metadataVersion(true) }
func (s *snapshot) GetReadVersion() (int64, error)   { return s.t.GetReadVersion() }
func (s *snapshot) Snapshot() kv.ReadTransaction     { return s }
func (s *snapshot) Context() context.Context         { return s.t.ctx }
