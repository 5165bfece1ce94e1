package queues

import (
	"math/rand/v2"

	"github.com/fdbqueue/fdbqueue/kv"
)

// PopSpread is Pop for many consumers popping one queue at once: instead of
// all of them wanting the first item (and all but one retrying), each takes
// one of the first k items of the best priority at random. Priority order
// stays exact (a concurrent push of a better priority conflicts with the
// pop); the order within that priority is relaxed to "one of its k oldest".
// Every pop stays exactly-once: the chosen item is read serializably, so two
// pops that choose it conflict. Use it when exact pops keep conflicting.
func (q *Queue) PopSpread(tr kv.Transaction, order Order, k int) (Item, bool, error) {
	// The head, read in the round trip of promote's read, and again if
	// promote moved items (see head.go).
	pr := q.promotion(tr, false)
	head, ok, err := q.first(tr.Snapshot(), order)
	if err != nil {
		return Item{}, false, err
	}
	if moved, err := pr.finish(tr); err != nil {
		return Item{}, false, err
	} else if moved {
		if head, ok, err = q.first(tr.Snapshot(), order); err != nil {
			return Item{}, false, err
		}
	}
	if !ok {
		return Item{}, false, nil
	}
	hp, err := q.decodeItemKey(head.Key)
	if err != nil {
		return Item{}, false, err
	}
	var cands []kv.KeyValue
	r := kv.PrefixRange(q.sub[tagItems])
	if q.kind == Priority {
		r = kv.PrefixRange(q.key(tagItems, hp.prio))
	}
	it := tr.Snapshot().GetRange(r, kv.RangeOptions{Limit: max(k, 1)})
	for it.Next() {
		cands = append(cands, it.KeyValue())
	}
	if err := it.Err(); err != nil {
		return Item{}, false, err
	}
	if len(cands) == 0 {
		return Item{}, false, nil
	}
	c := cands[rand.IntN(len(cands))]
	return q.takeSpread(tr, order, c.Key)
}

// takeSpread removes the chosen item of a spread pop: it reads the item
// serializably (the only conflict between pops) and guards the better
// priorities with a read-conflict range.
func (q *Queue) takeSpread(tr kv.Transaction, order Order, key []byte) (Item, bool, error) {
	p, err := q.decodeItemKey(key)
	if err != nil {
		return Item{}, false, err
	}
	v, err := tr.Get(key)
	if err != nil || v == nil {
		return Item{}, false, err
	}
	if q.kind == Priority {
		items, prio := kv.PrefixRange(q.sub[tagItems]), kv.PrefixRange(q.key(tagItems, p.prio))
		guard := kv.Range{Begin: items.Begin, End: prio.Begin}
		if order == Max {
			guard = kv.Range{Begin: prio.End, End: items.End}
		}
		if err := tr.AddReadConflictRange(guard); err != nil {
			return Item{}, false, err
		}
	}
	it, _, err := q.decodeItem(key, v)
	if err != nil {
		return Item{}, false, err
	}
	return it, true, q.remove(tr, p, it)
}

// PopFitSpread is PopFit for many consumers with the same limits: it reads
// the first items in queue order with a snapshot read and takes one of the
// first k that fit and share the best fitting priority, at random, with the
// same guarantees as PopSpread. When none of the first items fits, it is
// PopFit.
func (q *Queue) PopFitSpread(tr kv.Transaction, order Order, limits []int64, k int) (Item, bool, error) {
	if err := q.checkResources(limits, "limits"); err != nil {
		return Item{}, false, err
	}
	if _, err := q.promote(tr); err != nil {
		return Item{}, false, err
	}
	var cands [][]byte
	bestPrio, n := int64(0), 0
	res := make([]int64, len(limits))
	stopped, err := q.scan(tr.Snapshot(), order, func(e kv.KeyValue, p pos) (bool, error) {
		if len(cands) > 0 && p.prio != bestPrio {
			return false, nil // past the best fitting priority
		}
		if err := decodeResources(e.Value, res, p.id); err != nil {
			return false, err
		}
		if fits(res, limits) {
			bestPrio = p.prio
			cands = append(cands, e.Key)
			return len(cands) < max(k, 1), nil
		}
		n++
		return n < scanBudget || len(cands) > 0, nil
	})
	if err != nil {
		return Item{}, false, err
	}
	if len(cands) == 0 {
		if !stopped {
			return Item{}, false, nil // the whole queue was read: nothing fits
		}
		return q.PopFit(tr, order, limits)
	}
	return q.takeSpread(tr, order, cands[rand.IntN(len(cands))])
}
