package embedded

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/fdbqueue/fdbqueue/internal/btree"

	"github.com/fdbqueue/fdbqueue/kv"
)

// txn is a transaction on a store. It is not safe for concurrent use, as
// FoundationDB transactions are not meant to be shared between goroutines
// without care.
type txn struct {
	s        *store
	ctx      context.Context
	state    kv.TxnState
	start    time.Time // creation, for TransactionTimeout
	readOnly bool      // from a ReadOnly handle: a commit that writes fails

	hasRV   bool
	rv      uint64
	grvTime time.Time
	ticket  uint64 // in s.active, while hasRV
	pinned  bool   // a checkpoint's pinned reader (pinReadVersion)
	// mdv is the metadata version at rv (see acquireReadVersion), shared
	// with the store and every reader (never modified), and bumped is set
	// once the attempt bumped it (metadata.go).
	mdv    []byte
	bumped bool

	// writes holds the writes in key order, for reads of them: nil
	// until one needs it. pending holds the writes made since, in the
	// order made (writes.go); recent, the pending writes of the last
	// keys atomic operations went to, for the next ones.
	writes  *btree.BTreeG[*write]
	pending []*write
	recent  [recentAtomics]*write
	nwrites int      // writes made, pending or not
	clears  clearSet // the union of the ClearRange calls
	watches []*watch // made by this attempt, settled at its end
	wconf   []span   // AddWriteConflict*
	reads   []span   // serializable read-conflict spans
	size    int      // bytes of mutations and conflict ranges
	err     error    // deferred error, reported by Commit

	retries int
	backoff time.Duration
	queued  func() // OnCommitQueued
	snap    snapshot
	creq    commitReq // the commit on its way through the commitGroups
	cver    uint64    // the version its commit of writes took, once committed (CommittedAlone)

	// attempt counts the resets (OnError): a future remembers the attempt
	// that issued it. vfutures and rfutures are what is left of the
	// blocks futures are carved from; issued counts the futures so far.
	attempt  uint64
	vfutures []valueFuture
	rfutures []rangeFuture
	issued   int

	// wblock and bblock are what is left of newWrite's blocks; bblocks
	// is the bytes of the byte blocks so far. bufs holds the blocks, and
	// the slices of writes, once the transaction writes (txnBufs).
	wblock  []write
	bblock  []byte
	bblocks int
	bufs    *txnBufs
	// leaked says a read returned bytes of the transaction's own writes:
	// the caller may keep them, so the byte blocks are not reused.
	leaked bool
	// oblock is what is left of the block the first atomic operation
	// of a write is carved from (atomic).
	oblock []atomicOp

	// A probe for store lookups, kept here so that lookups do not
	// allocate (the writes' probe is the buffers': txnBufs.wprobe).
	eprobe []byte // a record of the key looked up
	// spareBatch is the batch of the last finished range iterator, for
	// the next one.
	spareBatch []kv.KeyValue
}

var (
	_ kv.Transaction  = (*txn)(nil)
	_ kv.CommitQueuer = (*txn)(nil)
)

func newTxn(s *store, ctx context.Context) *txn {
	t := &txn{s: s, ctx: ctx, start: s.cfg.Clock()}
	t.snap.t = t
	return t
}

// ended returns the error of any operation once the transaction committed
// or was cancelled, or its context is done.
func (t *txn) ended() error {
	return t.state.Err(t.ctx)
}

// check returns the error that stops any operation now, and acquires the read
// version on the first read.
func (t *txn) check() error {
	_, err := t.checkNow()
	return err
}

// checkNow is check, returning the clock reading it checked against: the
// commit's, which it would otherwise read again.
func (t *txn) checkNow() (time.Time, error) {
	if err := t.ended(); err != nil {
		return time.Time{}, err
	}
	now := t.s.cfg.Clock()
	if d := t.s.cfg.TransactionTimeout; d > 0 && now.Sub(t.start) > d {
		return now, kv.Errorf(kv.CodeTransactionTimedOut, "transaction ran longer than its %v timeout", d)
	}
	if !t.hasRV {
		t.rv = t.s.acquireReadVersion(t, now)
		t.grvTime = now
		t.hasRV = true
	} else if now.Sub(t.grvTime) > kv.MaxTransactionAge {
		return now, kv.Errorf(kv.CodeTransactionTooOld, "read version is %v old", now.Sub(t.grvTime).Round(time.Millisecond))
	}
	return now, nil
}

