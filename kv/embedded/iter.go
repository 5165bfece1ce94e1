package embedded

import (
	"bytes"
	"slices"

	"github.com/fdbqueue/fdbqueue/kv"
)

// Batch sizes of range reads: the first batch is small (a queue pop wants
// one key), later ones grow, as FoundationDB's iterator streaming mode does.
const (
	firstBatch = 8
	maxBatch   = 1024
)

// rangeIter merges the committed key-values at the read version (fetched in
// batches) with the transaction's buffered writes, so that reads see the
// transaction's own writes. For a serializable read, the range it covered is
// added to the transaction's read-conflict ranges as it goes: the whole range
// once exhausted, up to the last key returned when a limit stopped it.
//
// Its flags sit together: apart, their padding made it a size class
// larger (a worst-case fit pop makes two).
type rangeIter struct {
	t        *txn
	attempt  uint64 // t.attempt when made
	begin    []byte // remaining range, narrowed as the iteration advances
	end      []byte
	limit    int
	mode     kv.StreamingMode
	snapshot bool
	beginEx  bool // begin itself was consumed (forward iteration)
	reverse  bool
	dbDone   bool
	done     bool

	batch     []kv.KeyValue
	bi        int
	batchSize int

	returned int
	cur      kv.KeyValue
	err      error

	conflict int // index of this iterator's span in t.reads, or -1
	origin   []byte
	// endBuf holds the end of the read-conflict span of a forward
	// iteration: rewritten in place as the span grows, one allocation for
	// the keys a range read returns, not one a key.
	endBuf []byte
}

func newRangeIter(t *txn, r kv.Range, opts kv.RangeOptions, snapshot bool) *rangeIter {
	it := &rangeIter{
		t: t, attempt: t.attempt, snapshot: snapshot,
		begin: r.Begin, end: r.End,
		reverse: opts.Reverse, limit: opts.Limit, mode: opts.Mode,
		conflict: -1,
		batch:    t.spareBatch, // a finished iterator's, if any
	}
	t.spareBatch = nil
	if it.batch == nil && t.bufs != nil {
		// An ended transaction's, once this one has its buffers.
		it.batch, t.bufs.rows = t.bufs.rows, nil
	}
	var err error
	if it.batchSize, err = t.startRange(r, opts); err != nil {
		it.fail(err)
		return it
	}
	if !snapshot {
		// Start with an empty span; it grows as keys are returned.
		// Never nil: a nil end would make the span a single key.
		if opts.Reverse {
			it.origin = append([]byte{}, r.End...)
		} else {
			it.origin = append([]byte{}, r.Begin...)
		}
		t.growReads()
		t.reads = append(t.reads, span{begin: it.origin, end: it.origin})
		it.conflict = len(t.reads) - 1
	}
	return it
}

// startRange checks a range read of r with opts before its first batch,
// and returns the size of that batch.
func (t *txn) startRange(r kv.Range, opts kv.RangeOptions) (int, error) {
	if err := t.check(); err != nil {
		return 0, err
	}
	if opts.Limit < 0 {
		return 0, kv.Errorf(kv.CodeRangeLimitsInvalid, "range limit %d is negative", opts.Limit)
	}
	if err := checkRange(r); err != nil {
		return 0, err
	}
	size := firstBatch
	if opts.Mode == kv.StreamingModeWantAll {
		size = maxBatch
	}
	if opts.Limit > 0 && opts.Limit < size {
		size = opts.Limit
	}
	return size, nil
}

// checkRange reports a range no read may cover.
func checkRange(r kv.Range) error {
	if bytes.Compare(r.Begin, r.End) > 0 {
		return kv.Errorf(kv.CodeInvertedRange, "range end precedes its begin")
	}
	if len(r.Begin) > 0 && r.Begin[0] == 0xff || bytes.Compare(r.End, []byte{0xff}) > 0 {
		return kv.Errorf(kv.CodeKeyOutsideLegalRange, "range reaches into the system key space (0xff...)")
	}
	return nil
}

func (it *rangeIter) fail(err error) {
	it.err = err
	it.done = true
}

