//go:build fdb

package fdb

import (
	"github.com/apple/foundationdb/bindings/go/src/fdb"

	"github.com/fdbqueue/fdbqueue/kv"
)

// span is the read-conflict range of a serializable range read: from the
// range's start to the last key the caller was given (forward), from that
// key to the range's end (reverse), or the whole range once exhausted.
//
// FoundationDB itself records the conflict range of every batch it
// fetched, and the bindings fetch the next batch as soon as the last row of
// one is consumed: a scan that stops early would conflict with writes far
// beyond what it used (4 KB and more). So serializable range reads go
// through the snapshot view, and their spans are added at Commit: the
// conflicts are exactly the embedded engine's.
type span struct {
	begin, end []byte
}

// iter streams a range read, stripping the root prefix from its keys.
type iter struct {
	t        *txn
	ri       *fdb.RangeIterator
	sp       *span // nil for a snapshot read
	begin    []byte
	end      []byte
	reverse  bool
	limit    int
	returned int
	cur      kv.KeyValue
	err      error
	done     bool
}

func (t *txn) getRange(r kv.Range, opts kv.RangeOptions, snapshot bool) kv.Iterator {
	it := &iter{t: t, reverse: opts.Reverse, limit: opts.Limit}
	if err := t.checkRangeRead(r, opts); err != nil {
		it.err = err
		return it
	}
	it.begin, it.end = t.key(r.Begin), t.key(r.End)
	if !snapshot {
		origin := it.begin
		if opts.Reverse {
			origin = it.end
		}
		it.sp = &span{begin: origin, end: origin}
		t.spans = append(t.spans, it.sp)
	}
	rr := t.tr.Snapshot().GetRange(fdb.KeyRange{Begin: fdb.Key(it.begin), End: fdb.Key(it.end)}, rangeOptions(opts))
	it.ri = rr.Iterator()
	return it
}

// checkRangeRead returns the error a range read fails with before it is
// sent.
func (t *txn) checkRangeRead(r kv.Range, opts kv.RangeOptions) error {
	if err := t.check(); err != nil {
		return err
	}
	if opts.Limit < 0 {
		return kv.Errorf(kv.CodeRangeLimitsInvalid, "range limit %d is negative; a count, or 0 for no limit", opts.Limit)
	}
	return checkRange(r)
}

func rangeOptions(o kv.RangeOptions) fdb.RangeOptions {
	mode := fdb.StreamingModeIterator
	switch o.Mode {
	case kv.StreamingModeWantAll:
		mode = fdb.StreamingModeWantAll
	case kv.StreamingModeSmall:
		mode = fdb.StreamingModeSmall
	}
	return fdb.RangeOptions{Limit: o.Limit, Reverse: o.Reverse, Mode: mode}
}

func (it *iter) Next() bool {
	if it.err != nil || it.done {
		return false
	}
	if err := it.t.check(); err != nil {
		it.err = err
		return false
	}
	if it.limit > 0 && it.returned == it.limit {
		it.done = true
		return false
	}
	if !it.ri.Advance() {
		it.done = true
		if it.sp != nil {
			// Exhausted: the whole range was read.
			if it.reverse {
				it.sp.begin = it.begin
			} else {
				it.sp.end = it.end
			}
		}
		return false
	}
	e, err := it.ri.Get()
	if err != nil {
		it.err = it.t.mapErr(err)
		return false
	}
	it.returned++
	if it.sp != nil {
		if it.reverse {
			it.sp.begin = e.Key
		} else {
			it.sp.end = kv.KeyAfter(e.Key)
		}
	}
	it.cur = kv.KeyValue{Key: e.Key[len(it.t.root):], Value: e.Value}
	return true
}

func (it *iter) KeyValue() kv.KeyValue { return it.cur }
func (it *iter) Err() error            { return it.err }