// checkNoRead is check for an operation that reads nothing (a read
// conflict added by hand): once the transaction has its read version, it
// leaves the clock to the next read and to the commit, which fail a
// transaction that timed out or is too old. A push adds a read conflict
// for each of its new ids and directories: a clock read each was 2.5% of
// a 100-row INSERT's time.
func (t *txn) checkNoRead() error {
	if t.hasRV {
		return t.ended()
	}
	return t.check()
}

// growReads makes the first read conflict's room: the array an ended
// transaction left in the buffers, once the transaction has them (its
// first read's bounds are carved there), else room for 8: a push adds a
// few, and growing from 1 took 4 allocations.
func (t *txn) growReads() {
	if t.reads != nil {
		return
	}
	if b := t.bufs; b != nil && cap(b.reads) > 0 {
		t.reads, b.reads = b.reads, nil
		return
	}
	t.reads = make([]span, 0, 8)
}

// addReadKey adds the read conflict of the single key key, copied into
// the transaction's byte blocks (room) with a zero byte after it, so that
// it costs no object of its own, and the commit's mergeSpans finds its end
// (the key after it) there rather than allocating it. The size counts the
// key, as for a key's span.
func (t *txn) addReadKey(key []byte) {
	n := len(key)
	b := t.room(n + 1)
	copy(b, key)
	b[n] = 0
	t.growReads()
	t.reads = append(t.reads, span{begin: b[:n:n], end: b})
	t.size += n
}

func (t *txn) Context() context.Context { return t.ctx }

func (t *txn) GetReadVersion() (int64, error) {
	if err := t.check(); err != nil {
		return 0, err
	}
	return int64(t.rv), nil
}

func (t *txn) Snapshot() kv.ReadTransaction { return &t.snap }

// checkReadKey validates a key to read: keys past the user key space are
// FoundationDB's system keys.
func checkReadKey(key []byte) error {
	if len(key) > 0 && key[0] == 0xff {
		return kv.Errorf(kv.CodeKeyOutsideLegalRange, "key %q is in the system key space (0xff...)", truncate(key))
	}
	return nil
}

func truncate(b []byte) []byte {
	if len(b) > 32 {
		return b[:32]
	}
	return b
}

func (t *txn) Get(key []byte) ([]byte, error) { return t.get(key, false) }

func (t *txn) findWrite(key []byte) *write {
	t.flushWrites()
	if t.writes == nil {
		return nil
	}
	probe := &t.bufs.wprobe // t.writes is the buffers'
	probe.key = key
	w, _ := t.writes.Get(probe)
	probe.key = nil
	return w
}

func (t *txn) inClears(key []byte) bool { return t.clears.contains(key) }

func (t *txn) get(key []byte, snapshot bool) ([]byte, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	if err := checkReadKey(key); err != nil {
		return nil, err
	}
	w := t.findWrite(key)
	if w != nil {
		t.leaked = true // its value may be the write's
	}
	if w != nil && w.base != baseDB {
		v, ok := w.resolve(nil, false)
		return presence(v, ok), nil
	}
	if w == nil && t.inClears(key) {
		return nil, nil
	}
	v, ok := t.s.get(t.rv, key, &t.eprobe)
	if err := t.expired(); err != nil {
		return nil, err
	}
	if !snapshot {
		t.addReadKey(key)
	}
	if w != nil {
		v, ok = w.resolve(v, ok)
	}
	return presence(v, ok), nil
}

// GetMany is kv.GetMany: the keys the transaction did not write are read
// from the store under one hold of its lock, in key order.
func (t *txn) GetMany(keys [][]byte) ([][]byte, error) { return t.getMany(keys, false) }

