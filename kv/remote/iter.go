// Range reads, in pages, and the futures (kv.GetAsync, kv.GetRangeAsync).

package remote

import (
	"github.com/fdbqueue/fdbqueue/kv"
)

// Page sizes of a range iterator, in rows: the server also cuts a page at
// about chunkBytes. In the iterator mode the pages start small (the caller
// may stop after a row or two) and double; want-all starts large.
const (
	firstPage = 16
	maxPage   = 1024
)

// span is the read conflict of a serializable range read, as far as the
// caller was given rows: added at Commit.
type span struct {
	begin, end []byte
}

// iter streams a range read in pages. Each page is a read of what is left
// of the range through the server's snapshot view (so that the rows the
// server read ahead conflict with nothing): a serializable iterator
// records its read conflict itself, as far as its rows were consumed, as
// the engines do (the whole range once exhausted), and Commit sends it.
// As on FoundationDB, a page sees the transaction's writes made before it
// was requested.
type iter struct {
	t        *txn
	n        uint64 // the attempt
	begin    []byte // what is left of the range
	end      []byte
	reverse  bool
	limit    int
	mode     kv.StreamingMode
	pageRows int
	returned int

	cl   *call         // the page in flight
	page []kv.KeyValue // the page being consumed
	pi   int
	more bool // more rows may follow the page

	sp     *span // nil for a snapshot read
	endBuf []byte

	cur  kv.KeyValue
	err  error
	done bool
}

func (t *txn) GetRange(r kv.Range, opts kv.RangeOptions) kv.Iterator {
	return t.getRange(r, opts, false)
}

func (t *txn) getRange(r kv.Range, opts kv.RangeOptions, snapshot bool) kv.Iterator {
	it := &iter{t: t, n: t.a.n, reverse: opts.Reverse, limit: opts.Limit, mode: opts.Mode, more: true}
	if err := t.check(); err != nil {
		return it.fail(err)
	}
	if err := checkWireRange(r); err != nil {
		return it.fail(err)
	}
	// Copies: the caller may reuse the range's bytes once the read is
	// done, and the conflict must not change.
	it.begin = append([]byte{}, r.Begin...)
	it.end = append([]byte{}, r.End...)
	it.pageRows = firstPage
	if opts.Mode == kv.StreamingModeWantAll {
		it.pageRows = maxPage
	}
	if !snapshot {
		origin := it.begin
		if opts.Reverse {
			origin = it.end
		}
		it.sp = &span{begin: origin, end: origin}
		t.a.spans = append(t.a.spans, it.sp)
	}
	it.fetch()
	return it
}

func (it *iter) fail(err error) *iter {
	it.err, it.done = err, true
	return it
}

// fetch requests the next page: the rest of the range, after the last row
// of the page before.
func (it *iter) fetch() {
	if n := len(it.page); n > 0 {
		last := it.page[n-1].Key
		if it.reverse {
			it.end = last
		} else {
			it.begin = kv.KeyAfter(last)
		}
	}
	n := it.pageRows
	switch {
	case it.limit < 0:
		n = it.limit // the engine refuses it
	case it.limit > 0:
		n = min(n, it.limit-it.returned)
	}
	if it.mode == kv.StreamingModeIterator && it.pageRows < maxPage {
		it.pageRows *= 2
	}
	it.cl = newCall(mRange)
	a := it.t.a
	if e, ok := a.request(it.cl); ok {
		f := byte(fSnapshot)
		if it.reverse {
			f |= fReverse
		}
		e.u8(f)
		e.varint(int64(n))
		e.u8(byte(it.mode))
		e.bytes(it.begin)
		e.bytes(it.end)
		a.c.w.send(&e)
	}
}

func (it *iter) Next() bool {
	if it.done {
		return false
	}
	if err := it.t.live(it.n); err != nil {
		it.fail(err)
		return false
	}
	if it.limit > 0 && it.returned >= it.limit {
		it.done = true
		return false
	}
	for it.pi >= len(it.page) {
		if it.cl == nil {
			if !it.more {
				it.exhausted()
				return false
			}
			it.fetch()
		}
		ok, err := it.t.wait(it.cl)
		if err != nil {
			if ok {
				freeCall(it.cl)
			}
			it.cl = nil
			it.fail(err)
			return false
		}
		it.page, it.more, it.pi = it.cl.rows, it.cl.more, 0
		freeCall(it.cl)
		it.cl = nil
	}
	e := it.page[it.pi]
	it.pi++
	it.returned++
	if it.sp != nil {
		if it.reverse {
			it.sp.begin = e.Key
		} else {
			it.endBuf = append(append(it.endBuf[:0], e.Key...), 0)
			it.sp.end = it.endBuf
		}
	}
	it.cur = e
	return true
}

