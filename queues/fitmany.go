package queues

import (
	"bytes"
	"container/heap"
	"math"
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
	if _, err := q.promote(tr); err != nil {
		return nil, err
	}
	items, poss, err := q.findFitN(tr, removing, order, limits, n)
	if err != nil {
		return nil, err
	}
	for i, it := range items {
		if err := q.remove(tr, poss[i], it.Resources); err != nil {
			return nil, err
		}
	}
	return items, nil
}

// findFitN returns the items PopFitN takes, with their positions, without
// removing them; it claims them (see pick).
func (q *Queue) findFitN(tr kv.Transaction, mode pickMode, order Order, limits []int64, n int) ([]Item, []pos, error) {
	if err := q.checkResources(limits, "limits"); err != nil {
		return nil, nil, err
	}
	pk := q.newPick(tr, mode)
	items, poss, complete, err := q.scanFits(pk, order, limits, n, scanBudget)
	if err != nil {
		return nil, nil, err
	}
	if len(items) < n && !complete {
		var after *pos
		if len(poss) > 0 {
			after = &poss[len(poss)-1]
		} else {
			pk.forget() // step 2 alone decides: step 1's reads need no read conflicts
		}
		m := &fitMerge{q: q, pk: pk, tr: pk.rd, order: order, limits: limits, after: after, want: n - len(items), heads: cursorHeap{order: order}}
		more, err := m.run()
		if err != nil {
			return nil, nil, err
		}
		for _, p := range more {
			it, err := q.fittingItem(pk.rd, p, limits)
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
type fitMerge struct {
	q      *Queue
	pk     *pick
	tr     kv.ReadTransaction // pk.rd
	order  Order
	limits []int64
	after  *pos // entries at or before it were taken by step 1
	want   int  // how many entries are still wanted

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
		ok, err := c.advance(m.tr)
		if err != nil {
			return nil, err
		}
		if ok {
			heap.Fix(&m.heads, 0)
			continue
		}
		heap.Pop(&m.heads)
		if c.overBudget {
			if err := m.openShapes(c); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// openCells opens a cursor on every cell whose lower corner fits (see
// wholeCells): an unfiltered one on a cell wholly inside the limits, one
// that skips the entries that do not fit on a cell that straddles a limit.
func (m *fitMerge) openCells() error {
	noMin := make([]int64, len(m.limits))
	for i := range noMin {
		noMin[i] = math.MinInt64
	}
	return skipScan(m.pk.dirs(), m.q.sub[tagCellDir], noMin, m.limits, func(cell []int64) error {
		c := m.newCursor(tagCells, tagCellDir, cell, m.after)
		if straddles(cell, m.limits) {
			c.limits, c.budget = m.limits, straddleBudget
		}
		return m.open(c)
	})
}

// openShapes replaces the cursor of a straddling cell that passed its
// budget with cursors on the cell's fitting shapes, which skip what the
// cell's cursor already read.
func (m *fitMerge) openShapes(cell *cursor) error {
	lo, hi := make([]int64, len(cell.coords)), make([]int64, len(cell.coords))
	for i, c := range cell.coords {
		lo[i], hi[i] = c, min(cellHigh(c), m.limits[i])
	}
	after := m.after
	if cell.read != nil && (after == nil || better(*after, *cell.read, m.order)) {
		after = cell.read
	}
	return skipScan(m.pk.dirs(), m.q.sub[tagShapeDir], lo, hi, func(shape []int64) error {
		return m.open(m.newCursor(tagShapes, tagShapeDir, shape, after))
	})
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

// open reads a cursor's first entry and adds it to the heap; a cell or
// shape found empty has its directory key cleared (see bestFromIndex).
func (m *fitMerge) open(c *cursor) error {
	ok, err := c.advance(m.tr)
	switch {
	case err != nil:
		return err
	case ok:
		heap.Push(&m.heads, c)
	case c.read == nil:
		if m.pk.tr != nil {
			m.pk.tr.Clear(m.q.key(c.dirTag, c.coords...)) // listed, but empty
		}
	case c.overBudget:
		return m.openShapes(c)
	}
	return nil
}

// Batch sizes of a cursor's reads: the first is small (a pop of a few rows
// wants a few entries of each cell), later ones double, up to maxBatch.
const (
	firstBatch = 8
	maxBatch   = 1024
)

// cursor reads the fit index entries under one cell or shape in queue
// order, a batch at a time, each batch one complete range read (so that
// cursors never hold iterators open). Its reads are serializable and cover
// the entries from the start of the cell or shape to its head in queue
// order, so a concurrent push of a better entry conflicts.
type cursor struct {
	prefix   []byte // the entries' prefix: P (tag, coords...)
	maxFirst bool   // queue order is priorities from the highest down
	order    Order
	dirTag   int     // the directory listing the cell or shape,
	coords   []int64 // under these coordinates

	limits     []int64 // if set, entries that do not fit are skipped,
	budget     int     // at most this many,
	overBudget bool    // past which the cursor stops
	res        []int64 // scratch: an entry's resources

	pk *pick // entries of items other attempts claimed are passed over

	after *pos // entries at or before it are skipped
	head  pos  // the entry advance found
	read  *pos // the last entry read, if any

	// Reading state: the range left to read, [from, end): the whole cell
	// or shape, or in Max order its current priority (from is nil when the
	// next range is still to be found); levels, in Max order, ends the
	// priorities not visited yet.
	from, end, levels []byte
	done              bool
	batch             []kv.KeyValue
	bi                int
	size              int // the next batch's size
}

// advance moves the cursor to its next entry, and reports whether there
// was one; false with overBudget means the cursor gave up.
func (c *cursor) advance(tr kv.ReadTransaction) (bool, error) {
	for {
		if c.bi == len(c.batch) {
			if ok, err := c.refill(tr); !ok || err != nil {
				return false, err
			}
		}
		e := c.batch[c.bi]
		c.bi++
		p, err := decodeEntry(c.prefix, e.Key)
		if err != nil {
			return false, err
		}
		c.read = &p
		if c.after != nil && !better(*c.after, p, c.order) {
			continue
		}
		if c.limits != nil {
			if err := decodeInts(e.Value, c.res); err != nil {
				return false, err
			}
			if !fits(c.res, c.limits) {
				if c.budget--; c.budget < 0 {
					c.overBudget = true
					return false, nil
				}
				continue
			}
		}
		if c.pk.claimed(p) {
			continue
		}
		c.head = p
		return true, nil
	}
}

// refill reads the cursor's next batch, and reports whether it holds any
// entry.
func (c *cursor) refill(tr kv.ReadTransaction) (bool, error) {
	c.batch, c.bi = c.batch[:0], 0
	for !c.done {
		if c.from == nil {
			if err := c.nextRange(tr); err != nil || c.done {
				return false, err
			}
		}
		it := tr.GetRange(kv.Range{Begin: c.from, End: c.end}, kv.RangeOptions{Limit: c.size})
		for it.Next() {
			c.batch = append(c.batch, it.KeyValue())
		}
		if err := it.Err(); err != nil {
			return false, err
		}
		full := len(c.batch) == c.size
		c.size = min(2*c.size, maxBatch)
		if full {
			c.from = kv.KeyAfter(c.batch[len(c.batch)-1].Key)
			return true, nil
		}
		// The range is read to its end.
		c.from, c.done = nil, !c.maxFirst
		if len(c.batch) > 0 {
			return true, nil
		}
	}
	return false, nil
}

// nextRange finds the range the cursor reads next: the whole cell or
// shape, or in Max order the entries of its highest priority not visited
// yet. It sets done when there is none.
func (c *cursor) nextRange(tr kv.ReadTransaction) error {
	all := extending(c.prefix)
	if !c.maxFirst {
		c.from, c.end = all.Begin, all.End
		return nil
	}
	if c.levels == nil {
		c.levels = all.End
	}
	last, ok, err := kv.First(tr, kv.Range{Begin: all.Begin, End: c.levels}, true)
	if err != nil || !ok {
		c.done = true
		return err
	}
	p, err := decodeEntry(c.prefix, last.Key)
	if err != nil {
		return err
	}
	level := extending(appendInts(bytes.Clone(c.prefix), p.prio))
	c.from, c.end, c.levels = level.Begin, level.End, level.Begin
	return nil
}

// cursorHeap orders cursors by their heads, best first.
type cursorHeap struct {
	cs    []*cursor
	order Order
}

func (h *cursorHeap) Len() int           { return len(h.cs) }
func (h *cursorHeap) Less(i, j int) bool { return better(h.cs[i].head, h.cs[j].head, h.order) }
func (h *cursorHeap) Swap(i, j int)      { h.cs[i], h.cs[j] = h.cs[j], h.cs[i] }
func (h *cursorHeap) Push(x any)         { h.cs = append(h.cs, x.(*cursor)) }
func (h *cursorHeap) Pop() any {
	c := h.cs[len(h.cs)-1]
	h.cs = h.cs[:len(h.cs)-1]
	return c
}