func (t *txn) getMany(keys [][]byte, snapshot bool) ([][]byte, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	vals := make([][]byte, len(keys))
	// The buffers' arrays for the rest: a 100-row INSERT's push reads
	// about 120 keys, and these were a third of what its reads allocated.
	b := t.buffers()
	oks := append(b.oks[:0], make([]bool, len(keys))...)
	// writes holds the writes to the keys, nil until one has one (a
	// push reads before it writes).
	var writes []*write
	fromStore := b.order[:0] // the indexes of the keys the store answers
	defer func() {
		if cap(oks) <= pooledMany && cap(fromStore) <= pooledMany {
			b.oks, b.order = oks[:0], fromStore[:0]
		}
	}()
	for i, key := range keys {
		if err := checkReadKey(key); err != nil {
			return nil, err
		}
		w := t.findWrite(key)
		if w != nil {
			t.leaked = true
		}
		switch {
		case w != nil && w.base != baseDB:
			vals[i], oks[i] = w.resolve(nil, false)
			continue
		case w == nil && t.inClears(key):
			continue
		}
		if w != nil {
			if writes == nil {
				writes = make([]*write, len(keys))
			}
			writes[i] = w
		}
		fromStore = append(fromStore, i)
	}
	sortByKey(fromStore, keys, &b.ord)
	t.s.getMany(t.rv, keys, fromStore, vals, oks, &t.eprobe)
	if err := t.expired(); err != nil {
		return nil, err
	}
	for _, i := range fromStore {
		if !snapshot {
			t.addReadKey(keys[i])
		}
		if writes != nil && writes[i] != nil {
			vals[i], oks[i] = writes[i].resolve(vals[i], oks[i])
		}
	}
	for i := range vals {
		vals[i] = presence(vals[i], oks[i])
	}
	return vals, nil
}

// sortByKey sorts order, indexes in keys, by key. It sorts by the 8
// bytes of each key after the keys' common prefix, and compares the keys
// only where those are equal: a push's directory keys (about 120 a
// 100-row INSERT) share their queue's prefix, and sorting them by
// bytes.Compare through the indexes took 80M of the 3,383M instructions
// fdbqueue bench's 100,000 rows in 100-row INSERTs took (callgrind).
// ord holds an array sortByKey may use, and gets the one it used back.
func sortByKey(order []int, keys [][]byte, ord *[]keyOrder) {
	if len(order) <= fewSort {
		for j := 1; j < len(order); j++ { // insertion sort
			for m := j; m > 0 && bytes.Compare(keys[order[m]], keys[order[m-1]]) < 0; m-- {
				order[m], order[m-1] = order[m-1], order[m]
			}
		}
		return
	}
	first := keys[order[0]]
	cp := len(first)
	for _, i := range order[1:] {
		cp = kv.CommonPrefix(first[:cp], keys[i])
	}
	sorted := (*ord)[:0]
	for _, i := range order {
		sorted = append(sorted, keyOrder{pre: kv.Abbrev(keys[i][cp:]), i: i})
	}
	slices.SortFunc(sorted, func(a, b keyOrder) int {
		if a.pre != b.pre {
			return cmp.Compare(a.pre, b.pre)
		}
		return bytes.Compare(keys[a.i][cp:], keys[b.i][cp:])
	})
	for j, o := range sorted {
		order[j] = o.i
	}
	if cap(sorted) <= pooledMany {
		*ord = sorted[:0]
	}
}

// fewSort is the most keys sortByKey sorts by insertion, comparing the
// keys: a single-row push's three.
const fewSort = 4

// keyOrder is an index in sortByKey's order, with the bytes it sorts by.
type keyOrder struct {
	pre uint64
	i   int
}

func presence(v []byte, ok bool) []byte {
	if !ok {
		return nil
	}
	if v == nil {
		return []byte{}
	}
	return v
}

// twoKeys returns the span [begin, end+suffix), its bounds copied into one
// new array.
func twoKeys(begin, end []byte, suffix ...byte) span {
	b := make([]byte, 0, len(begin)+len(end)+len(suffix))
	b = append(b, begin...)
	n := len(b)
	b = append(append(b, end...), suffix...)
	return span{begin: b[:n:n], end: b[n:]}
}

func (t *txn) addRead(s span) {
	t.growReads()
	t.reads = append(t.reads, s)
	t.size += s.size()
}

// First is kv.First: GetRange with Limit 1, without an iterator when the
// transaction has written nothing for the read to merge.
func (t *txn) First(r kv.Range, reverse bool) (kv.KeyValue, bool, error) {
	return t.first(r, reverse, false)
}

func (t *txn) first(r kv.Range, reverse, snapshot bool) (kv.KeyValue, bool, error) {
	return t.firstRow(r, reverse, snapshot) // iter.go
}

