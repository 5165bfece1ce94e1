package queues

import (
	"container/heap"
	"slices"

	"github.com/fdbqueue/fdbqueue/kv"
)

// PopFitN removes and returns up to n items whose every resource is at most
// its limit, in order: the items that n calls to PopFit in one transaction
// would return, in the same order, with the same guarantee that a pop
// conflicts with a concurrent push of a task it should have returned. It
// reads the queue once: each call to PopFit would search from the head
// again, past the items the earlier calls removed, which makes n pops cost
// O(n²) in one transaction.
//
// It runs PopFit's two steps once each. Step 1 reads items in queue order,
// collecting those that fit, until it has n or has passed scanBudget that do
// not fit. Step 2 merges the fit index: a cursor per fitting cell (or, for a
// cell that straddles a limit and holds more than straddleBudget entries
// that do not fit, per fitting shape) reads its entries in queue order, a
// batch at a time, and a heap of the cursors' heads yields the best entry
// each time.
func (q *Queue) PopFitN(tr kv.Transaction, order Order, limits []int64, n int) ([]Item, error) {
	if err := q.checkResources(limits, "limits"); err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, nil
	}
	pr := q.promotion(tr, false)
	ahead := q.readFitAhead(tr, order, limits, n)
	moved, err := pr.finish(tr)
	if err != nil {
		return nil, err
	}
	if moved {
		ahead = nil // promote's moves land where it read
	}
	items, poss, err := q.findFitNAhead(tr, removing, order, limits, n, ahead)
	if err != nil {
		return nil, err
	}
	q.removeAll(tr, poss, items)
	return items, nil
}

// findFitN returns the items PopFitN takes, with their positions, without
// removing them; it claims them (see pick).
func (q *Queue) findFitN(tr kv.Transaction, mode pickMode, order Order, limits []int64, n int) ([]Item, []pos, error) {
	return q.findFitNAhead(tr, mode, order, limits, n, nil)
}

// findFitNAhead is findFitN with what was read ahead (nil: nothing).
func (q *Queue) findFitNAhead(tr kv.Transaction, mode pickMode, order Order, limits []int64, n int, ahead *fitAhead) ([]Item, []pos, error) {
	if err := q.checkResources(limits, "limits"); err != nil {
		return nil, nil, err
	}
	pk := q.newFitPick(tr, mode)
	pk.ahead = ahead
	var hint [10 * maxIntLen]byte
	key := hintKey(hint[:], order, limits, n)
	var dir *dirAhead
	if ahead != nil {
		dir = ahead.dir
	} else if q.hints.missedLast(key) {
		// The last such choice turned to the index: its first read goes
		// with step 1's, in the same round.
		dir = q.readCellDir(pk, limits)
	}
	items, poss, complete, err := q.scanFits(pk, order, limits, n, scanBudget)
	if err != nil {
		return nil, nil, err
	}
	q.hints.record(key, len(items) < n && !complete)
	if len(items) < n && !complete {
		var after *pos
		if len(poss) > 0 {
			after = &poss[len(poss)-1]
		} else {
			pk.forget() // step 2 alone decides: step 1's reads need no read conflicts
		}
		m := &fitMerge{q: q, pk: pk, tr: pk.rd, order: order, limits: limits, after: after, want: n - len(items), heads: cursorHeap{order: order}, dir: dir}
		more, err := m.run()
		if err != nil {
			return nil, nil, err
		}
		for _, p := range more {
			pk.claimNow(p) // at once, as findFit does; best effort
		}
		// The items, in one round.
		keys := make([][]byte, len(more))
		for i, p := range more {
			keys[i] = q.itemKey(p)
		}
		vals, err := kv.GetMany(pk.rd, keys)
		if err != nil {
			return nil, nil, err
		}
		for i, p := range more {
			it, err := q.fittingValue(keys[i], vals[i], p, limits)
			if err != nil {
				return nil, nil, err
			}
			pk.claim(p, it.Resources)
			items, poss = append(items, it), append(poss, p)
		}
	}
	return items, poss, pk.done()
}