func (it *rangeIter) KeyValue() kv.KeyValue { return it.cur }
func (it *rangeIter) Err() error            { return it.err }

// nextDB returns the next committed key-value of the remaining range, fetching
// a batch when needed.
func (it *rangeIter) nextDB() (kv.KeyValue, bool) {
	if it.bi < len(it.batch) {
		return it.batch[it.bi], true
	}
	if it.dbDone {
		return kv.KeyValue{}, false
	}
	// The 5-second limit and the context are checked once per batch.
	if err := it.t.check(); err != nil {
		it.fail(err)
		return kv.KeyValue{}, false
	}
	it.batch, it.dbDone = it.t.s.fetch(it.t.rv, it.begin, it.beginEx, it.end, it.reverse, it.batchSize, it.batch[:0], &it.t.eprobe)
	if err := it.t.expired(); err != nil {
		it.batch = it.batch[:0]
		it.fail(err)
		return kv.KeyValue{}, false
	}
	it.bi = 0
	if it.batchSize < maxBatch {
		it.batchSize *= 2
	}
	if len(it.batch) == 0 {
		it.dbDone = true
		return kv.KeyValue{}, false
	}
	return it.batch[0], true
}

// nextWrite returns the transaction's next buffered write in the remaining
// range.
func (it *rangeIter) nextWrite() *write {
	it.t.flushWrites()
	ws := it.t.writes
	if ws == nil || ws.Len() == 0 {
		return nil
	}
	var found *write
	// The buffers' probe (ws is theirs): a new write here would escape
	// to the heap.
	probe := &it.t.bufs.wprobe
	if it.reverse {
		probe.key = it.end
		ws.Descend(probe, func(w *write) bool {
			if bytes.Compare(w.key, it.end) >= 0 {
				return true
			}
			if c := bytes.Compare(w.key, it.begin); c > 0 || c == 0 && !it.beginEx {
				found = w
			}
			return false
		})
	} else {
		probe.key = it.begin
		ws.Ascend(probe, func(w *write) bool {
			if it.beginEx && bytes.Equal(w.key, it.begin) {
				return true
			}
			if bytes.Compare(w.key, it.end) < 0 {
				found = w
			}
			return false
		})
	}
	probe.key = nil
	return found
}

// consume narrows the remaining range past key.
func (it *rangeIter) consume(key []byte) {
	if it.reverse {
		it.end = key
	} else {
		it.begin, it.beginEx = key, true
	}
}

func (it *rangeIter) Next() bool {
	if it.done {
		return false
	}
	if it.t.state != kv.TxnActive || it.attempt != it.t.attempt {
		// Ended, or reset: the rows of a batch fetched before are not
		// returned either. The transaction's writes, which they would
		// merge with, went back to the pool (txnBufs), or are the next
		// attempt's, as are the read conflicts cover would write.
		it.fail(it.t.live(it.attempt))
		return false
	}
	if it.limit > 0 && it.returned >= it.limit {
		it.finish(false)
		return false
	}
	for {
		dbkv, dbOK := it.nextDB()
		if it.err != nil {
			return false
		}
		w := it.nextWrite()
		if !dbOK && w == nil {
			it.finish(true)
			return false
		}
		var key, val []byte
		var ok bool
		switch {
		case w == nil || (dbOK && it.before(dbkv.Key, w.key)):
			// A committed key with no write of ours.
			it.bi++
			key, val = dbkv.Key, dbkv.Value
			ok = !it.t.inClears(key)
		case dbOK && bytes.Equal(dbkv.Key, w.key):
			it.t.leaked = true // the key and value are the write's
			it.bi++
			key = w.key
			val, ok = w.resolve(dbkv.Value, true)
		default:
			// A key only our writes know; atomic ops on it start from
			// nothing, as the key is absent at the read version.
			it.t.leaked = true
			key = w.key
			val, ok = w.resolve(nil, false)
		}
		it.consume(key)
		if !ok {
			continue
		}
		it.cur = kv.KeyValue{Key: key, Value: presence(val, true)}
		it.returned++
		it.cover(key)
		return true
	}
}

// before reports whether a comes before b in iteration order.
func (it *rangeIter) before(a, b []byte) bool {
	c := bytes.Compare(a, b)
	if it.reverse {
		return c > 0
	}
	return c < 0
}