// wroteIn reports whether the transaction wrote or cleared anything in r,
// which a read of r must then merge with what is committed.
func (t *txn) wroteIn(r kv.Range) bool {
	if t.clears.intersects(r) {
		return true
	}
	t.flushWrites()
	if t.writes == nil || t.writes.Len() == 0 {
		return false
	}
	probe := &t.bufs.wprobe // t.writes is the buffers'
	probe.key = r.Begin
	found := false
	t.writes.Ascend(probe, func(w *write) bool {
		found = bytes.Compare(w.key, r.End) < 0
		return false
	})
	probe.key = nil
	return found
}

func (t *txn) GetRange(r kv.Range, opts kv.RangeOptions) kv.Iterator {
	return newRangeIter(t, r, opts, false)
}

// writeKey buffers a write to key, returning the write record to fill in
// (pending, base baseDB), and room for extra bytes of value.
func (t *txn) writeKey(key []byte, extra int) (*write, []byte) {
	if t.state != kv.TxnActive {
		return nil, nil
	}
	if t.err == nil {
		switch {
		case len(key) > kv.MaxKeySize:
			t.err = kv.Errorf(kv.CodeKeyTooLarge, "key of %d bytes (limit %d)", len(key), kv.MaxKeySize)
		case len(key) > 0 && key[0] == 0xff:
			t.err = kv.Errorf(kv.CodeKeyOutsideLegalRange, "key %q is in the system key space (0xff...)", truncate(key))
		}
	}
	w, room := t.newWrite(key, extra)
	if t.pending == nil {
		t.pending = t.buffers().list(8) // not 1, 2, 4, 8: a push writes 8 or more
	}
	t.pending = append(t.pending, w)
	t.size += len(key)
	return w, room
}

// recentWrite returns the pending write of atomic operations to key in
// recent, if any.
func (t *txn) recentWrite(key []byte) *write {
	for _, w := range t.recent {
		if w != nil && bytes.Equal(w.key, key) {
			return w
		}
	}
	return nil
}

// forget drops key's pending write from recent: a set or a clear of the
// key comes after it.
func (t *txn) forget(key []byte) {
	for i, w := range t.recent {
		if w != nil && bytes.Equal(w.key, key) {
			t.recent[i] = nil
		}
	}
}

// newWrite returns a write to key and room for extra bytes of value,
// carved out of blocks the transaction allocates: a write costs no
// object of its own, where two a write (the write, its bytes) made a third
// of the garbage of a 100-row INSERT. The blocks live as long
// as any write in them: the transaction's, until it is reset, and its
// batch's and write spans', until its commit is installed.
func (t *txn) newWrite(key []byte, extra int) (*write, []byte) {
	if len(t.wblock) == 0 {
		t.wblock = t.buffers().writeBlock(t.nwrites)
	}
	t.nwrites++
	w := &t.wblock[0]
	t.wblock = t.wblock[1:]
	buf := t.room(len(key) + extra)
	copy(buf, key)
	w.key = buf[:len(key):len(key)]
	return w, buf[len(key):]
}

// room returns n bytes carved out of the transaction's byte blocks (see
// newWrite), or its own slice if n is large.
func (t *txn) room(n int) []byte {
	if n > byteBlock/8 {
		return make([]byte, n)
	}
	if len(t.bblock) < n {
		// As large as the blocks so far (not t.size, which counts
		// the read conflicts: a fit pop's dozens of reads made its
		// few small writes take a block of 4 to 8 KiB).
		size := min(max(t.bblocks, 256, n), byteBlock)
		t.bblock = t.buffers().byteBlock(size, n)
		t.bblocks += len(t.bblock)
	}
	var buf []byte
	buf, t.bblock = t.bblock[:n:n], t.bblock[n:]
	return buf
}

// writeBlock and byteBlock are the sizes of newWrite's blocks: writes, and
// bytes for their keys and values.
const (
	writeBlock = 64
	byteBlock  = 8 << 10
	opBlock    = 8
)

func (t *txn) Set(key, value []byte) {
	w, room := t.writeKey(key, len(value))
	if w == nil {
		return
	}
	t.forget(key)
	if len(value) > kv.MaxValueSize && t.err == nil {
		t.err = kv.Errorf(kv.CodeValueTooLarge, "value of %d bytes (limit %d)", len(value), kv.MaxValueSize)
	}
	w.base = baseSet
	if len(room) >= len(value) {
		w.val = room[:len(value):len(value)]
		copy(w.val, value)
	} else {
		w.val = slices.Clone(value)
	}
	t.size += len(value)
}

