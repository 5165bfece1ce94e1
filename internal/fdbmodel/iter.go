package fdbmodel

import (
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
)

// A range read, batch by batch, as the FoundationDB engine gets it through
// the official bindings over libfdb_c:
//
//   - GetRange requests the first batch at once (the bindings' getRange
//     calls doGetRange for iteration 1), and the caller waits for it at its
//     first Next.
//   - A batch holds rows up to a byte budget that grows with each batch in
//     the iterator streaming mode (iterationProgression), or up to the
//     read's row limit, or to the range's end. The storage server charges a
//     row rowBytes plus its key and value; the row that spends the budget is
//     in the batch.
//   - When the caller takes the last row of a batch that spent its budget,
//     the bindings request the next one (RangeIterator.Get ->
//     fetchNextBatch), even if it turns out empty; a batch that ended at the
//     row limit or the range's end is the last.
//   - A batch whose span the read-your-writes cache knows is answered by
//     the client, with no request.
//
// The rows of a batch are read from the engine below when the batch is
// requested, as the client holds a batch's rows once they arrive: a write
// the transaction makes ahead of the caller inside the current batch is not
// seen, as on FoundationDB.

// iterationProgression is the byte budget of the iterator streaming mode's
// batch i (1, 2, ...; the last repeats): fdb_c.cpp,
// validate_and_update_parameters.
var iterationProgression = [...]int{4096, 6144, 9216, 13824, 20736, 31104, 46656, 69984, 80000, 120000}

// The byte budgets of the other streaming modes: WANT_ALL reads as SERIAL.
const (
	wantAllBytes = 80000
	smallBytes   = 256
)

// rowBytes is what a row costs a batch's budget besides its key and value:
// sizeof(KeyValueRef), as the storage server counts it (readRange).
const rowBytes = 32

// batchBytes is the byte budget of batch n of a range read in mode.
func batchBytes(mode kv.StreamingMode, n int) int {
	switch mode {
	case kv.StreamingModeWantAll:
		return wantAllBytes
	case kv.StreamingModeSmall:
		return smallBytes
	}
	return iterationProgression[min(n, len(iterationProgression))-1]
}

// iter is a range read on the modeled cluster.
type iter struct {
	t        *txn
	reader   // its batches; reader.a is the attempt that opened it
	in       kv.Iterator
	conflict *readSpan // nil for a snapshot read

	cur      *batch // being consumed
	pos      int    // the next row of cur
	next     *batch // requested, not yet consumed
	returned int
	kv       kv.KeyValue
	err      error
	done     bool
}

// reader is what a range read requested so far, batch by batch.
type reader struct {
	a          *attempt
	rootLen    int
	begin, end []byte
	opts       kv.RangeOptions
	// cursor is where the next batch starts (forward) or ends (reverse).
	cursor []byte
	n      int // batches requested
	rows   int // the rows they hold
}

func newReader(t *txn, r kv.Range, opts kv.RangeOptions) reader {
	rd := reader{a: t.a, rootLen: t.db.rootLen, begin: clone(r.Begin), end: clone(r.End), opts: opts}
	rd.cursor = rd.begin
	if opts.Reverse {
		rd.cursor = rd.end
	}
	return rd
}

// batch is one request's answer.
type batch struct {
	rows  []kv.KeyValue
	more  bool // it spent its budget: the client asks for another after it
	sent  bool // it went to the cluster
	ready time.Duration
	err   error
}

func (t *txn) getRange(r kv.Range, opts kv.RangeOptions, snapshot bool) kv.Iterator {
	it := &iter{
		t: t, reader: newReader(t, r, opts),
		// Serializable or not, the engine reads through its snapshot
		// view: the conflict range is added at Commit (readSpan).
		in: t.in.Snapshot().GetRange(r, opts),
	}
	if !snapshot {
		it.conflict = &readSpan{begin: it.cursor, end: it.cursor}
		t.spans = append(t.spans, it.conflict)
	}
	it.next = it.request()
	return it
}

