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
type conflictReader struct {
	a    *Attempt // whose remembered reads it shares
	snap kv.ReadTransaction
	done []kv.Range
	its  []*conflictIter
	seen [][]byte
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
	switch {
	case err != nil:
	case !ok:
		c.done = append(c.done, kv.Range{Begin: bytes.Clone(r.Begin), End: bytes.Clone(r.End)})
	case reverse:
		c.done = append(c.done, kv.Range{Begin: e.Key, End: bytes.Clone(r.End)})
		c.seen = append(c.seen, e.Key)
	default:
		c.done = append(c.done, kv.Range{Begin: bytes.Clone(r.Begin), End: kv.KeyAfter(e.Key)})
		c.seen = append(c.seen, e.Key)
	}
	return e, ok, err
}

func (c *conflictReader) GetReadVersion() (int64, error) { return c.snap.GetReadVersion() }
func (c *conflictReader) Snapshot() kv.ReadTransaction   { return c.snap }
func (c *conflictReader) Context() context.Context       { return c.snap.Context() }

// ranges returns every range recorded.
func (c *conflictReader) ranges() []kv.Range {
	out := c.done
	for _, it := range c.its {
		if r, ok := it.covered(); ok {
			out = append(out, r)
		}
	}
	return out
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
