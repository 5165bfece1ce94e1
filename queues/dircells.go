package queues

import (
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// The cell directory an attempt of several fit pops read whole once
// (Attempt.dirKnown) is decoded once for all of them: each pop's
// skip-scan of it (skipScan through a knownReader) otherwise searched its
// rows and decoded its keys again, read by read, about 11% of a pop's
// time with 8 consumers (memory:, random limits). cellsScan walks the
// decoded cells as the skip-scan reads them, read by read, and records
// the range each read covers, as the knownReader would have: the cells
// handed on and the read conflicts are the same.

// dirCells is a directory read whole, decoded: d coordinates a key, in
// key order (the packed integers' order is theirs), beside the rows.
type dirCells struct {
	d      int
	coords []int64
	rows   []kv.KeyValue
	// at is the index of the cell cellsScan hands on.
	at int
	// heads are, per cell, where the attempt remembers the read of its
	// head (cellHead), forward and in reverse.
	heads [2][]headSlot
	to    []int // remap's scratch
}

// cells returns the directory of r decoded into keys of d coordinates
// under base, once for all the pops that read it; nil when it cannot
// answer the skip-scan alone: the read stopped at its limit, or a key is
// not base with d integers (the skip-scan then reads, and reports it).
func (r *dirRead) cells(base []byte, d int) *dirCells {
	if r.decoded {
		if r.dc != nil && r.dc.d != d {
			return nil
		}
		return r.dc
	}
	r.decoded = true
	if !r.k.complete() {
		return nil
	}
	dc := &dirCells{d: d, coords: make([]int64, 0, d*len(r.k.rows)), rows: r.k.rows}
	for _, e := range r.k.rows {
		if len(e.Key) < len(base) || string(e.Key[:len(base)]) != string(base) {
			return nil
		}
		rest := e.Key[len(base):]
		for range d {
			v, more, err := tuple.DecodeInt(rest)
			if err != nil {
				return nil
			}
			dc.coords, rest = append(dc.coords, v), more
		}
		if len(rest) != 0 {
			return nil
		}
	}
	r.dc = dc
	return dc
}

// cellsScan is skipScan over the decoded directory dc under base, within
// mins..maxs, for x: it calls fn for the same keys, and adds to
// x.covered what each of the skip-scan's reads, answered by x from the
// directory read whole, would have covered.
func cellsScan(x *knownReader, dc *dirCells, base []byte, mins, maxs []int64, fn func([]int64) error) error {
	s := cellScan{x: x, dc: dc, mins: mins, maxs: maxs, fn: fn}
	return s.dim(base, 0, 0, len(dc.rows), make([]int64, 0, len(mins)))
}

type cellScan struct {
	x          *knownReader
	dc         *dirCells
	mins, maxs []int64
	fn         func([]int64) error
	keys       []byte // the covered ranges' bounds
}

// key returns prefix with v appended, then end if given, in s's memory.
func (s *cellScan) key(prefix []byte, v int64, end ...byte) []byte {
	return appendTo(&s.keys, len(prefix)+maxIntLen+len(end), func(b []byte) []byte {
		return append(tuple.AppendInt(append(b, prefix...), v), end...)
	})
}

// dim is skipScanDim for the cells lo..hi, which extend prefix (the
// coordinates cur) and only they.
func (s *cellScan) dim(prefix []byte, dim, lo, hi int, cur []int64) error {
	lim, top := s.mins[dim], s.maxs[dim]
	if lim > top {
		return nil
	}
	d, cs := s.dc.d, s.dc.coords
	i := lo
	for i < hi && cs[i*d+dim] < lim {
		i++
	}
	if dim == d-1 {
		// One range read of the coordinates, whole: it covers its range.
		s.x.covered = append(s.x.covered, kv.Range{Begin: s.key(prefix, lim), End: s.key(prefix, top, 0)})
		for ; i < hi && cs[i*d+dim] <= top; i++ {
			s.dc.at = i
			if err := s.fn(append(cur, cs[i*d+dim])); err != nil {
				return err
			}
		}
		return nil
	}
	// One-row reads from each coordinate on, each up to the key it found,
	// the last up to the end when it found none.
	from, end := s.key(prefix, lim), s.key(prefix, top, tupleEnd)
	for {
		if i == hi || cs[i*d+dim] > top {
			s.x.covered = append(s.x.covered, kv.Range{Begin: from, End: end})
			return nil
		}
		v := cs[i*d+dim]
		s.x.covered = append(s.x.covered, kv.Range{Begin: from, End: kv.KeyAfter(s.dc.rows[i].Key)})
		j := i + 1
		for j < hi && cs[j*d+dim] == v {
			j++
		}
		if err := s.dim(s.key(prefix, v), dim+1, i, j, append(cur, v)); err != nil {
			return err
		}
		if v == top {
			return nil // the next read's range is empty: it covers nothing
		}
		from, i = s.key(prefix, v, tupleEnd), j
	}
}

// headSlot is where an attempt remembers the read of a cell's head: the
// index of the read in its firsts, and the read's key there, which tells
// whether the index still holds it (reads forgotten and compacted away,
// or the memory started over, move or drop it).
type headSlot struct {
	i   int
	key string
}

// remap moves the slots after the attempt compacted its reads
// (compactFirsts): the read at index i went to index to[i], or was
// dropped (-1). A slot is checked before use all the same (cellHead):
// remapping saves the lookups that would find the reads again.
func (dc *dirCells) remap(to []int) {
	for dir := range dc.heads {
		for k := range dc.heads[dir] {
			sl := &dc.heads[dir][k]
			switch {
			case sl.key == "":
			case sl.i < len(to) && to[sl.i] >= 0:
				sl.i = to[sl.i]
			default:
				*sl = headSlot{}
			}
		}
	}
}

// cellHead is issueFirst for the head of cell ci of dc, as a search of
// the cells dc lists reads it (the first entry of r, in reverse for
// reverse), answered by way of the cell's slot without looking the read
// up by its key, when the attempt rd reads in remembers it there; r
// returns the read's range, built only when it does not.
func (dc *dirCells) cellHead(rd kv.ReadTransaction, ci int, reverse bool, r func() kv.Range, o *oneRow) kv.Range {
	_, a, cr := attemptOf(rd)
	if a == nil || !a.remembers() {
		rr := r()
		issueFirst(rd, rr, reverse, o)
		return rr
	}
	dir := 0
	if reverse {
		dir = 1
	}
	if dc.heads[dir] == nil {
		dc.heads[dir] = make([]headSlot, len(dc.rows))
	}
	sl := &dc.heads[dir][ci]
	if sl.key != "" && sl.i < len(a.firsts) {
		if f := &a.firsts[sl.i]; !f.gone && f.key == sl.key {
			*o = oneRow{}
			o.e, o.ok, o.err = a.answer(sl.i, cr == nil)
			if o.err == nil && cr != nil {
				cr.recordFirst(f.r, reverse, o.e, o.ok)
			}
			o.at, o.decoded = f.at, f.decoded
			return f.r
		}
	}
	rr := r()
	issueFirst(rd, rr, reverse, o)
	if i, ok := a.firstAt[string(a.firstKey(rr, reverse))]; ok {
		*sl = headSlot{i: i, key: a.firsts[i].key}
		// The entry's position, decoded once for the searches that the
		// read answers from memory: a search decodes every head it
		// reads (2 us a pop with 8 consumers, memory:).
		if f := &a.firsts[i]; o.f == nil && o.err == nil && o.ok && sameKey(f.e.Key, o.e.Key) {
			if !f.decoded {
				if p, err := decodeEntry(rr.Begin, o.e.Key); err == nil {
					f.at, f.decoded = p, true
				}
			}
			o.at, o.decoded = f.at, f.decoded
		}
	}
	return rr
}

// sameKey reports whether a and b are the same key in memory: one read's
// answer, remembered and handed out.
func sameKey(a, b []byte) bool {
	return len(a) == len(b) && len(a) > 0 && &a[0] == &b[0]
}
