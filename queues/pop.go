package queues

import (
	"bytes"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// first returns the first item in order.
func (q *Queue) first(tr kv.ReadTransaction, order Order) (kv.KeyValue, bool, error) {
	items := kv.PrefixRange(q.sub[tagItems])
	if q.kind == FIFO || order == Min {
		return kv.First(tr, items, false)
	}
	// The highest priority is the last key; its oldest item the first key
	// under that priority.
	last, ok, err := kv.First(tr, items, true)
	if err != nil || !ok {
		return last, ok, err
	}
	p, err := q.decodeItemKey(last.Key)
	if err != nil {
		return last, false, err
	}
	return kv.First(tr, kv.PrefixRange(q.key(tagItems, p.prio)), false)
}

// Peek returns the first item in order without removing it.
func (q *Queue) Peek(tr kv.ReadTransaction, order Order) (Item, bool, error) {
	e, ok, err := q.first(tr, order)
	if err != nil || !ok {
		return Item{}, false, err
	}
	it, _, err := q.decodeItem(e.Key, e.Value)
	return it, err == nil, err
}

// Pop removes and returns the first item in order.
func (q *Queue) Pop(tr kv.Transaction, order Order) (Item, bool, error) {
	e, ok, err := q.first(tr, order)
	if err != nil || !ok {
		return Item{}, false, err
	}
	it, p, err := q.decodeItem(e.Key, e.Value)
	if err != nil {
		return Item{}, false, err
	}
	return it, true, q.remove(tr, p, it.Resources)
}

// PopN removes and returns up to n items in order, reading the queue once:
// n calls to Pop in one transaction would each read past the items the
// earlier ones removed.
func (q *Queue) PopN(tr kv.Transaction, order Order, n int) ([]Item, error) {
	if n <= 0 {
		return nil, nil
	}
	var items []Item
	var poss []pos
	_, err := q.scan(tr, order, func(e kv.KeyValue, p pos) (bool, error) {
		it, _, err := q.decodeItem(e.Key, e.Value)
		if err != nil {
			return false, err
		}
		items, poss = append(items, it), append(poss, p)
		return len(items) < n, nil
	})
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

// Scan calls fn with the queue's items in order until fn returns false or an
// error. It streams: the queue is never loaded whole.
func (q *Queue) Scan(tr kv.ReadTransaction, order Order, fn func(Item) (bool, error)) error {
	_, err := q.scan(tr, order, func(e kv.KeyValue, _ pos) (bool, error) {
		it, _, err := q.decodeItem(e.Key, e.Value)
		if err != nil {
			return false, err
		}
		return fn(it)
	})
	return err
}

// scan is Scan with positions; it also reports whether fn stopped it.
func (q *Queue) scan(tr kv.ReadTransaction, order Order, fn func(kv.KeyValue, pos) (bool, error)) (stopped bool, err error) {
	prefix := q.sub[tagItems]
	return scanOrdered(tr, prefix, q.kind == Priority && order == Max, q.decodeItemKey, func(p pos) []byte {
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
	visit := func(r kv.Range) (bool, error) {
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
	all := kv.PrefixRange(prefix)
	if !maxFirst {
		return visit(all)
	}
	end := all.End
	for {
		last, ok, err := kv.First(tr, kv.Range{Begin: all.Begin, End: end}, true)
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
