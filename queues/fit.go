package queues

import (
	"fmt"
	"math"

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
	if err := q.checkResources(limits, "limits"); err != nil {
		return Item{}, false, err
	}
	pr := q.promotion(tr, false)
	ahead := q.readSingleFitAhead(tr, order, limits)
	moved, err := pr.finish(tr)
	if err != nil {
		return Item{}, false, err
	}
	pk := q.newFitPick(tr, removing)
	if !moved {
		pk.ahead = ahead // what promote moved nothing into
	}
	it, p, ok, err := q.findFit(pk, order, limits)
	if err != nil || !ok {
		return Item{}, false, err
	}
	return it, true, q.remove(tr, p, it)
}

// newFitPick is newPick for a fit pop or lease, which may carry its
// reads to the next attempt alone (carryAlone).
func (q *Queue) newFitPick(tr kv.ReadTransaction, mode pickMode) *pick {
	if a, ok := tr.(*Attempt); ok && mode != peeking {
		a.carryAlone()
	}
	return q.newPick(tr, mode)
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
	if pk.ahead != nil {
		// What was read ahead for: another pop with these limits may
		// have changed the hints since, and reading more than was read
		// ahead would take a round trip more.
		budget = pk.ahead.budget
	}
	var dir *dirAhead
	switch {
	case pk.ahead != nil:
		dir = pk.ahead.dir
	case budget < scanBudget:
		// Step 1 found nothing last time: the index's first read goes
		// with step 1's, in the same round.
		dir = q.readCellDir(pk, limits)
	}
	var items []Item
	var poss []pos
	var complete bool
	var err error
	if budget == 0 {
		// Step 1 missed time after time: the index alone (fitHints).
		q.hints.skipped(key)
	} else if items, poss, complete, err = q.scanFits(pk, order, limits, 1, budget); err == nil {
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
	for try := 0; err == nil && ok && !pk.claimNow(best); try++ {
		// Another pop in flight chose the same row, between this
		// search's check of the claims and now: search again, passing
		// over it, rather than conflict with it at commit. Its reads
		// are mostly in the transaction's cache by now.
		if try == maxResearch {
			break // take it anyway: the read conflicts decide
		}
		best, ok, err = q.bestFromIndex(pk, order, limits, nil)
	}
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
	rd := pk.rd
	var x *knownReader
	if a := pk.ahead; a != nil && a.items != nil {
		rows, err := a.items.Get()
		if err != nil {
			return nil, nil, false, err
		}
		x = newKnownReader(pk.rd, false)
		defer x.release()
		x.ks = append(x.ks, newKnown(a.r, a.limit, rows))
		rd = x
	} else if pk.a != nil && (q.kind != Priority || order != Max) {
		// A group's pops read the head of the items once (itemsKnown).
		k, err := pk.a.itemsKnown(q.sub[tagItems])
		if err != nil {
			return nil, nil, false, err
		}
		if k != nil {
			x = newKnownReader(pk.rd, false)
			defer x.release()
			x.ks = append(x.ks, *k)
			rd = x
		}
	}
	stopped, err := q.scan(rd, order, func(e kv.KeyValue, p pos) (bool, error) {
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
	if err == nil && x != nil {
		// What the scan read of the rows read ahead, as its reads through
		// pk.rd would have covered it.
		err = pk.record(x, false)
	}
	return items, poss, !stopped, err
}

// fitAhead is what a fit pop or lease reads before it waits for promote's
// reads of the due index, in the same round (see promotion): step 1's
// first rows, and the cell directory that step 2 starts from. Both are
// snapshot reads, and a pick takes them only if promote moved nothing
// (what it moves lands in those ranges): the reads that use them record
// what they cover (knownReader, dirAhead), so a read ahead costs a
// request, never a conflict.
type fitAhead struct {
	items kv.FutureRange // step 1's first limit rows of r, or nil
	r     kv.Range
	limit int
	dir   *dirAhead
	// budget is step 1's budget of a single fit pop, as the hints said
	// when it read ahead (0: skip step 1), which its choice keeps to.
	budget int
}

// readFitAhead issues a fit pop's or lease's reads ahead (fitAhead), for
// n rows in order with limits, where reads wait for their answers (on an
// engine that answers a read when it is issued it reads nothing ahead,
// and returns nil). Step 1 is read ahead in key order only: in Max order
// of a priority queue it starts with the last key.
func (q *Queue) readFitAhead(tr kv.Transaction, order Order, limits []int64, n int) *fitAhead {
	return q.readFitAheadOf(tr, order, limits, n, false)
}

// readSingleFitAhead is readFitAhead for a single fit pop (PopFit), which
// reads no items ahead when its hints have it skip step 1 (fitHints):
// multi-row pops and leases, of one row too, never skip it.
func (q *Queue) readSingleFitAhead(tr kv.Transaction, order Order, limits []int64) *fitAhead {
	return q.readFitAheadOf(tr, order, limits, 1, true)
}

// readFitAheadOf is readFitAhead, for a single fit pop if single.
func (q *Queue) readFitAheadOf(tr kv.Transaction, order Order, limits []int64, n int, single bool) *fitAhead {
	if kv.AnswersAtIssue(tr) {
		return nil
	}
	a := &fitAhead{}
	budget := scanBudget
	if n == 1 {
		var hint [8 * maxIntLen]byte
		budget = q.hints.budget(hintKey(hint[:], order, limits, 0))
		if budget == 0 && !single {
			budget = sedimentBudget // what it read before pops skipped step 1
		}
	}
	a.budget = budget
	if (q.kind != Priority || order != Max) && (budget > 0 || !single) {
		// As many rows as step 1 reads: its budget of misses, the n it
		// takes (a bounded part of a large n: a scan past them reads on
		// through the pick's reader), and the rows it passes over as
		// claimed.
		a.r, a.limit = kv.PrefixRange(q.sub[tagItems]), budget+min(n, maxBatch)+claimedAhead(tr)
		a.items = kv.GetRangeAsync(tr.Snapshot(), a.r, kv.RangeOptions{Limit: a.limit, Mode: kv.StreamingModeWantAll})
	}
	a.dir = readDirAhead(tr.Snapshot(), q.sub[tagCellDir], noMins(len(limits)), limits, q.hints.cellFirsts(), q.hints.sawCellFirsts)
	return a
}

// claimedAhead is how many rows more step 1 may pass over in tr, claimed
// by the other attempts in flight (one a pop, about), up to maxBatch.
func claimedAhead(tr kv.Transaction) int {
	if a, ok := tr.(*Attempt); ok {
		return int(min(max(a.claims.inFlight.Load()-1, 0), maxBatch))
	}
	return 0
}

// noMins returns d coordinates with no lower bound.
func noMins(d int) []int64 {
	m := make([]int64, d)
	for i := range m {
		m[i] = math.MinInt64
	}
	return m
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
