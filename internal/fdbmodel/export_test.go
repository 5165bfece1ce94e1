package fdbmodel

import "github.com/fdbqueue/fdbqueue/kv"

// BatchSizes drains a range read of a modeled transaction and returns the
// rows of each batch it got.
func BatchSizes(it kv.Iterator) []int {
	m := it.(*iter)
	var sizes []int
	for m.Next() {
		if m.pos == 1 {
			sizes = append(sizes, len(m.cur.rows))
		}
	}
	return sizes
}