// request requests the iterator's next batch, now.
func (it *iter) request() *batch {
	return it.reader.request(batchBytes(it.opts.Mode, it.n+1), it.pull)
}

// pull is the engine's next row, copied: its iterator may reuse the bytes.
func (it *iter) pull() (kv.KeyValue, bool, error) {
	if !it.in.Next() {
		return kv.KeyValue{}, false, it.in.Err()
	}
	e := it.in.KeyValue()
	return kv.KeyValue{Key: clone(e.Key), Value: clone(e.Value)}, true, nil
}

func clone(b []byte) []byte { return append([]byte{}, b...) }

// request requests the read's next batch now: up to budget bytes of the
// rows next yields, in the read's order, and to what is left of its row
// limit. A batch is requested once the one before it is consumed, so the
// rows requested are the rows read.
func (rd *reader) request(budget int, next func() (kv.KeyValue, bool, error)) *batch {
	rd.n++
	b := &batch{}
	rowLimit := 0
	if rd.opts.Limit > 0 {
		rowLimit = rd.opts.Limit - rd.rows
	}
	exhausted := false
	for rowLimit == 0 || len(b.rows) < rowLimit {
		e, ok, err := next()
		if !ok {
			exhausted, b.err = true, err
			break
		}
		b.rows = append(b.rows, e)
		if budget -= rowBytes + rd.rootLen + len(e.Key) + len(e.Value); budget <= 0 {
			b.more = true
			break
		}
	}
	rd.rows += len(b.rows)
	// The span the batch covers, and where the next one starts.
	var lo, hi []byte
	switch {
	case exhausted && rd.opts.Reverse:
		lo, hi = rd.begin, rd.cursor
	case exhausted:
		lo, hi = rd.cursor, rd.end
	case rd.opts.Reverse:
		lo, hi = b.rows[len(b.rows)-1].Key, rd.cursor
		rd.cursor = lo
	default:
		lo, hi = rd.cursor, kv.KeyAfter(b.rows[len(b.rows)-1].Key)
		rd.cursor = hi
	}
	b.ready, b.sent = rd.a.fetch(string(lo), string(hi))
	if b.sent {
		rd.a.c.Batches++
	}
	return b
}

func (it *iter) Next() bool {
	if it.done {
		return false
	}
	if err := it.t.check(); err != nil {
		return it.fail(err)
	}
	if it.opts.Limit > 0 && it.returned >= it.opts.Limit {
		it.done = true
		return false
	}
	if it.cur == nil || it.pos == len(it.cur.rows) {
		b := it.next
		if b == nil {
			return it.exhausted() // the last batch is consumed
		}
		it.next = nil
		it.a.wait(b.ready, b.sent)
		if b.err != nil {
			return it.fail(b.err)
		}
		if len(b.rows) == 0 {
			return it.exhausted()
		}
		it.cur, it.pos = b, 0
	}
	it.kv = it.cur.rows[it.pos]
	it.pos++
	it.returned++
	if s := it.conflict; s != nil {
		if it.opts.Reverse {
			s.begin = it.kv.Key
		} else {
			s.end = kv.KeyAfter(it.kv.Key)
		}
	}
	if it.pos == len(it.cur.rows) && it.cur.more && (it.opts.Limit == 0 || it.returned < it.opts.Limit) {
		it.next = it.request()
	}
	return true
}

// exhausted ends a read that reached its range's end: the whole range was
// read.
func (it *iter) exhausted() bool {
	it.done = true
	if s := it.conflict; s != nil {
		if it.opts.Reverse {
			s.begin = it.begin
		} else {
			s.end = it.end
		}
	}
	return false
}

func (it *iter) fail(err error) bool {
	it.err, it.done = err, true
	return false
}

func (it *iter) KeyValue() kv.KeyValue { return it.kv }
func (it *iter) Err() error            { return it.err }
