package queues

import (
	"bytes"
	"fmt"
	"math"
	"slices"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// scanBudget is how many items a fit pop reads in queue order before it
// turns to the index. Reading an item inside a batched range read costs
// about a tenth of an index head read, and a fit pop through the index reads
// one head per fitting cell, so the scan pays while a fit is likely among
// the first hundred or so items.
const scanBudget = 128

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
// its limit, without removing it.
func (q *Queue) PeekFit(tr kv.ReadTransaction, order Order, limits []int64) (Item, bool, error) {
	it, _, ok, err := q.findFit(tr, order, limits)
	return it, ok, err
}

// PopFit removes and returns the first item in order whose every resource is
// at most its limit. limits are in the order of the queue's resources.
func (q *Queue) PopFit(tr kv.Transaction, order Order, limits []int64) (Item, bool, error) {
	it, p, ok, err := q.findFit(tr, order, limits)
	if err != nil || !ok {
		return Item{}, false, err
	}
	return it, true, q.remove(tr, p, it.Resources)
}

func (q *Queue) findFit(tr kv.ReadTransaction, order Order, limits []int64) (Item, pos, bool, error) {
	if err := q.checkResources(limits, "limits"); err != nil {
		return Item{}, pos{}, false, err
	}
	// Step 1: the first items in queue order.
	var found Item
	var foundPos pos
	var ok bool
	n := 0
	res := make([]int64, len(limits))
	stopped, err := q.scan(tr, order, func(e kv.KeyValue, p pos) (bool, error) {
		// Only the resources, without allocating, for items that do not fit.
		if err := decodeResources(e.Value, res, p.id); err != nil {
			return false, err
		}
		if fits(res, limits) {
			it, _, err := q.decodeItem(e.Key, e.Value)
			found, foundPos, ok = it, p, err == nil
			return false, err
		}
		n++
		return n < scanBudget, nil
	})
	if err != nil || ok || !stopped {
		// Found, failed, or the whole queue was read.
		return found, foundPos, ok, err
	}
	// Step 2: the index.
	best, ok, err := q.bestFromIndex(tr, order, limits)
	if err != nil || !ok {
		return Item{}, pos{}, false, err
	}
	v, err := tr.Get(q.itemKey(best))
	if err != nil {
		return Item{}, pos{}, false, err
	}
	if v == nil {
		return Item{}, pos{}, false, fmt.Errorf("%w: fit index names item %d, which is not queued", ErrCorrupt, best.id)
	}
	it, p, err := q.decodeItem(q.itemKey(best), v)
	if err != nil {
		return Item{}, pos{}, false, err
	}
	if !fits(it.Resources, limits) {
		return Item{}, pos{}, false, fmt.Errorf("%w: fit index files item %d under resources it does not have", ErrCorrupt, best.id)
	}
	return it, p, true, nil
}

// straddleBudget is how many entries of a cell straddling a limit a fit pop
// reads in queue order before it resolves the cell through its exact shapes.
const straddleBudget = 64

// bestFromIndex finds the best fitting task through the cell and shape
// directories. Cells wholly inside the limits give their heads first; then
// each cell straddling a limit is read in queue order, only as far as it can
// still beat the best head found, and at most straddleBudget entries, past
// which its fitting shapes are visited instead.
//
// A listed cell or shape that turns out empty has its directory key cleared
// when tr is writable (a pop); the read that found it empty was
// serializable, so a concurrent push into it conflicts with the clear.
func (q *Queue) bestFromIndex(tr kv.ReadTransaction, order Order, limits []int64) (pos, bool, error) {
	d := len(limits)
	var best pos
	found := false
	offer := func(p pos) {
		if !found || better(p, best, order) {
			best, found = p, true
		}
	}
	wtr, writable := tr.(kv.Transaction)
	// consider reads the head of a cell (or shape: entries under tag,
	// listed under dirTag).
	var buf []byte
	consider := func(tag, dirTag int, coords []int64) error {
		var cutoff *pos
		if found {
			cutoff = &best
		}
		buf = appendInts(append(buf[:0], q.sub[tag]...), coords...)
		p, ok, err := q.head(tr, buf, order, cutoff)
		if ok {
			offer(p)
		} else if err == nil && writable {
			wtr.Clear(q.key(dirTag, coords...))
		}
		return err
	}
	noMin := make([]int64, d)
	for i := range noMin {
		noMin[i] = math.MinInt64
	}
	var straddling [][]int64
	err := skipScan(tr, q.sub[tagCellDir], noMin, limits, func(cell []int64) error {
		for i, c := range cell {
			if cellHigh(c) > limits[i] {
				straddling = append(straddling, slices.Clone(cell))
				return nil
			}
		}
		return consider(tagCells, tagCellDir, cell)
	})
	if err != nil {
		return pos{}, false, err
	}
	res := make([]int64, d)
	for _, cell := range straddling {
		prefix := q.key(tagCells, cell...)
		n := 0
		stopped, err := scanOrdered(tr, prefix, q.kind == Priority && order == Max,
			func(k []byte) (pos, error) { return decodeEntry(prefix, k) },
			func(p pos) []byte { return tuple.AppendInt(bytes.Clone(prefix), p.prio) },
			func(e kv.KeyValue, p pos) (bool, error) {
				if found && !better(p, best, order) {
					return false, nil // nothing further in this cell can win
				}
				if n++; n > straddleBudget {
					return false, nil
				}
				if err := decodeInts(e.Value, res); err != nil {
					return false, err
				}
				if fits(res, limits) {
					offer(p)
					return false, nil
				}
				return true, nil
			})
		if err != nil {
			return pos{}, false, err
		}
		if !stopped && n == 0 && writable {
			wtr.Clear(q.key(tagCellDir, cell...)) // listed, but empty
		}
		if !stopped || n <= straddleBudget {
			continue
		}
		// Over budget: the cell's fitting shapes, exactly.
		lo, hi := make([]int64, d), make([]int64, d)
		for i, c := range cell {
			lo[i], hi[i] = c, min(cellHigh(c), limits[i])
		}
		err = skipScan(tr, q.sub[tagShapeDir], lo, hi, func(shape []int64) error {
			return consider(tagShapes, tagShapeDir, shape)
		})
		if err != nil {
			return pos{}, false, err
		}
	}
	return best, found, nil
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

// skipScan calls fn for every key base+(v_1, ..., v_d) with mins[i] <= v_i <=
// maxs[i], reading one small range per distinct prefix instead of every key.
func skipScan(tr kv.ReadTransaction, base []byte, mins, maxs []int64, fn func([]int64) error) error {
	cur := make([]int64, 0, len(mins))
	return skipScanDim(tr, base, 0, mins, maxs, cur, fn)
}

func skipScanDim(tr kv.ReadTransaction, base []byte, dim int, mins, maxs, cur []int64, fn func([]int64) error) error {
	if mins[dim] > maxs[dim] {
		return nil
	}
	from := tuple.AppendInt(bytes.Clone(base), mins[dim])
	upTo := tuple.AppendInt(bytes.Clone(base), maxs[dim])
	if dim == len(mins)-1 {
		it := tr.GetRange(kv.Range{Begin: from, End: kv.KeyAfter(upTo)}, kv.RangeOptions{})
		for it.Next() {
			v, _, err := tuple.DecodeInt(it.KeyValue().Key[len(base):])
			if err != nil {
				return err
			}
			if err := fn(append(cur, v)); err != nil {
				return err
			}
		}
		return it.Err()
	}
	end := extending(upTo).End
	for {
		e, ok, err := kv.First(tr, kv.Range{Begin: from, End: end}, false)
		if err != nil || !ok {
			return err
		}
		v, _, err := tuple.DecodeInt(e.Key[len(base):])
		if err != nil {
			return err
		}
		next := tuple.AppendInt(bytes.Clone(base), v)
		if err := skipScanDim(tr, next, dim+1, mins, maxs, append(cur, v), fn); err != nil {
			return err
		}
		from = extending(next).End
	}
}
