package queues

import (
	"bytes"
	"iter"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// first returns the first visible item in order.
func (q *Queue) first(tr kv.ReadTransaction, order Order) (kv.KeyValue, bool, error) {
	return q.firstUnder(tr, tagItems, order)
}

// firstUnder returns the first item under tag (tagItems or tagHidden) in
// order.
func (q *Queue) firstUnder(tr kv.ReadTransaction, tag int, order Order) (kv.KeyValue, bool, error) {
	items := kv.PrefixRange(q.sub[tag])
	if q.kind == FIFO || order == Min {
		return kv.First(tr, items, false)
	}
	// The highest priority is the last key; its oldest item the first key
	// under that priority.
	last, ok, err := kv.First(tr, items, true)
	if err != nil || !ok {
		return last, ok, err
	}
	p, err := q.decodeKeyUnder(tag, last.Key)
	if err != nil {
		return last, false, err
	}
	return kv.First(tr, kv.PrefixRange(q.key(tag, p.prio)), false)
}

// Peek returns the first item in order without removing it, visible or
// not: the first row, where Pop returns the first one due.
func (q *Queue) Peek(tr kv.ReadTransaction, order Order) (Item, bool, error) {
	var best Item
	var bestPos pos
	found := false
	for _, tag := range []int{tagItems, tagHidden} {
		e, ok, err := q.firstUnder(tr, tag, order)
		if err != nil {
			return Item{}, false, err
		}
		if !ok {
			continue
		}
		it, p, err := q.decodeItemUnder(tag, e.Key, e.Value)
		if err != nil {
			return Item{}, false, err
		}
		if !found || better(p, bestPos, order) {
			best, bestPos, found = it, p, true
		}
	}
	return best, found, nil
}

// Pop removes and returns the first visible item in order, after moving
// the items due by now back to their places (see lease.go). In an Attempt
// it passes over the items other attempts claimed (see claims.go).
func (q *Queue) Pop(tr kv.Transaction, order Order) (Item, bool, error) {
	items, err := q.PopN(tr, order, 1)
	if err != nil || len(items) == 0 {
		return Item{}, false, err
	}
	return items[0], true, nil
}

// PopN removes and returns up to n visible items in order, reading the
// queue once: n calls to Pop in one transaction would each read past the
// items the earlier ones removed.
func (q *Queue) PopN(tr kv.Transaction, order Order, n int) ([]Item, error) {
	if n <= 0 {
		return nil, nil
	}
	pr := q.promotion(tr, false)
	items, poss, err := q.findN(tr, removing, order, n, &pr)
	if err != nil {
		return nil, err
	}
	q.removeAll(tr, poss, items)
	return items, nil
}

// findN returns the first n visible items in order, with their positions,
// passing over those other attempts claimed, and claims them. It finishes
// pr (promote), whose reads were issued, before it reads the queue, or,
// for one item, after it read the head (see head.go).
func (q *Queue) findN(tr kv.Transaction, mode pickMode, order Order, n int, pr *promotion) ([]Item, []pos, error) {
	pk := q.newPick(tr, mode)
	var items []Item
	var poss []pos
	take := func(e kv.KeyValue, p pos) (bool, error) {
		it, _, err := q.decodeItem(e.Key, e.Value)
		if err != nil {
			return false, err
		}
		if pk.take(p, it.Resources) {
			items, poss = append(items, it), append(poss, p)
		}
		return len(items) < n, nil
	}
	if n == 1 {
		// The head, in one read: it is not claimed in the common case.
		h, err := q.popHead(pk, order, pr)
		if err != nil {
			return nil, nil, err
		}
		if h.ok {
			p, err := q.decodeItemKey(h.e.Key)
			if err != nil {
				return nil, nil, err
			}
			if _, err := take(h.e, p); err != nil {
				return nil, nil, err
			}
		}
		if !h.ok || len(items) == 1 {
			return items, poss, pk.done()
		}
	} else if _, err := pr.finish(tr); err != nil {
		return nil, nil, err
	}
	if _, err := q.scan(pk.rd, order, take); err != nil {
		return nil, nil, err
	}
	return items, poss, pk.done()
}

// Scan calls fn with the queue's items, visible or not, in order until fn
// returns false or an error. It streams: the queue is never loaded whole.
func (q *Queue) Scan(tr kv.ReadTransaction, order Order, fn func(Item) (bool, error)) error {
	return q.scanAll(tr, order, func(e kv.KeyValue, p pos) (bool, error) {
		tag := tagItems
		if p.due != 0 {
			tag = tagHidden
		}
		it, _, err := q.decodeItemUnder(tag, e.Key, e.Value)
		if err != nil {
			return false, err
		}
		return fn(it)
	})
}

// ScanVisible is Scan for the visible items only: the items a pop may
// take.
func (q *Queue) ScanVisible(tr kv.ReadTransaction, order Order, fn func(Item) (bool, error)) error {
	_, err := q.scan(tr, order, func(e kv.KeyValue, _ pos) (bool, error) {
		it, _, err := q.decodeItem(e.Key, e.Value)
		if err != nil {
			return false, err
		}
		return fn(it)
	})
	return err
}

// scanAll visits every item, visible or not, in order: it merges the
// visible items with the invisible ones, whose positions have a non-zero
// due (a placeholder: the value has the real one). When no item is
// invisible it is scan.
func (q *Queue) scanAll(tr kv.ReadTransaction, order Order, fn func(kv.KeyValue, pos) (bool, error)) error {
	if _, any, err := kv.First(tr, kv.PrefixRange(q.sub[tagHidden]), false); err != nil {
		return err
	} else if !any {
		_, err := q.scan(tr, order, fn)
		return err
	}
	var herr error
	next, stop := iter.Pull2(func(yield func(kv.KeyValue, pos) bool) {
		_, herr = q.scanUnder(tr, tagHidden, order, func(e kv.KeyValue, p pos) (bool, error) {
			p.due = 1
			return yield(e, p), nil
		})
	})
	defer stop()
	he, hp, hok := next()
	stopped, err := q.scan(tr, order, func(e kv.KeyValue, p pos) (bool, error) {
		for hok && better(hp, p, order) {
			if more, err := fn(he, hp); err != nil || !more {
				return false, err
			}
			he, hp, hok = next()
		}
		return fn(e, p)
	})
	if err != nil || stopped {
		return err
	}
	for hok {
		if more, err := fn(he, hp); err != nil || !more {
			return err
		}
		he, hp, hok = next()
	}
	return herr
}

// scan visits the visible items in order, with their positions; it also
// reports whether fn stopped it.
func (q *Queue) scan(tr kv.ReadTransaction, order Order, fn func(kv.KeyValue, pos) (bool, error)) (stopped bool, err error) {
	return q.scanUnder(tr, tagItems, order, fn)
}

// scanUnder is scan for the items under tag (tagItems or tagHidden).
func (q *Queue) scanUnder(tr kv.ReadTransaction, tag int, order Order, fn func(kv.KeyValue, pos) (bool, error)) (stopped bool, err error) {
	prefix := q.sub[tag]
	return scanOrdered(tr, prefix, q.kind == Priority && order == Max, func(k []byte) (pos, error) {
		return q.decodeKeyUnder(tag, k)
	}, func(p pos) []byte {
		return tuple.AppendInt(bytes.Clone(prefix), p.prio)
	}, fn)
}

// scanEntries is scan for the fit index entries under prefix (a cell's or a
// shape's).
func (q *Queue) scanEntries(tr kv.ReadTransaction, prefix []byte, order Order, fn func(kv.KeyValue, pos) (bool, error)) (stopped bool, err error) {
	return scanOrdered(tr, prefix, q.kind == Priority && order == Max, func(k []byte) (pos, error) {
		return decodeEntry(prefix, k)
	}, func(p pos) []byte {
		return tuple.AppendInt(bytes.Clone(prefix), p.prio)
	}, fn)
}

// scanOrdered visits the keys under prefix in queue order: key order, or,
// for maxFirst, priorities from the highest down, each in key order (oldest
// first). decode gives a key's position; under gives the prefix of a
// position's priority.
func scanOrdered(tr kv.ReadTransaction, prefix []byte, maxFirst bool, decode func([]byte) (pos, error),
	under func(pos) []byte, fn func(kv.KeyValue, pos) (bool, error)) (stopped bool, err error) {
	visit := func(r kv.Range) (bool, error) { return visitRange(tr, r, decode, fn) }
	all := kv.PrefixRange(prefix)
	if !maxFirst {
		return visit(all)
	}
	return scanLevelsBelow(tr, all.Begin, all.End, visit, decode, under)
}

// visitRange calls fn for the keys of r in key order, until it returns
// false (stopped) or an error.
func visitRange(tr kv.ReadTransaction, r kv.Range, decode func([]byte) (pos, error),
	fn func(kv.KeyValue, pos) (bool, error)) (stopped bool, err error) {
	it := tr.GetRange(r, kv.RangeOptions{})
	for it.Next() {
		e := it.KeyValue()
		p, err := decode(e.Key)
		if err != nil {
			return true, err
		}
		more, err := fn(e, p)
		if err != nil || !more {
			return true, err
		}
	}
	return false, it.Err()
}

// scanLevelsBelow is scanOrdered's maxFirst loop over the priorities of
// the keys in [begin, end), from the highest down, each visited in key
// order.
func scanLevelsBelow(tr kv.ReadTransaction, begin, end []byte, visit func(kv.Range) (bool, error),
	decode func([]byte) (pos, error), under func(pos) []byte) (stopped bool, err error) {
	for {
		last, ok, err := kv.First(tr, kv.Range{Begin: begin, End: end}, true)
		if err != nil || !ok {
			return false, err
		}
		p, err := decode(last.Key)
		if err != nil {
			return true, err
		}
		r := kv.PrefixRange(under(p))
		if stopped, err := visit(r); stopped || err != nil {
			return stopped, err
		}
		end = r.Begin
	}
}