// cover extends the read-conflict span to include key.
func (it *rangeIter) cover(key []byte) {
	if it.conflict < 0 {
		return
	}
	s := &it.t.reads[it.conflict]
	if it.reverse {
		s.begin = key
	} else {
		it.endBuf = append(append(it.endBuf[:0], key...), 0)
		s.end = it.endBuf
	}
}

// finish ends the iteration; exhausted means the whole range was read, so the
// whole of it is a read conflict. The next iterator of the transaction
// takes its batch's memory.
func (it *rangeIter) finish(exhausted bool) {
	it.done = true
	if cap(it.batch) > cap(it.t.spareBatch) {
		clear(it.batch[:cap(it.batch)]) // no slab memory kept alive
		it.t.spareBatch, it.batch = it.batch[:0], nil
	}
	if it.conflict < 0 {
		return
	}
	s := &it.t.reads[it.conflict]
	if exhausted {
		if it.reverse {
			// A copy: it.begin is still the caller's slice.
			s.begin = append([]byte{}, it.begin...)
		} else {
			it.endBuf = append(it.endBuf[:0], it.end...)
			s.end = it.endBuf
		}
	}
	it.t.size += s.size()
	// An empty span (nothing read) stays: other open iterators hold
	// indexes into t.reads. mergeSpans drops it at commit.
	it.conflict = -1
}

// firstRow is kv.First, GetRange with Limit 1: without an iterator when
// the transaction wrote nothing in r (a pop's search reads its dozens of
// cell heads before it writes anything), then one seek in the store that
// allocates nothing (store.first), and a read conflict whose bounds are
// carved out of the transaction's byte blocks (room), not an object a
// read.
func (t *txn) firstRow(r kv.Range, reverse, snapshot bool) (kv.KeyValue, bool, error) {
	if t.wroteIn(r) {
		it := newRangeIter(t, r, kv.RangeOptions{Limit: 1, Reverse: reverse}, snapshot)
		if it.Next() {
			// As the next Next would: the span's bytes count, and the
			// batch goes to the next iterator.
			it.finish(false)
			return it.KeyValue(), true, nil
		}
		return kv.KeyValue{}, false, it.Err()
	}
	if err := t.check(); err != nil {
		return kv.KeyValue{}, false, err
	}
	if err := checkRange(r); err != nil {
		return kv.KeyValue{}, false, err
	}
	e, found := t.s.first(t.rv, r.Begin, r.End, reverse, &t.eprobe)
	if err := t.expired(); err != nil {
		return kv.KeyValue{}, false, err
	}
	if !snapshot {
		// As the iterator records it: what the read covered, up to the
		// key it returned, or the whole range when it found nothing.
		var sp span
		switch {
		case found && reverse:
			// The key is a record's, never written to.
			sp = span{begin: e.Key, end: t.roomCopy(r.End)}
		case found:
			sp = t.roomSpan(r.Begin, e.Key, true)
		default:
			sp = t.roomSpan(r.Begin, r.End, false)
		}
		if !bytes.Equal(sp.begin, sp.end) {
			t.growReads()
			if len(t.reads) == cap(t.reads) {
				// A search's reads: grown past the few of a push at
				// once.
				t.reads = slices.Grow(t.reads, max(2*len(t.reads), 64))
			}
			t.addRead(sp)
		}
	}
	return e, found, nil
}

// roomCopy returns a copy of b in the transaction's byte blocks.
func (t *txn) roomCopy(b []byte) []byte {
	c := t.room(len(b))
	copy(c, b)
	return c
}

// roomSpan returns the span [begin, end), with a zero byte after end when
// after (the key after end), its bounds copied into the transaction's
// byte blocks, the end's capacity its length.
func (t *txn) roomSpan(begin, end []byte, after bool) span {
	n, m := len(begin), len(end)
	if after {
		m++
	}
	b := t.room(n + m)
	copy(b, begin)
	copy(b[n:], end)
	if after {
		b[n+m-1] = 0
	}
	return span{begin: b[:n:n], end: b[n:]}
}