func (t *txn) Clear(key []byte) {
	w, _ := t.writeKey(key, 0)
	if w == nil {
		return
	}
	t.forget(key)
	w.base = baseCleared
}

func (t *txn) ClearRange(r kv.Range) {
	if t.state != kv.TxnActive {
		return
	}
	if bytes.Compare(r.Begin, r.End) >= 0 {
		if bytes.Compare(r.Begin, r.End) > 0 && t.err == nil {
			t.err = kv.Errorf(kv.CodeInvertedRange, "range end precedes its begin")
		}
		return
	}
	if len(r.End) > 0 && bytes.Compare(r.End, []byte{0xff}) > 0 && t.err == nil {
		t.err = kv.Errorf(kv.CodeKeyOutsideLegalRange, "range reaches into the system key space (0xff...)")
	}
	r = kv.Range{Begin: slices.Clone(r.Begin), End: slices.Clone(r.End)}
	t.flushWrites()
	if t.writes != nil {
		var drop []*write
		t.writes.Ascend(&write{key: r.Begin}, func(w *write) bool {
			if bytes.Compare(w.key, r.End) >= 0 {
				return false
			}
			drop = append(drop, w)
			return true
		})
		for _, w := range drop {
			t.writes.Delete(w)
		}
	}
	t.clears.add(r)
	t.size += len(r.Begin) + len(r.End)
}

func (t *txn) atomic(key []byte, kind opKind, param []byte) {
	if t.state != kv.TxnActive {
		return
	}
	w := t.recentWrite(key)
	if w == nil {
		if w, _ = t.writeKey(key, 0); w == nil {
			return
		}
		copy(t.recent[1:], t.recent[:])
		t.recent[0] = w
	}
	if len(param) > kv.MaxValueSize && t.err == nil {
		t.err = kv.Errorf(kv.CodeValueTooLarge, "value of %d bytes (limit %d)", len(param), kv.MaxValueSize)
	}
	if foldOp(w, kind, param) {
		return
	}
	op := atomicOp{kind: kind, param: t.room(len(param))}
	copy(op.param, param)
	if w.ops == nil {
		// Most writes with operations have one (a counter's ADD): it
		// is carved out of a block, as the writes are.
		if len(t.oblock) == 0 {
			t.oblock = t.buffers().opBlock()
		}
		w.ops, t.oblock = t.oblock[:1:1], t.oblock[1:]
		w.ops[0] = op
	} else {
		w.ops = append(w.ops, op)
	}
	t.size += len(param)
}

func (t *txn) Add(key []byte, delta int64) {
	var p [8]byte
	binary.LittleEndian.PutUint64(p[:], uint64(delta))
	t.atomic(key, opAdd, p[:])
}

func (t *txn) BitAnd(key, param []byte) {
	t.atomic(key, opBitAnd, param)
}

func (t *txn) CompareAndClear(key, value []byte) {
	t.atomic(key, opCompareAndClear, value)
}

func (t *txn) AddReadConflictKey(key []byte) error {
	if err := t.checkNoRead(); err != nil {
		return err
	}
	t.addReadKey(key)
	return nil
}

func (t *txn) AddReadConflictRange(r kv.Range) error {
	if err := t.checkNoRead(); err != nil {
		return err
	}
	if bytes.Compare(r.Begin, r.End) > 0 {
		return kv.Errorf(kv.CodeInvertedRange, "range end precedes its begin")
	}
	if bytes.Equal(r.Begin, r.End) {
		return nil
	}
	// Copied into the transaction's byte blocks, as a read's range is
	// (roomSpan): a fit pop adds dozens, each two objects otherwise.
	t.addRead(t.roomSpan(r.Begin, r.End, false))
	return nil
}

func (t *txn) AddWriteConflictKey(key []byte) error {
	if t.state != kv.TxnActive {
		return t.check()
	}
	s := span{begin: slices.Clone(key)}
	t.wconf = append(t.wconf, s)
	t.size += s.size()
	return nil
}

// AddWriteConflictRange implements kv.AddWriteConflictRange: the range
// is kept with the commit's record, as a clear's is.
func (t *txn) AddWriteConflictRange(r kv.Range) error {
	if t.state != kv.TxnActive {
		return t.check()
	}
	if bytes.Compare(r.Begin, r.End) > 0 {
		return kv.Errorf(kv.CodeInvertedRange, "range end precedes its begin")
	}
	if bytes.Equal(r.Begin, r.End) {
		return nil
	}
	s := span{begin: slices.Clone(r.Begin), end: slices.Clone(r.End)}
	t.wconf = append(t.wconf, s)
	t.size += s.size()
	return nil
}