// exhausted ends an iteration that read the whole range: all of it is its
// read conflict.
func (it *iter) exhausted() {
	it.done = true
	if it.sp == nil {
		return
	}
	if it.reverse {
		it.sp.begin = append([]byte{}, it.begin...)
	} else {
		it.sp.end = append(it.endBuf[:0], it.end...)
	}
}

func (it *iter) KeyValue() kv.KeyValue { return it.cur }
func (it *iter) Err() error            { return it.err }

var (
	_ kv.FutureValue = (*valueFuture)(nil)
	_ kv.FutureRange = (*rangeFuture)(nil)
)

// future is a request sent when the future was issued, its answer awaited
// in Get: the read's error, or its result while the attempt that issued it
// lasts (the engines' rule).
type future struct {
	t   *txn
	n   uint64
	cl  *call // until the answer is taken
	err error // the read's
}

// get takes the answer, once, handing its call to take; then it returns
// the read's error, or that of its attempt if that is over. The context
// ending before the answer came is an error too, and the answer may still
// be taken later.
func (f *future) get(take func(cl *call)) error {
	if f.cl != nil {
		ok, err := f.t.wait(f.cl)
		if !ok {
			return err
		}
		f.err = err
		take(f.cl)
		freeCall(f.cl)
		f.cl = nil
	}
	if f.err != nil {
		return f.err
	}
	return f.t.live(f.n)
}

// valueFuture is a point read in flight.
type valueFuture struct {
	future
	v []byte
}

// GetAsync is kv.GetAsync: the read is sent now, and answered by the
// server's engine in the order of the transaction's operations, so as of
// now.
func (t *txn) GetAsync(key []byte) kv.FutureValue { return t.getAsync(key, false) }

func (t *txn) getAsync(key []byte, snapshot bool) kv.FutureValue {
	f := &valueFuture{future: future{t: t, n: t.a.n}}
	if f.err = t.check(); f.err != nil {
		return f
	}
	if len(key) > maxWireKey {
		f.err = errKeyTooLong(key)
		return f
	}
	f.cl = newCall(mGet)
	t.sendGet(f.cl, key, snapshot)
	return f
}

func (f *valueFuture) Get() ([]byte, error) {
	if err := f.get(func(cl *call) { f.v = cl.val }); err != nil {
		return nil, err
	}
	return f.v, nil
}

// rangeFuture is a range read in flight: the server's engine reads it
// whole (kv.GetRangeAsync there), serializably unless through the
// snapshot view, and sends it in as many frames as it takes.
type rangeFuture struct {
	future
	rows []kv.KeyValue
}

// GetRangeAsync is kv.GetRangeAsync: one request for the whole result.
func (t *txn) GetRangeAsync(r kv.Range, opts kv.RangeOptions) kv.FutureRange {
	return t.getRangeAsync(r, opts, false)
}

func (t *txn) getRangeAsync(r kv.Range, opts kv.RangeOptions, snapshot bool) kv.FutureRange {
	f := &rangeFuture{future: future{t: t, n: t.a.n}}
	if f.err = t.check(); f.err != nil {
		return f
	}
	if f.err = checkWireRange(r); f.err != nil {
		return f
	}
	f.cl = newCall(mRange)
	a := t.a
	if e, ok := a.request(f.cl); ok {
		fl := snapFlag(snapshot) | fWhole
		if opts.Reverse {
			fl |= fReverse
		}
		e.u8(fl)
		e.varint(int64(opts.Limit))
		e.u8(byte(opts.Mode))
		e.bytes(r.Begin)
		e.bytes(r.End)
		a.c.w.send(&e)
	}
	return f
}

func (f *rangeFuture) Get() ([]kv.KeyValue, error) {
	if err := f.get(func(cl *call) { f.rows = cl.rows }); err != nil {
		return nil, err
	}
	return f.rows, nil
}
