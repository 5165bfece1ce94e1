// A transaction's range clears, as the union of the ranges cleared: what a
// read must hide and what the commit applies.

package embedded

import (
	"bytes"

	"github.com/fdbqueue/fdbqueue/internal/btree"

	"github.com/fdbqueue/fdbqueue/kv"
)

// clearSet is the union of the ranges a transaction cleared, kept as
// disjoint, non-adjacent ranges ordered by begin, so that asking whether a
// key or a range was cleared costs one tree search however many clears the
// transaction made (a DELETE of many rows clears one range per row). The
// zero value is empty.
type clearSet struct {
	tree *btree.BTreeG[kv.Range] // nil until the first clear
}

func rangeLess(a, b kv.Range) bool { return bytes.Compare(a.Begin, b.Begin) < 0 }

// len returns how many disjoint ranges the set holds.
func (c *clearSet) len() int {
	if c.tree == nil {
		return 0
	}
	return c.tree.Len()
}

// add adds r (non-empty) to the set, merging it with the ranges it
// overlaps or touches.
func (c *clearSet) add(r kv.Range) {
	if c.tree == nil {
		c.tree = btree.NewBTreeGOptions(rangeLess, btree.Options{NoLocks: true, Degree: 16})
	}
	// The range starting at or before r.Begin may reach into r.
	c.tree.Descend(r, func(prev kv.Range) bool {
		if bytes.Compare(prev.End, r.Begin) >= 0 {
			c.tree.Delete(prev)
			r.Begin = prev.Begin
			if bytes.Compare(prev.End, r.End) > 0 {
				r.End = prev.End
			}
		}
		return false
	})
	// The ranges starting inside r, or right at its end, merge into it.
	var merged []kv.Range
	c.tree.Ascend(r, func(next kv.Range) bool {
		if bytes.Compare(next.Begin, r.End) > 0 {
			return false
		}
		merged = append(merged, next)
		return true
	})
	for _, next := range merged {
		c.tree.Delete(next)
		if bytes.Compare(next.End, r.End) > 0 {
			r.End = next.End
		}
	}
	c.tree.Set(r)
}

// contains reports whether key was cleared.
func (c *clearSet) contains(key []byte) bool {
	if c.tree == nil {
		return false
	}
	found := false
	c.tree.Descend(kv.Range{Begin: key}, func(prev kv.Range) bool {
		found = bytes.Compare(key, prev.End) < 0
		return false
	})
	return found
}

// intersects reports whether anything in r was cleared.
func (c *clearSet) intersects(r kv.Range) bool {
	if c.tree == nil {
		return false
	}
	found := false
	// The last range starting before r.End is the only one that can reach
	// into r: the ones before it end before it starts.
	c.tree.Descend(kv.Range{Begin: r.End}, func(prev kv.Range) bool {
		if bytes.Equal(prev.Begin, r.End) {
			return true // starts at r.End: outside r; look at the one before
		}
		found = bytes.Compare(r.Begin, prev.End) < 0
		return false
	})
	return found
}

// ranges returns the set's ranges in order.
func (c *clearSet) ranges() []kv.Range {
	if c.tree == nil {
		return nil
	}
	return c.tree.Items()
}
