//go:build fdb

// Futures (kv.GetAsync, kv.GetRangeAsync) over the bindings' own: a read is
// sent when it is issued, and waited for in Get.

package fdb

import (
	"github.com/apple/foundationdb/bindings/go/src/fdb"

	"github.com/fdbqueue/fdbqueue/kv"
)

var (
	_ kv.FutureValue = (*valueFuture)(nil)
	_ kv.FutureRange = (*rangeFuture)(nil)
)

// valueFuture is a point read in flight: the bindings' future.
type valueFuture struct {
	t       *txn
	attempt uint64              // t.attempt when issued
	f       fdb.FutureByteSlice // nil if the read failed when issued
	err     error               // why it failed
}

// GetAsync is kv.GetAsync: the read is sent now, serializable (FoundationDB
// records its conflict when the answer arrives, and the commit waits for
// it).
func (t *txn) GetAsync(key []byte) kv.FutureValue { return t.getAsync(key, false) }

func (t *txn) getAsync(key []byte, snapshot bool) *valueFuture {
	f := &valueFuture{t: t, attempt: t.attempt}
	if f.err = t.check(); f.err != nil {
		return f
	}
	if f.err = checkReadKey(key); f.err != nil {
		return f
	}
	if snapshot {
		f.f = t.tr.Snapshot().Get(t.key(key))
	} else {
		f.f = t.tr.Get(t.key(key))
	}
	return f
}

// Get waits for the value, if the attempt that issued the read lasts.
func (f *valueFuture) Get() ([]byte, error) {
	if f.err != nil {
		return nil, f.err
	}
	if err := f.t.live(f.attempt); err != nil {
		return nil, err
	}
	v, err := f.f.Get()
	if err != nil {
		return nil, f.t.mapErr(err)
	}
	return v, nil
}

// rangeFuture is a range read in flight: the bindings' RangeResult, whose
// first batch was requested when it was issued.
//
// Like the engine's iterators (iter.go), it reads through the snapshot
// view, and a serializable one adds the span its result covered to the
// attempt's read conflicts when it is resolved: in Get, before a write into
// its range, or at Commit, whichever comes first.
type rangeFuture struct {
	t       *txn
	attempt uint64
	// r is the user's range (within begin and end, the whole keys), for
	// the writes that must wait for the read first (settle).
	r          kv.Range
	begin, end []byte
	opts       kv.RangeOptions
	snapshot   bool
	rr         fdb.RangeResult

	resolved bool // rows and err are the result
	rows     []kv.KeyValue
	err      error
}

// GetRangeAsync is kv.GetRangeAsync: the first batch is requested now.
func (t *txn) GetRangeAsync(r kv.Range, opts kv.RangeOptions) kv.FutureRange {
	return t.getRangeAsync(r, opts, false)
}

func (t *txn) getRangeAsync(r kv.Range, opts kv.RangeOptions, snapshot bool) *rangeFuture {
	f := &rangeFuture{t: t, attempt: t.attempt, opts: opts, snapshot: snapshot}
	if err := t.checkRangeRead(r, opts); err != nil {
		f.resolved, f.err = true, err
		return f
	}
	f.begin, f.end = t.key(r.Begin), t.key(r.End)
	f.r = kv.Range{Begin: f.begin[len(t.root):], End: f.end[len(t.root):]}
	f.rr = t.tr.Snapshot().GetRange(fdb.KeyRange{Begin: fdb.Key(f.begin), End: fdb.Key(f.end)}, rangeOptions(opts))
	t.pending = append(t.pending, f)
	return f
}

// Get waits for the whole result, if the attempt that issued the read
// lasts.
func (f *rangeFuture) Get() ([]kv.KeyValue, error) {
	if f.resolved && f.err != nil {
		return nil, f.err
	}
	if err := f.t.live(f.attempt); err != nil {
		return nil, err
	}
	f.resolve()
	if f.err != nil {
		return nil, f.err
	}
	return f.rows, nil
}

// resolve waits for the result, once: the bindings request each batch after
// the first as the one before it arrives (GetSliceWithError, with
// FoundationDB's largest batches: exact for a limit, want-all without).
// A serializable read's conflict is then the span its result covered: up to
// its last key when the limit cut it short, the whole range otherwise, as
// an iterator read to its end records it.
func (f *rangeFuture) resolve() {
	if f.resolved {
		return
	}
	f.resolved = true
	got, err := f.rr.GetSliceWithError()
	if err != nil {
		f.err = f.t.mapErr(err)
		return
	}
	root := len(f.t.root)
	f.rows = make([]kv.KeyValue, len(got))
	for i, e := range got {
		f.rows[i] = kv.KeyValue{Key: e.Key[root:], Value: e.Value}
	}
	if f.snapshot {
		return
	}
	sp := &span{begin: f.begin, end: f.end}
	if n := len(got); f.opts.Limit > 0 && n == f.opts.Limit {
		if last := got[n-1].Key; f.opts.Reverse {
			sp.begin = last
		} else {
			sp.end = kv.KeyAfter(last)
		}
	}
	f.t.spans = append(f.t.spans, sp)
}

// settle resolves the range futures of the attempt whose range holds a key
// of [begin, end) (the key begin alone if end is nil), before a write
// there: a read's result is as of its call (kv's package doc), and the
// batches after its first, requested as it is waited for, would see the
// write.
func (t *txn) settle(begin, end []byte) {
	if len(t.pending) == 0 {
		return
	}
	kept := t.pending[:0]
	for _, f := range t.pending {
		if !f.resolved && overlaps(f.r, begin, end) {
			f.resolve()
		}
		if !f.resolved {
			kept = append(kept, f)
		}
	}
	clear(t.pending[len(kept):])
	t.pending = kept
}

// overlaps reports whether r holds a key of [begin, end), or the key begin
// if end is nil.
func overlaps(r kv.Range, begin, end []byte) bool {
	if end == nil {
		return r.Contains(begin)
	}
	return string(r.Begin) < string(end) && string(begin) < string(r.End)
}

// resolvePending resolves the serializable range futures of the attempt
// that were not waited for, before its commit: their read conflicts are
// their results'. FoundationDB's commit would wait for their first batches
// anyway.
func (t *txn) resolvePending() {
	for _, f := range t.pending {
		if !f.snapshot {
			f.resolve()
		}
	}
	clear(t.pending)
	t.pending = t.pending[:0]
}

// live returns the error of a future of attempt once that attempt is over:
// the transaction ended, its context is done, or OnError reset it.
func (t *txn) live(attempt uint64) error {
	if err := t.check(); err != nil {
		return err
	}
	if attempt != t.attempt {
		return kv.Errorf(kv.CodeTransactionCancelled, "the future's attempt of the transaction was reset (OnError)")
	}
	return nil
}

func (s *snapshot) GetAsync(key []byte) kv.FutureValue { return s.t.getAsync(key, true) }

func (s *snapshot) GetRangeAsync(r kv.Range, opts kv.RangeOptions) kv.FutureRange {
	return s.t.getRangeAsync(r, opts, true)
}
