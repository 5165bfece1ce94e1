package queues

import (
	"fmt"

	"github.com/fdbqueue/fdbqueue/kv"
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
	return it, true, q.remove(tr, p, it)
}

// findFit finds the item a fit pop takes, and claims it (see pick).
func (q *Queue) findFit(pk *pick, order Order, limits []int64) (Item, pos, bool, error) {
	if err := q.checkResources(limits, "limits"); err != nil {
		return Item{}, pos{}, false, err
	}
	// Step 1: the first items in queue order, as many as the hint for
	// these limits says.
	var hint [8 * maxIntLen]byte
	key := hintKey(hint[:], order, limits, 0)
	budget := q.hints.budget(key)
	var dir *dirAhead
	if budget == sedimentBudget {
		// Step 1 found nothing last time: the index's first read goes
		// with step 1's, in the same round.
		dir = q.readCellDir(pk, limits)
	}
	items, poss, complete, err := q.scanFits(pk, order, limits, 1, budget)
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
	best, ok, err := q.bestFromIndex(pk, order, limits, dir)
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
	return q.fittingValue(k, v, p, limits)
}

// fittingValue decodes the item the fit index names at p, with key k and
// value v (nil: absent), and checks that it is queued and fits.
func (q *Queue) fittingValue(k, v []byte, p pos, limits []int64) (Item, error) {
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
