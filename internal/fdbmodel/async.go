package fdbmodel

import (
	"math"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
)

// Futures (kv.GetAsync, kv.GetRangeAsync), as the FoundationDB engine
// issues them (kv/fdb's async.go):
//
//   - A point read's request is sent when it is issued (unless the cache
//     knows the key), and the caller waits for its answer in Get, if it is
//     not in by then: reads issued together are one wait.
//   - A range read's first batch is requested when it is issued, in the
//     read's streaming mode. Its Get waits for it, then requests each later
//     batch as the one before arrives (the bindings' GetSliceWithError), in
//     FoundationDB's largest batches: one batch of every row left for a
//     limit (the exact mode), want-all's without one.
//   - A range read is resolved (every batch waited for) by its Get, before
//     a write into its range (whose later batches would see the write), and,
//     if serializable, before the commit (its read conflict is its
//     result's); its conflict span joins the attempt's then, as kv/fdb adds
//     it.
//   - A future of an attempt that is over waits for nothing: kv/fdb fails it
//     before it waits.
//
// The engine below answers when the read is issued, so its results are as
// of the call, as on FoundationDB.

// valueFuture is a point read on the modeled cluster.
type valueFuture struct {
	t      *txn
	a      *attempt // the attempt that issued it
	in     kv.FutureValue
	ready  time.Duration
	sent   bool
	waited bool
}

// rangeFuture is a range read on the modeled cluster.
type rangeFuture struct {
	t *txn
	reader
	snapshot bool
	// rows are the whole result, from the engine when issued, and err its
	// error; taken is how many rows the batches requested so far hold.
	rows  []kv.KeyValue
	err   error
	taken int
	next  *batch // in flight; nil once resolved
}

// GetAsync is kv.GetAsync on the modeled cluster.
func (t *txn) GetAsync(key []byte) kv.FutureValue { return t.getAsync(key, false) }

// GetRangeAsync is kv.GetRangeAsync on the modeled cluster.
func (t *txn) GetRangeAsync(r kv.Range, opts kv.RangeOptions) kv.FutureRange {
	return t.getRangeAsync(r, opts, false)
}

func (t *txn) getAsync(key []byte, snapshot bool) *valueFuture {
	a := t.a
	f := &valueFuture{t: t, a: a}
	f.ready, f.sent = a.fetch(string(key), keyAfter(string(key)))
	if f.sent {
		a.c.Gets++
	}
	f.in = kv.GetAsync(t.view(snapshot), key)
	return f
}

// Get waits for the answer, once, if the attempt that issued the read
// lasts; the engine's future says the rest.
func (f *valueFuture) Get() ([]byte, error) {
	if !f.waited && f.t.live(f.a) == nil {
		f.waited = true
		f.a.wait(f.ready, f.sent)
	}
	return f.in.Get()
}

func (t *txn) getRangeAsync(r kv.Range, opts kv.RangeOptions, snapshot bool) *rangeFuture {
	f := &rangeFuture{t: t, reader: newReader(t, r, opts), snapshot: snapshot}
	// Serializable or not, through the engine's snapshot view: the
	// conflict span is added when the read is resolved.
	f.rows, f.err = kv.GetRangeAsync(t.in.Snapshot(), r, opts).Get()
	if f.err != nil {
		// kv/fdb finds the errors the engine answers at once before it
		// sends the read.
		return f
	}
	f.a.used = true
	f.next = f.request(batchBytes(opts.Mode, 1), f.pull)
	t.pending = append(t.pending, f)
	return f
}

// pull is the result's next row.
func (f *rangeFuture) pull() (kv.KeyValue, bool, error) {
	if f.taken == len(f.rows) {
		return kv.KeyValue{}, false, nil
	}
	f.taken++
	return f.rows[f.taken-1], true, nil
}

// Get waits for every batch, if the attempt that issued the read lasts.
func (f *rangeFuture) Get() ([]kv.KeyValue, error) {
	if f.err != nil {
		return nil, f.err
	}
	if err := f.t.live(f.a); err != nil {
		return nil, err
	}
	f.resolve()
	return f.rows, nil
}

// resolve waits for the batch in flight and requests the next as each
// arrives, until the read is done, then adds a serializable read's conflict
// span: up to its last row when the limit cut it short, the whole range
// otherwise.
func (f *rangeFuture) resolve() {
	if f.next == nil {
		return
	}
	for f.next != nil {
		b := f.next
		f.next = nil
		f.a.wait(b.ready, b.sent)
		if b.more && (f.opts.Limit == 0 || f.taken < f.opts.Limit) {
			f.next = f.request(laterBatchBytes(f.opts), f.pull)
		}
	}
	if f.snapshot {
		return
	}
	s := &readSpan{begin: f.begin, end: f.end}
	if n := len(f.rows); f.opts.Limit > 0 && n == f.opts.Limit {
		if last := f.rows[n-1].Key; f.opts.Reverse {
			s.begin = last
		} else {
			s.end = kv.KeyAfter(last)
		}
	}
	f.t.spans = append(f.t.spans, s)
}

// laterBatchBytes is the byte budget of a range future's batches after its
// first: GetSliceWithError's exact mode (no byte limit) for a read with a
// row limit, want-all's otherwise.
func laterBatchBytes(opts kv.RangeOptions) int {
	if opts.Limit > 0 {
		return math.MaxInt
	}
	return wantAllBytes
}

// settle resolves the attempt's range futures whose range holds a key of
// [begin, end) (the key begin alone if end is nil), before a write there.
func (t *txn) settle(begin, end []byte) {
	if len(t.pending) == 0 {
		return
	}
	kept := t.pending[:0]
	for _, f := range t.pending {
		if f.next != nil && overlaps(f.begin, f.end, begin, end) {
			f.resolve()
		}
		if f.next != nil {
			kept = append(kept, f)
		}
	}
	clear(t.pending[len(kept):])
	t.pending = kept
}

// overlaps reports whether [rb, re) holds a key of [begin, end), or the key
// begin if end is nil.
func overlaps(rb, re, begin, end []byte) bool {
	if end == nil {
		return string(rb) <= string(begin) && string(begin) < string(re)
	}
	return string(rb) < string(end) && string(begin) < string(re)
}

// resolvePending resolves the serializable range futures not waited for,
// before the commit.
func (t *txn) resolvePending() {
	for _, f := range t.pending {
		if !f.snapshot {
			f.resolve()
		}
	}
	clear(t.pending)
	t.pending = t.pending[:0]
}

// live returns the error of a future of attempt a once a is over, as
// kv/fdb's does.
func (t *txn) live(a *attempt) error {
	if err := t.check(); err != nil {
		return err
	}
	if a != t.a {
		return kv.Errorf(kv.CodeTransactionCancelled, "the future's attempt of the transaction was reset (OnError)")
	}
	return nil
}

func (s *snapshot) GetAsync(key []byte) kv.FutureValue { return s.t.getAsync(key, true) }

func (s *snapshot) GetRangeAsync(r kv.Range, opts kv.RangeOptions) kv.FutureRange {
	return s.t.getRangeAsync(r, opts, true)
}