// WriteConflictRanges implements kv.WriteConflictRangesOf, for the
// transaction and its snapshot view: it takes them.
func (t *txn) WriteConflictRanges() kv.WriteConflictRangeSupport {
	return kv.WriteConflictRangesTaken
}

func (s *snapshot) WriteConflictRanges() kv.WriteConflictRangeSupport {
	return kv.WriteConflictRangesTaken
}

func (t *txn) finish(state kv.TxnState) {
	if t.hasRV {
		t.s.releaseReadVersion(t)
		t.hasRV = false
	}
	t.state = state
}

// Cancel implements kv.Transaction.
func (t *txn) Cancel() {
	if t.state == kv.TxnActive {
		t.finish(kv.TxnCancelled)
		t.release()
	}
	if len(t.watches) > 0 { // the error costs a Sprintf: Cancel ends every statement
		t.settleWatches(kv.Errorf(kv.CodeTransactionCancelled, "the transaction that made the watch was cancelled"))
	}
}

// reset prepares the transaction for another attempt.
func (t *txn) reset() {
	if len(t.watches) > 0 {
		t.settleWatches(kv.Errorf(kv.CodeTransactionCancelled, "the transaction that made the watch was reset"))
	}
	if t.hasRV {
		t.s.releaseReadVersion(t)
	}
	t.release()
	*t = txn{s: t.s, ctx: t.ctx, start: t.start, readOnly: t.readOnly, retries: t.retries, backoff: t.backoff, queued: t.queued,
		attempt: t.attempt + 1}
	t.snap.t = t
}

// OnCommitQueued implements kv.CommitQueuer: a file database's commit
// calls queued once it passed its conflict check and was queued for the
// log, before the log's write and fsync.
func (t *txn) OnCommitQueued(queued func()) { t.queued = queued }

// OnError implements kv.Transaction.
func (t *txn) OnError(err error) error {
	if !kv.IsRetryable(err) || t.state == kv.TxnCancelled || errors.Is(err, ErrFailed) {
		// A commit_unknown_result joined with ErrFailed is final: the
		// database takes no more commits until it is reopened.
		return err
	}
	if lim := t.s.cfg.RetryLimit; lim >= 0 && t.retries >= lim {
		return err
	}
	t.retries++
	if t.backoff == 0 {
		t.backoff = t.s.cfg.InitialBackoff
	} else if t.backoff = t.backoff * 2; t.backoff > t.s.cfg.MaxBackoff {
		t.backoff = t.s.cfg.MaxBackoff
	}
	// Jitter in [backoff/2, backoff] spreads colliding retries apart.
	wait := t.backoff/2 + rand.N(t.backoff/2+1)
	timer := time.NewTimer(wait)
	select {
	case <-timer.C:
	case <-t.ctx.Done():
		timer.Stop()
		return kv.Join(err, t.ctx.Err())
	}
	t.reset()
	return nil
}

// snapshot is the view of a transaction whose reads record no conflicts.
type snapshot struct {
	t *txn
}

func (s *snapshot) Get(key []byte) ([]byte, error) { return s.t.get(key, true) }

func (s *snapshot) GetMany(keys [][]byte) ([][]byte, error) { return s.t.getMany(keys, true) }

func (s *snapshot) GetRange(r kv.Range, opts kv.RangeOptions) kv.Iterator {
	return newRangeIter(s.t, r, opts, true)
}

func (s *snapshot) GetAsync(key []byte) kv.FutureValue { return s.t.getAsync(key, true) }

func (s *snapshot) GetRangeAsync(r kv.Range, opts kv.RangeOptions) kv.FutureRange {
	return s.t.getRangeAsync(r, opts, true)
}

// First is kv.First for a snapshot read.
func (s *snapshot) First(r kv.Range, reverse bool) (kv.KeyValue, bool, error) {
	return s.t.first(r, reverse, true)
}

func (s *snapshot) GetReadVersion() (int64, error) { return s.t.GetReadVersion() }
func (s *snapshot) Snapshot() kv.ReadTransaction   { return s }
func (s *snapshot) Context() context.Context       { return s.t.ctx }
