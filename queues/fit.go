package queues

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/fdbqueue/fdbqueue/kv"
)

// scanBudget is how many items a fit pop reads in queue order before it
// turns to the index. Reading an item inside a batched range read costs
// about a tenth of an index head read, and a fit pop through the index reads
// one head per fitting cell, so the scan pays while a fit is likely among
// the first hundred or so items.
const scanBudget = 128

// sedimentBudget is step 1's budget for limits whose last fit pop found
// nothing there (see fitHints).
const sedimentBudget = 16

// fitHints remembers, per consumer limits, whether step 1 of the last fit
// pop with those limits found its item. Under a mix of consumers the head
// of a queue fills with tasks that only large consumers take (sediment):
// a small consumer then reads scanBudget items for nothing before every
// index search. After such a miss the next pop with the same limits reads
// only sedimentBudget items; a hit there restores the full budget. Hints
// only choose how much step 1 reads: the answer is the same either way,
// as step 2 is exact.
type fitHints struct {
	mu     sync.Mutex
	missed map[string]bool // by packed limits
}

// maxHints bounds the limits remembered: past it the hints start over.
const maxHints = 4096

func (h *fitHints) budget(key []byte) int {
	if h == nil {
		return scanBudget
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.missed[string(key)] {
		return sedimentBudget
	}
	return scanBudget
}

func (h *fitHints) record(key []byte, missed bool) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.missed[string(key)] == missed {
		return
	}
	if h.missed == nil || len(h.missed) >= maxHints {
		h.missed = map[string]bool{}
	}
	h.missed[string(key)] = missed
}

// fits reports whether every resource is within its limit.
func fits(res, limits []int64) bool {
	for i, r := range res {
		if r > limits[i] {
			return false
		}
	}
	return true
}

// PeekFit returns the first item in order whose every resource is at most
// its limit, visible or not, without removing it. Its cost, unlike
// PopFit's, grows with the number of invisible items: it reads them in
// order until one fits.
func (q *Queue) PeekFit(tr kv.ReadTransaction, order Order, limits []int64) (Item, bool, error) {
	it, p, ok, err := q.findFit(q.newPick(tr, peeking), order, limits)
	if err != nil {
		return Item{}, false, err
	}
	res := make([]int64, len(limits))
	_, err = q.scanUnder(tr, tagHidden, order, func(e kv.KeyValue, hp pos) (bool, error) {
		if ok && !better(hp, p, order) {
			return false, nil
		}
		if err := decodeResources(e.Value, res, hp.id); err != nil {
			return false, err
		}
		if !fits(res, limits) {
			return true, nil
		}
		hit, _, err := q.decodeItemUnder(tagHidden, e.Key, e.Value)
		if err != nil {
			return false, err
		}
		it, ok = hit, true
		return false, nil
	})
	return it, ok, err
}

// PopFit removes and returns the first visible item in order whose every
// resource is at most its limit, after moving the items due by now back
// to their places (see lease.go). limits are in the order of the queue's
// resources. In an Attempt it passes over the items other attempts
// claimed (see claims.go).
func (q *Queue) PopFit(tr kv.Transaction, order Order, limits []int64) (Item, bool, error) {
	if _, err := q.promote(tr); err != nil {
		return Item{}, false, err
	}
	it, p, ok, err := q.findFit(q.newPick(tr, removing), order, limits)
	if err != nil || !ok {
		return Item{}, false, err
	}
	return it, true, q.remove(tr, p, it.Resources)
}

// findFit finds the item a fit pop takes, and claims it (see pick).
func (q *Queue) findFit(pk *pick, order Order, limits []int64) (Item, pos, bool, error) {
	if err := q.checkResources(limits, "limits"); err != nil {
		return Item{}, pos{}, false, err
	}
	// Step 1: the first items in queue order, as many as the hint for
	// these limits says.
	var hint [8 * maxIntLen]byte
	key := appendInts(append(hint[:0], byte(order)), limits...)
	items, poss, complete, err := q.scanFits(pk, order, limits, 1, q.hints.budget(key))
	if err == nil {
		q.hints.record(key, len(items) == 0 && !complete)
	}
	switch {
	case err != nil:
		return Item{}, pos{}, false, err
	case len(items) > 0:
		return items[0], poss[0], true, pk.done()
	case complete:
		return Item{}, pos{}, false, pk.done() // the whole queue was read
	}
	// Step 2: the index, which alone decides the answer: what step 1 read
	// needs no read conflicts.
	pk.forget()
	best, ok, err := q.bestFromIndex(pk, order, limits)
	if err != nil || !ok {
		if err == nil {
			err = pk.done()
		}
		return Item{}, pos{}, false, err
	}
	it, err := q.fittingItem(pk.rd, best, limits)
	if err != nil {
		return Item{}, pos{}, false, err
	}
	pk.claim(best, it.Resources)
	return it, best, true, pk.done()
}

// scanFits is step 1 of a fit pop: it reads items in queue order and
// returns the first of them that fit, up to n, stopping once budget items
// did not fit; it passes over the items other attempts claimed, and
// claims those it returns. complete reports that it read the whole queue.
func (q *Queue) scanFits(pk *pick, order Order, limits []int64, n, budget int) (items []Item, poss []pos, complete bool, err error) {
	misses := 0
	res := make([]int64, len(limits))
	stopped, err := q.scan(pk.rd, order, func(e kv.KeyValue, p pos) (bool, error) {
		// Only the resources, without allocating, for items that do not fit.
		if err := decodeResources(e.Value, res, p.id); err != nil {
			return false, err
		}
		if !fits(res, limits) {
			misses++
			return misses < budget, nil
		}
		if !pk.take(p, res) {
			return true, nil // claimed: the next
		}
		it, _, err := q.decodeItem(e.Key, e.Value)
		if err != nil {
			return false, err
		}
		items, poss = append(items, it), append(poss, p)
		return len(items) < n, nil
	})
	return items, poss, !stopped, err
}

// fittingItem reads the item the fit index names at p, and checks that it
// is queued and fits.
func (q *Queue) fittingItem(tr kv.ReadTransaction, p pos, limits []int64) (Item, error) {
	k := q.itemKey(p)
	v, err := tr.Get(k)
	if err != nil {
		return Item{}, err
	}
	if v == nil {
		return Item{}, fmt.Errorf("%w: fit index names item %d, which is not queued", ErrCorrupt, p.id)
	}
	it, _, err := q.decodeItem(k, v)
	if err != nil {
		return Item{}, err
	}
	if !fits(it.Resources, limits) {
		return Item{}, fmt.Errorf("%w: fit index files item %d under resources it does not have", ErrCorrupt, p.id)
	}
	return it, nil
}

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
