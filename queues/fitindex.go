package queues

import (
	"bytes"
	"math"
	"slices"

	"github.com/fdbqueue/fdbqueue/kv"
)

// straddleBudget is how many entries of a cell straddling a limit a fit pop
// reads in queue order before it resolves the cell through its exact shapes.
const straddleBudget = 64

// bestFromIndex finds the best fitting task through the cell and shape
// directories, in two stages: wholeCells offers the heads of the cells
// wholly inside the limits, then straddlingCell resolves each cell that
// straddles a limit.
//
// A listed cell or shape that turns out empty has its directory key cleared
// when the search runs in a pop; the read that found it empty is in the
// read conflicts, so a concurrent push into it conflicts with the clear. A
// cell or shape that holds only entries of claimed items is not empty.
//
// The best entry it returns is not claimed by another attempt (when it
// looked); the caller claims it.
func (q *Queue) bestFromIndex(pk *pick, order Order, limits []int64) (pos, bool, error) {
	s := &indexSearch{q: q, pk: pk, tr: pk.rd, order: order, limits: limits, res: make([]int64, len(limits))}
	straddling, err := s.wholeCells()
	if err != nil {
		return pos{}, false, err
	}
	for _, cell := range straddling {
		if err := s.straddlingCell(cell); err != nil {
			return pos{}, false, err
		}
	}
	return s.best, s.found, nil
}

// indexSearch is one search of the fit index for the best fitting entry.
type indexSearch struct {
	q      *Queue
	pk     *pick
	tr     kv.ReadTransaction // pk.rd
	order  Order
	limits []int64

	best  pos  // the best fitting entry offered so far,
	found bool // if any

	res []int64 // scratch: an entry's resources
	buf []byte  // scratch: a cell's or shape's prefix
}

// offer makes p the best entry if it is better.
func (s *indexSearch) offer(p pos) {
	if !s.found || better(p, s.best, s.order) {
		s.best, s.found = p, true
	}
}

// wholeCells is the first stage: it skip-scans the cell directory for the
// cells whose lower corner fits, offers the head of each cell wholly inside
// the limits, and returns the cells that straddle a limit.
func (s *indexSearch) wholeCells() ([][]int64, error) {
	noMin := make([]int64, len(s.limits))
	for i := range noMin {
		noMin[i] = math.MinInt64
	}
	var straddling [][]int64
	err := skipScan(s.pk.dirs(), s.q.sub[tagCellDir], noMin, s.limits, func(cell []int64) error {
		if straddles(cell, s.limits) {
			straddling = append(straddling, slices.Clone(cell))
			return nil
		}
		return s.offerHead(tagCells, tagCellDir, cell)
	})
	return straddling, err
}

// straddles reports whether some of the cell's values exceed a limit.
func straddles(cell, limits []int64) bool {
	for i, c := range cell {
		if cellHigh(c) > limits[i] {
			return true
		}
	}
	return false
}

// straddlingCell is the second stage, for one cell that straddles a limit:
// it reads the cell in queue order, only as long as an entry can still beat
// the best found and at most straddleBudget entries, and offers the first
// entry that fits. Past the budget it offers the heads of the cell's
// fitting shapes instead.
func (s *indexSearch) straddlingCell(cell []int64) error {
	n := 0
	stopped, err := s.q.scanEntries(s.tr, s.q.key(tagCells, cell...), s.order, func(e kv.KeyValue, p pos) (bool, error) {
		if s.found && !better(p, s.best, s.order) {
			return false, nil // nothing further in this cell can win
		}
		if n++; n > straddleBudget {
			return false, nil
		}
		if err := decodeInts(e.Value, s.res); err != nil {
			return false, err
		}
		if !fits(s.res, s.limits) {
			return true, nil
		}
		if s.pk.claimed(p) {
			return true, nil
		}
		s.offer(p)
		return false, nil
	})
	switch {
	case err != nil:
		return err
	case !stopped && n == 0:
		s.clearDir(tagCellDir, cell) // listed, but empty
		return nil
	case !stopped || n <= straddleBudget:
		return nil
	}
	// Over budget: the cell's fitting shapes, exactly.
	lo, hi := make([]int64, len(cell)), make([]int64, len(cell))
	for i, c := range cell {
		lo[i], hi[i] = c, min(cellHigh(c), s.limits[i])
	}
	return skipScan(s.pk.dirs(), s.q.sub[tagShapeDir], lo, hi, func(shape []int64) error {
		return s.offerHead(tagShapes, tagShapeDir, shape)
	})
}

// offerHead offers the head of a cell or shape (coords, with entries under
// tag, listed under dirTag), or clears its directory key if it is empty.
func (s *indexSearch) offerHead(tag, dirTag int, coords []int64) error {
	var cutoff *pos
	if s.found {
		cutoff = &s.best
	}
	s.buf = appendInts(append(s.buf[:0], s.q.sub[tag]...), coords...)
	p, ok, err := s.q.head(s.tr, s.buf, s.order, cutoff)
	switch {
	case err != nil:
		return err
	case !ok:
		s.clearDir(dirTag, coords)
		return nil
	case cutoff != nil && !better(p, *cutoff, s.order):
		return nil // it cannot win, claimed or not
	case s.pk.claimed(p):
		if p, ok, err = s.unclaimedHead(cutoff); err != nil || !ok {
			return err
		}
	}
	s.offer(p)
	return nil
}

// unclaimedHead returns the best entry of the cell or shape under s.buf
// whose item no claim keeps the pick away from, if one beats cutoff.
func (s *indexSearch) unclaimedHead(cutoff *pos) (pos, bool, error) {
	var head pos
	found := false
	_, err := s.q.scanEntries(s.tr, s.buf, s.order, func(_ kv.KeyValue, p pos) (bool, error) {
		if cutoff != nil && !better(p, *cutoff, s.order) {
			return false, nil
		}
		if s.pk.claimed(p) {
			return true, nil
		}
		head, found = p, true
		return false, nil
	})
	return head, found, err
}

// clearDir clears the directory key under dirTag of a cell or shape found
// empty, when the search runs in a pop.
func (s *indexSearch) clearDir(dirTag int, coords []int64) {
	if s.pk.tr != nil {
		s.pk.tr.Clear(s.q.key(dirTag, coords...))
	}
}

// head returns the best index entry under prefix (a cell or a shape). In
// Max order that takes two reads: the last entry gives the highest
// priority, then the first entry of that priority is the oldest. When the
// highest priority is below cutoff's, no entry can beat cutoff, and head
// returns that last entry after one read: callers only compare it.
func (q *Queue) head(tr kv.ReadTransaction, prefix []byte, order Order, cutoff *pos) (pos, bool, error) {
	r := extending(prefix) // (the reads copy the range's keys they keep)
	if order == Max && q.kind == Priority {
		last, ok, err := kv.First(tr, r, true)
		if err != nil || !ok {
			return pos{}, false, err
		}
		lp, err := decodeEntry(prefix, last.Key)
		if err != nil {
			return pos{}, false, err
		}
		if cutoff != nil && lp.prio < cutoff.prio {
			// The read covered the cell from this entry to its end, so a
			// concurrent push of a higher priority conflicts.
			return lp, true, nil
		}
		r = extending(appendInts(bytes.Clone(prefix), lp.prio))
	}
	e, ok, err := kv.First(tr, r, false)
	if err != nil || !ok {
		return pos{}, false, err
	}
	p, err := decodeEntry(prefix, e.Key)
	return p, err == nil, err
}