// fitMerge is step 2 of a multi-row fit pop: the best fitting index
// entries, in queue order, through a heap of cursors.
//
// It reads in rounds, as a single fit pop's search does (bestFromIndex):
// the cell directory in one read; then every cursor's first batch at once
// (in Max order of a priority queue, first every cell's last entry, which
// gives its highest priority), and again for the cursors that need
// another batch to find their first entry; the shapes of the straddling
// cells past their budget likewise (their directories in one round, then
// their cursors). When a cursor runs out of entries in the middle of its
// range, the merge reads its next batches, and in the same round those of
// the cursors it may run out of next (readAhead); the caller reads the
// items it chose in one round. Every read is the one it made one after
// another, or a read ahead through the snapshot that the pick records only
// for the batches the cursors take, so the rows and read conflicts are the
// same.
type fitMerge struct {
	q      *Queue
	pk     *pick
	tr     kv.ReadTransaction // pk.rd
	order  Order
	limits []int64
	after  *pos      // entries at or before it were taken by step 1
	want   int       // how many entries are still wanted
	dir    *dirAhead // the cell directory's read, if issued already

	heads cursorHeap
}

// run returns up to m.want fitting entries, best first.
func (m *fitMerge) run() ([]pos, error) {
	if err := m.openCells(); err != nil {
		return nil, err
	}
	var out []pos
	for len(m.heads.cs) > 0 {
		c := m.heads.cs[0]
		if out = append(out, c.head); len(out) == m.want {
			break // reading on would only widen the read conflicts
		}
		ok, stalled, err := c.advance(m.tr, true)
		if stalled && err == nil {
			if c.from != nil {
				m.readAhead(len(out))
			}
			// (In Max order, at the end of a priority, the cursor reads
			// the next priority's last entry first, then its batch.)
			ok, _, err = c.advance(m.tr, false)
		}
		if err != nil {
			return nil, err
		}
		if ok {
			heap.Fix(&m.heads, 0)
			continue
		}
		heap.Pop(&m.heads)
		if c.overBudget {
			if err := m.openShapes([]*cursor{c}); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// readAhead reads ahead the next batches of the merge's best cursor, which
// ran out of entries in the middle of its range, and in the same round
// those of every other cursor the merge may run out of: it goes on merging,
// without reading, over the rows the cursors hold, for as many entries as
// the merge still wants (have so far) up to aheadHorizon, leaving the best
// cursor out (what its next batch holds is not known yet), and reads ahead
// for each cursor it runs out of. What is read ahead goes through the
// snapshot: the pick records a batch only if the cursor takes it
// (cursor.takeAhead).
func (m *fitMerge) readAhead(have int) {
	m.heads.cs[0].readAhead(m.pk.snapshot(), m.want-have)
	rest := simHeap{order: m.order, ss: make([]simCursor, 0, len(m.heads.cs)-1)}
	for _, c := range m.heads.cs[1:] {
		rest.ss = append(rest.ss, simCursor{c: c, head: c.head, bi: c.bi, budget: c.budget})
		rest.at = append(rest.at, len(rest.at))
	}
	heap.Init(&rest)
	for steps := min(m.want-have, aheadHorizon); len(rest.at) > 0 && steps > 0; steps-- {
		s := &rest.ss[rest.at[0]] // its head is the merge's next entry
		for {
			if s.bi == len(s.c.batch) {
				s.c.readAhead(m.pk.snapshot(), m.want-have)
				heap.Pop(&rest)
				break
			}
			p, take, giveUp, err := s.c.step(s.c.batch[s.bi], &s.budget)
			s.bi++
			if err != nil || giveUp {
				heap.Pop(&rest) // the merge will say
				break
			}
			if take {
				s.head = p
				heap.Fix(&rest, 0)
				break
			}
		}
	}
}

// aheadHorizon is the most entries readAhead merges without reading.
const aheadHorizon = 4096

// simCursor is a cursor's place in readAhead's merge without reads.
type simCursor struct {
	c      *cursor
	head   pos
	bi     int
	budget int
}

// simHeap orders the cursors of readAhead's merge (at: indexes into ss) by
// their heads, best first.
type simHeap struct {
	ss    []simCursor
	at    []int
	order Order
}

func (h *simHeap) Len() int           { return len(h.at) }
func (h *simHeap) Less(i, j int) bool { return better(h.ss[h.at[i]].head, h.ss[h.at[j]].head, h.order) }
func (h *simHeap) Swap(i, j int)      { h.at[i], h.at[j] = h.at[j], h.at[i] }
func (h *simHeap) Push(x any)         { h.at = append(h.at, x.(int)) }
func (h *simHeap) Pop() any {
	i := h.at[len(h.at)-1]
	h.at = h.at[:len(h.at)-1]
	return i
}

// openCells opens a cursor on every cell whose lower corner fits (see
// bestFromIndex): an unfiltered one on a cell wholly inside the limits,
// one that skips the entries that do not fit on a cell that straddles a
// limit.
func (m *fitMerge) openCells() error {
	if m.dir == nil {
		m.dir = m.q.readCellDir(m.pk, m.limits)
	}
	dir := m.dir
	m.dir = nil // scanned once, then given back (dirAhead.scan)
	var cs []*cursor
	if err := dir.scan(m.pk, func(cell []int64) error {
		c := m.newCursor(tagCells, tagCellDir, cell, m.after)
		if m.q.cells.straddles(cell, m.limits) {
			c.limits, c.budget = m.limits, straddleBudget
		}
		cs = append(cs, c)
		return nil
	}); err != nil {
		return err
	}
	return m.open(cs)
}

// openShapes replaces the cursors of straddling cells that passed their
// budget with cursors on the cells' fitting shapes, which skip what the
// cell's cursor already read.
func (m *fitMerge) openShapes(cells []*cursor) error {
	dirs := make([]*dirAhead, len(cells))
	for i, cell := range cells {
		lo, hi := make([]int64, len(cell.coords)), make([]int64, len(cell.coords))
		for j, c := range cell.coords {
			lo[j], hi[j] = c, min(m.q.cells.high(c), m.limits[j])
		}
		dirs[i] = readBox(m.pk, m.q.sub[tagShapeDir], lo, hi)
	}
	var cs []*cursor
	for i, cell := range cells {
		after := m.after
		if cell.read != nil && (after == nil || better(*after, *cell.read, m.order)) {
			after = cell.read
		}
		if err := dirs[i].scan(m.pk, func(shape []int64) error {
			cs = append(cs, m.newCursor(tagShapes, tagShapeDir, shape, after))
			return nil
		}); err != nil {
			return err
		}
	}
	return m.open(cs)
}

func (m *fitMerge) newCursor(tag, dirTag int, coords []int64, after *pos) *cursor {
	return &cursor{
		prefix:   m.q.key(tag, coords...),
		maxFirst: m.q.kind == Priority && m.order == Max,
		order:    m.order,
		dirTag:   dirTag,
		coords:   slices.Clone(coords),
		pk:       m.pk,
		after:    after,
		size:     min(m.want, firstBatch),
		res:      make([]int64, len(m.limits)),
	}
}

// open reads each cursor's first entry, in rounds of one read of every
// cursor that needs one, and adds it to the heap; a cell or shape found
// empty has its directory key cleared (see bestFromIndex), and the cells
// that gave up are replaced by their shapes.
func (m *fitMerge) open(cs []*cursor) error {
	waiting := slices.Clone(cs)
	for round := 0; len(waiting) > 0; round++ {
		for _, c := range waiting {
			if round == 0 && m.pk.readsAhead() && c.openAhead(m.pk.snapshot(), m.want) {
				continue
			}
			c.issue(m.tr)
		}
		n := 0
		for _, c := range waiting {
			ok, stalled, err := c.advance(m.tr, true)
			switch {
			case err != nil:
				return err
			case stalled:
				waiting[n] = c
				n++
			case ok:
				c.opened = true
			}
		}
		waiting = waiting[:n]
	}
	var over []*cursor
	for _, c := range cs {
		switch {
		case c.opened:
			heap.Push(&m.heads, c)
		case c.read == nil:
			if m.pk.tr != nil {
				m.q.clearDir(m.pk.tr, m.q.key(c.dirTag, c.coords...)) // listed, but empty
			}
		case c.overBudget:
			over = append(over, c)
		}
	}
	if len(over) == 0 {
		return nil
	}
	return m.openShapes(over)
}
