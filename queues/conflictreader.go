package queues

import (
	"bytes"
	"context"

	"github.com/fdbqueue/fdbqueue/kv"
)

// conflictReader reads through a snapshot and records the ranges the same
// reads, made serializably, would have added as read conflicts (a range
// read up to the last key it returned, or from it reading in reverse, or
// the whole range once read to its end), and the keys they returned.
//
// It keeps reads in flight together (kv.GetAsync, kv.GetRangeAsync): a
// future records what its read covered once its answer is in, when it is
// waited for, or when the ranges are collected for one never waited for,
// as FoundationDB records a read's conflict whether or not it is waited
// for.
type conflictReader struct {
	a    *Attempt // whose remembered reads it shares
	snap kv.ReadTransaction
	done []kv.Range
	its  []*conflictIter
	seen [][]byte
	// The futures whose answers are not recorded yet.
	values []*conflictValue
	ranged []*conflictRange
	slab   []conflictRange // where the next range futures are carved from
}

// The reads keep copies of the keys and ranges they are given, which
// callers may reuse (the keys they return are the engine's, and stay).

func (c *conflictReader) Get(key []byte) ([]byte, error) {
	after := kv.KeyAfter(key)
	c.done = append(c.done, kv.Range{Begin: after[:len(key)], End: after})
	v, err := c.snap.Get(key)
	if v != nil {
		c.seen = append(c.seen, after[:len(key)])
	}
	return v, err
}

func (c *conflictReader) GetRange(r kv.Range, opts kv.RangeOptions) kv.Iterator {
	r = kv.Range{Begin: bytes.Clone(r.Begin), End: bytes.Clone(r.End)}
	it := &conflictIter{c: c, it: c.snap.GetRange(r, opts), r: r, opts: opts}
	c.its = append(c.its, it)
	return it
}

// First keeps the engine's fast path (kv.First), and the Attempt's
// remembered reads.
func (c *conflictReader) First(r kv.Range, reverse bool) (kv.KeyValue, bool, error) {
	e, ok, err := c.a.first(c.snap, r, reverse, false)
	if err == nil {
		c.recordFirst(r, reverse, e, ok)
	}
	return e, ok, err
}

// recordFirst records a one-row read of r that found e (if ok).
func (c *conflictReader) recordFirst(r kv.Range, reverse bool, e kv.KeyValue, ok bool) {
	switch {
	case !ok:
		c.done = append(c.done, kv.Range{Begin: bytes.Clone(r.Begin), End: bytes.Clone(r.End)})
	case reverse:
		c.done = append(c.done, kv.Range{Begin: e.Key, End: bytes.Clone(r.End)})
		c.seen = append(c.seen, e.Key)
	default:
		c.done = append(c.done, kv.Range{Begin: bytes.Clone(r.Begin), End: kv.KeyAfter(e.Key)})
		c.seen = append(c.seen, e.Key)
	}
}

// GetAsync issues the read through the snapshot: the key is in the
// conflicts at once; whether the read returned it, once its answer is in.
func (c *conflictReader) GetAsync(key []byte) kv.FutureValue {
	after := kv.KeyAfter(key)
	c.done = append(c.done, kv.Range{Begin: after[:len(key)], End: after})
	f := &conflictValue{c: c, in: kv.GetAsync(c.snap, key), key: after[:len(key)]}
	c.values = append(c.values, f)
	return f
}

// GetRangeAsync issues the read through the snapshot; what it covered is
// recorded once its answer is in.
func (c *conflictReader) GetRangeAsync(r kv.Range, opts kv.RangeOptions) kv.FutureRange {
	if len(c.slab) == 0 {
		c.slab = make([]conflictRange, 16)
	}
	f := &c.slab[0]
	c.slab = c.slab[1:]
	// Both bounds in one allocation, as callers may reuse theirs.
	b := append(append(make([]byte, 0, len(r.Begin)+len(r.End)), r.Begin...), r.End...)
	r = kv.Range{Begin: b[:len(r.Begin):len(r.Begin)], End: b[len(r.Begin):]}
	*f = conflictRange{c: c, in: kv.GetRangeAsync(c.snap, r, opts), r: r, opts: opts}
	c.ranged = append(c.ranged, f)
	return f
}

// AnswersAtIssue is its snapshot's (kv.AnswersAtIssue).
func (c *conflictReader) AnswersAtIssue() bool { return kv.AnswersAtIssue(c.snap) }

