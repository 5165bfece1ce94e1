package queues

import (
	"bytes"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// Cells that straddle a limit: some of their tasks fit, some do not. A
// search (bestFromIndex) scans such a cell in queue order after the heads
// of the whole cells, as long as an entry can still beat the best head and
// at most straddleBudget entries, and past that resolves it through its
// shapes. In rounds: the first straddleAhead entries of every straddling
// cell are read ahead with the heads, the rest of the budget only for the
// cells whose scan goes on past them, all in one round.

// straddleBudget is how many entries of a cell straddling a limit a fit pop
// reads in queue order before it resolves the cell through its exact shapes.
const straddleBudget = 64

// straddleAhead is how many entries of a straddling cell a search reads
// ahead, with the heads: a scan of the cell mostly stops at its first
// entry, which cannot beat the best head, or at its first that fits.
const straddleAhead = 4

// straddles reports whether some of the cell's values exceed a limit.
func (g cellGrid) straddles(cell, limits []int64) bool {
	for i, c := range cell {
		if g.high(c) > limits[i] {
			return true
		}
	}
	return false
}

// straddleRead is the reads of a cell that straddles a limit, which
// straddlingCell scans in queue order.
type straddleRead struct {
	coords []int64
	prefix []byte
	all    kv.Range // kv.PrefixRange(prefix)
	top    oneRow   // Max order: its last entry, which gives its highest priority
	// k is what was read ahead of the scan: the cell's first entries, or
	// in Max order its highest priority's; ahead is k's read in flight
	// (with a row limit). more is what was read ahead past k, if anything,
	// and moreF its read in flight.
	k, more      known
	ahead, moreF kv.FutureRange
	limit        int
}

// readStraddling issues the first read of the scan of every straddling
// cell with the coordinates in flat (round 2, with the heads): its first
// entries, read ahead, or in Max order its last entry.
func (s *indexSearch) readStraddling(flat []int64) []straddleRead {
	d := len(s.limits)
	strs := bump(&s.mem.strs, len(flat)/d)
	for i := range strs {
		st := &strs[i]
		st.coords = flat[i*d : (i+1)*d : (i+1)*d]
		all := s.mem.prefixRange(s.q.sub[tagCells], st.coords...)
		st.prefix, st.all = all.Begin, all
		if s.maxFirst {
			issueFirst(s.tr, all, true, &st.top)
			continue
		}
		if !s.pk.readsAhead() {
			continue // the scan reads the cell itself
		}
		st.k.r, st.limit = all, straddleAhead
		st.ahead = kv.GetRangeAsync(s.pk.snapshot(), all, kv.RangeOptions{Limit: st.limit})
	}
	return strs
}

// readStraddlingLevels issues, in Max order, the read ahead of the first
// entries of the highest priority of every straddling cell (round 3, with
// the heads' levels): one, enough to stop the scan, where that priority
// is below prio, the highest the whole cells offer (if found).
func (s *indexSearch) readStraddlingLevels(strs []straddleRead, prio int64, found bool) error {
	if !s.pk.readsAhead() {
		return nil // the scans read the cells themselves
	}
	for i := range strs {
		st := &strs[i]
		e, ok, err := st.top.get()
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		p, err := decodeEntry(st.prefix, e.Key)
		if err != nil {
			return err
		}
		st.k.r, st.limit = kv.PrefixRange(tuple.AppendInt(bytes.Clone(st.prefix), p.prio)), straddleAhead
		if found && p.prio < prio {
			st.limit = 1
		}
		st.ahead = kv.GetRangeAsync(s.pk.snapshot(), st.k.r, kv.RangeOptions{Limit: st.limit})
	}
	return nil
}

// readMoreStraddling waits for the straddling cells' reads ahead, and reads
// the rest of the straddle budget of each whose scan, with the best found
// so far, could go on past them (one round for all): the best can only
// get better, which stops scans sooner.
func (s *indexSearch) readMoreStraddling(strs []straddleRead) error {
	for i := range strs {
		st := &strs[i]
		if st.ahead == nil {
			continue
		}
		rows, err := st.ahead.Get()
		if err != nil {
			return err
		}
		st.k = newKnown(st.k.r, st.limit, rows)
		if !st.k.complete() && st.goesOn(s) {
			st.more.r = kv.Range{Begin: st.k.upTo, End: st.k.r.End}
			st.moreF = kv.GetRangeAsync(s.pk.snapshot(), st.more.r, kv.RangeOptions{Limit: straddleBudget + 1 - len(rows), Mode: kv.StreamingModeWantAll})
		}
	}
	for i := range strs {
		st := &strs[i]
		if st.moreF == nil {
			continue
		}
		rows, err := st.moreF.Get()
		if err != nil {
			return err
		}
		st.more = newKnown(st.more.r, straddleBudget+1-st.limit, rows)
	}
	return nil
}

// goesOn reports whether straddlingCell's scan of st, with the best found
// so far, reads past the rows read ahead.
func (st *straddleRead) goesOn(s *indexSearch) bool {
	n := 0
	for _, e := range st.k.rows {
		p, err := decodeEntry(st.prefix, e.Key)
		if err != nil {
			return false // the scan will say
		}
		if next, _, err := s.straddleStep(e, p, &n); !next || err != nil {
			return false
		}
	}
	return true
}

// straddlingCell resolves one cell that straddles a limit, after the
// whole cells: it reads the cell in queue order, only as long as an entry
// can still beat the best found and at most straddleBudget entries, and
// offers the first entry that fits. Past the budget it offers the heads of
// the cell's fitting shapes instead.
func (s *indexSearch) straddlingCell(st *straddleRead) error {
	if !s.pk.readsAhead() && s.q.cells.cornerOnly(st.coords, s.limits) {
		return s.cornerCell(st)
	}
	x := newKnownReader(s.tr, false)
	defer x.release()
	if s.maxFirst {
		x.one, x.oneRange = &st.top, st.all
	}
	if st.k.r.Begin != nil { // (in Max order, an empty cell: nothing was read ahead)
		x.ks = append(x.ks, st.k)
	}
	if st.more.r.Begin != nil {
		x.ks = append(x.ks, st.more)
	}
	n := 0
	step := func(e kv.KeyValue, p pos) (bool, error) {
		next, take, err := s.straddleStep(e, p, &n)
		if take {
			s.offer(p)
		}
		return next, err
	}
	var stopped bool
	var err error
	if s.maxFirst && s.pk.cr == nil && !s.pk.readsAhead() && s.topAbove(st) {
		stopped, err = s.scanStraddleMax(x, st, step)
	} else {
		stopped, err = s.q.scanEntries(x, st.prefix, s.order, step)
	}
	if err == nil {
		err = s.pk.record(x, false)
	}
	switch {
	case err != nil:
		return err
	case !stopped && n == 0:
		s.clearDir(tagCellDir, st.coords) // listed, but empty
		return nil
	case !stopped || n <= straddleBudget:
		return nil
	}
	// Over budget: the cell's fitting shapes, exactly: their directory,
	// then their heads (in Max order, then their highest priorities').
	lo, hi := make([]int64, len(st.coords)), make([]int64, len(st.coords))
	for i, c := range st.coords {
		lo[i], hi[i] = c, min(s.q.cells.high(c), s.limits[i])
	}
	var shapes []int64
	if err := readBox(s.pk, s.q.sub[tagShapeDir], lo, hi).scan(s.pk, func(shape []int64) error {
		shapes = append(shapes, shape...)
		return nil
	}); err != nil {
		return err
	}
	return s.shapeHeads(shapes, tagShapeDir)
}

// shapeHeads offers the heads of the shapes with the coordinates in flat,
// one after another, as wholeCells does, each a shape wholly inside the
// limits; dirTag is where the directory keys of those found empty are
// cleared (noDir: nowhere).
func (s *indexSearch) shapeHeads(flat []int64, dirTag int) error {
	heads := s.readHeads(tagShapes, flat, nil)
	if err := s.waitHeads(heads); err != nil {
		return err
	}
	if s.maxFirst {
		_, _, err := s.readLevels(heads)
		if err == nil {
			err = s.waitLevels(heads)
		}
		if err != nil {
			return err
		}
	}
	return s.wholeCells(heads, dirTag)
}

// cornerOnly reports whether the only shape of cell that fits limits is
// the cell's lower corner: in every resource the limit is the cell's
// lower bound, or the cell is exact there (the cell straddles the limits,
// so it is not exact in all). Limits at round values put them there: a
// power of two, and most of its simple multiples, is a cell's lower bound.
func (g cellGrid) cornerOnly(cell, limits []int64) bool {
	for i, c := range cell {
		if min(g.high(c), limits[i]) != c {
			return false
		}
	}
	return true
}

// cornerCell resolves a straddling cell whose only fitting shape is its
// lower corner (cornerOnly): every entry that fits is that shape's, so
// the shape's head answers for the cell, as a whole cell's head does
// (wholeCells), where a scan of the cell in queue order reads every entry
// that could beat the best found and does not fit, up to straddleBudget
// of them. It reads the cell's first entry (in Max order, its last,
// which readStraddling read) before: a cell found empty has its
// directory key cleared, as the scan does, after the same read of the
// whole cell. What it chooses is what the scan chooses: the best entry of
// the cell that fits, is not claimed and beats the best found. A push of
// an entry that fits lands in the shape, inside what the shape's head
// reads covered (see wholeCells), so a pop that would commit after it
// conflicts. The shape's directory key, which it does not read, it
// leaves alone, even when it finds the shape empty: a clear of a key that
// is not there would only conflict with pushes of the shape.
//
// Only where reads are answered when issued (kv.AnswersAtIssue): in
// rounds the straddling cells' scans are read ahead with the heads, and
// the shape's head would take rounds of its own.
func (s *indexSearch) cornerCell(st *straddleRead) error {
	first := &st.top
	if !s.maxFirst {
		first = &bump(&s.mem.levels, 1)[0]
		issueFirst(s.tr, st.all, false, first)
	}
	if _, ok, err := first.get(); err != nil || !ok {
		if err == nil {
			s.clearDir(tagCellDir, st.coords) // listed, but empty
		}
		return err
	}
	return s.shapeHeads(st.coords, noDir)
}

// straddleStep is what straddlingCell's scan does with the next entry of
// its cell, e at p, counting the entries it reads in n: whether it reads
// on, and whether it takes this one (offers it, and stops).
func (s *indexSearch) straddleStep(e kv.KeyValue, p pos, n *int) (next, take bool, err error) {
	if s.found && !better(p, s.best, s.order) {
		return false, false, nil // nothing further in this cell can win
	}
	if *n++; *n > straddleBudget {
		return false, false, nil
	}
	if err := decodeInts(e.Value, s.res); err != nil {
		return false, false, err
	}
	if !fits(s.res, s.limits) || s.pk.claimed(p) {
		return true, false, nil
	}
	return false, true, nil
}

// topAbove reports whether st's highest priority is above the best found,
// so that its scan reads that priority whole unless an entry fits: where
// scanStraddleMax pays. (A scan whose first entry cannot win reads one.)
func (s *indexSearch) topAbove(st *straddleRead) bool {
	e, ok, err := st.top.get()
	if err != nil || !ok {
		return false // the scan says
	}
	p, err := decodeEntry(st.prefix, e.Key)
	return err == nil && (!s.found || p.prio > s.best.prio)
}

// levelBuffer is the most entries of one priority scanStraddleMax holds:
// a larger level it reads as scanEntries does, from its first entry, as
// the scan mostly stops a few entries into it.
const levelBuffer = 16

// scanStraddleMax is scanEntries of the straddling cell st in Max order
// through x, for a pick whose reads are answered when issued and that
// records no claims (pk.cr nil): it makes the same reads' answers and
// read conflicts from one reverse read of the cell through the snapshot,
// where scanEntries makes two reads a priority (the last entry below the
// priority before, then the priority's entries in key order), each a
// seek into the B-tree. It reads a priority whole before its first entry,
// so a priority of more than levelBuffer entries, and the ones below it,
// it leaves to scanEntries's reads. The conflicts it adds to x are those
// of scanEntries's reads: the first (x.one, which recorded its own) aside,
// for each priority the last entry below the priority before, through to
// it, and the priority from its start to the entry the scan stopped at,
// or whole.
func (s *indexSearch) scanStraddleMax(x *knownReader, st *straddleRead, fn func(kv.KeyValue, pos) (bool, error)) (bool, error) {
	prefix := st.prefix
	all := kv.PrefixRange(prefix)
	under := func(p pos) []byte { return tuple.AppendInt(bytes.Clone(prefix), p.prio) }
	decode := func(k []byte) (pos, error) { return decodeEntry(prefix, k) }
	visit := func(r kv.Range) (bool, error) { return visitRange(x, r, decode, fn) }

	it := s.pk.snapshot().GetRange(all, kv.RangeOptions{Reverse: true})
	buf := s.mem.levelRows[:0]
	defer func() { clear(buf); s.mem.levelRows = buf[:0] }()
	end := all.End
	var next kv.KeyValue // the first entry of the next priority down, read already
	have := false
	for first := true; ; first = false {
		if !have {
			if !it.Next() {
				if err := it.Err(); err != nil {
					return true, err
				}
				// Nothing below end: the read of the last entry below it
				// found none, and covered [begin, end).
				if !first {
					x.covered = append(x.covered, kv.Range{Begin: all.Begin, End: end})
				}
				return false, nil
			}
			next = it.KeyValue()
		}
		p, err := decode(next.Key)
		if err != nil {
			return true, err
		}
		// The read of the last entry below end found next, through end.
		if !first {
			x.covered = append(x.covered, kv.Range{Begin: next.Key, End: end})
		}
		r := kv.PrefixRange(under(p))
		buf, have = append(buf[:0], next), false
		for len(buf) <= levelBuffer {
			if !it.Next() {
				if err := it.Err(); err != nil {
					return true, err
				}
				break
			}
			e := it.KeyValue()
			if bytes.Compare(e.Key, r.Begin) < 0 {
				next, have = e, true
				break
			}
			buf = append(buf, e)
		}
		if len(buf) > levelBuffer {
			// Too many to hold: this priority and those below as
			// scanEntries reads them.
			if stopped, err := visit(r); stopped || err != nil {
				return stopped, err
			}
			return scanLevelsBelow(x, all.Begin, r.Begin, visit, decode, under)
		}
		for i := len(buf) - 1; i >= 0; i-- {
			e := buf[i]
			p, err := decode(e.Key)
			if err != nil {
				return true, err
			}
			more, err := fn(e, p)
			if err != nil {
				return true, err
			}
			if !more {
				x.covered = append(x.covered, kv.Range{Begin: r.Begin, End: kv.KeyAfter(e.Key)})
				return true, nil
			}
		}
		x.covered = append(x.covered, r)
		end = r.Begin
	}
}