func (c *conflictReader) GetReadVersion() (int64, error) { return c.snap.GetReadVersion() }
func (c *conflictReader) Snapshot() kv.ReadTransaction   { return c.snap }
func (c *conflictReader) WriteConflictRanges() kv.WriteConflictRangeSupport {
	return kv.WriteConflictRangesOf(c.snap)
}
func (c *conflictReader) Context() context.Context { return c.snap.Context() }

// ranges returns every range recorded, after waiting for the futures
// whose answers are not in yet.
func (c *conflictReader) ranges() ([]kv.Range, error) {
	for _, f := range c.values {
		if _, err := f.Get(); err != nil {
			return nil, err
		}
	}
	for _, f := range c.ranged {
		if _, err := f.Get(); err != nil {
			return nil, err
		}
	}
	c.values, c.ranged = c.values[:0], c.ranged[:0]
	out := c.done
	for _, it := range c.its {
		if r, ok := it.covered(); ok {
			out = append(out, r)
		}
	}
	return out, nil
}

// forget drops what the reader recorded so far, and what its futures in
// flight would record.
func (c *conflictReader) forget() {
	for _, f := range c.values {
		f.recorded = true
	}
	for _, f := range c.ranged {
		f.recorded = true
	}
	c.done, c.its, c.seen, c.values, c.ranged = c.done[:0], c.its[:0], c.seen[:0], c.values[:0], c.ranged[:0]
}

// conflictValue is a point read of a conflictReader in flight.
type conflictValue struct {
	c        *conflictReader
	in       kv.FutureValue
	key      []byte
	recorded bool // whether the read returned the key is recorded
}

func (f *conflictValue) Get() ([]byte, error) {
	v, err := f.in.Get()
	if err == nil && !f.recorded {
		f.recorded = true
		if v != nil {
			f.c.seen = append(f.c.seen, f.key)
		}
	}
	return v, err
}

// conflictRange is a range read of a conflictReader in flight.
type conflictRange struct {
	c        *conflictReader
	in       kv.FutureRange
	r        kv.Range
	opts     kv.RangeOptions
	recorded bool // what it covered is recorded
}

// Get records, the first time the answer is in, what the serializable read
// would have covered: up to its last row when its limit cut it short, the
// whole range otherwise; and the rows it returned.
func (f *conflictRange) Get() ([]kv.KeyValue, error) {
	rows, err := f.in.Get()
	if err != nil || f.recorded {
		return rows, err
	}
	f.recorded = true
	f.c.recordRange(f.r, f.opts, rows)
	return rows, nil
}

// recordRange records a range read of r with opts that returned rows.
func (c *conflictReader) recordRange(r kv.Range, opts kv.RangeOptions, rows []kv.KeyValue) {
	c.done = append(c.done, rangeCovered(r, opts, rows))
	for _, e := range rows {
		c.seen = append(c.seen, e.Key)
	}
}

// rangeCovered returns what a serializable range read of r with opts that
// returned rows covered: up to its last row when its limit cut it short,
// the whole range otherwise.
func rangeCovered(r kv.Range, opts kv.RangeOptions, rows []kv.KeyValue) kv.Range {
	if n := len(rows); opts.Limit > 0 && n == opts.Limit {
		if last := rows[n-1].Key; opts.Reverse {
			r.Begin = last
		} else {
			r.End = kv.KeyAfter(last)
		}
	}
	return r
}

// conflictIter is a range read of a conflictReader.
type conflictIter struct {
	c    *conflictReader
	it   kv.Iterator
	r    kv.Range
	opts kv.RangeOptions
	last []byte // the last key returned
	n    int    // how many were returned
	end  bool   // Next returned false
}

func (c *conflictIter) Next() bool {
	if !c.it.Next() {
		c.end = true
		return false
	}
	c.last = c.it.KeyValue().Key
	c.c.seen = append(c.c.seen, c.last)
	c.n++
	return true
}

func (c *conflictIter) KeyValue() kv.KeyValue { return c.it.KeyValue() }
func (c *conflictIter) Err() error            { return c.it.Err() }

// covered returns the range the read covered, if any.
func (c *conflictIter) covered() (kv.Range, bool) {
	if c.end && (c.opts.Limit == 0 || c.n < c.opts.Limit) {
		return c.r, true // read to its end
	}
	switch {
	case c.n == 0:
		return kv.Range{}, false
	case c.opts.Reverse:
		return kv.Range{Begin: c.last, End: c.r.End}, true
	}
	return kv.Range{Begin: c.r.Begin, End: kv.KeyAfter(c.last)}, true
}
