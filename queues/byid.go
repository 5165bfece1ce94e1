package queues

import (
	"fmt"

	"github.com/fdbqueue/fdbqueue/kv"
)

// Get returns the item with id, visible or not.
func (q *Queue) Get(tr kv.ReadTransaction, id int64) (Item, bool, error) {
	it, _, ok, err := q.getByID(tr, id)
	return it, ok, err
}

// getByID returns the item with id and its position.
func (q *Queue) getByID(tr kv.ReadTransaction, id int64) (Item, pos, bool, error) {
	p, v, ok, err := q.lookup(tr, id)
	if err != nil || !ok {
		return Item{}, pos{}, false, err
	}
	var it Item
	if v != nil { // a run's: lookup read the item
		it, _, err = q.decodeItemUnder(tagItems, q.itemKey(p), v)
	} else {
		it, ok, err = q.getAt(tr, p)
	}
	if err != nil {
		return Item{}, pos{}, false, err
	}
	if !ok {
		return Item{}, pos{}, false, fmt.Errorf("%w: id index names item %d, which is not queued", ErrCorrupt, id)
	}
	if p.due != 0 && nanos(it.VisibleAt) != p.due {
		return Item{}, pos{}, false, fmt.Errorf("%w: id index files invisible item %d under another due time", ErrCorrupt, id)
	}
	return it, p, true, nil
}

// lookup returns the position of the item with id: from the id index,
// or else, where there may be runs (see Runs), from the run that holds
// id, with the item's value, which it read there (nil from the id
// index). Where reads wait for their answer (kv/remote) the run is read
// with the id index key, in one round trip; where they are answered when
// issued, only if the key is absent.
func (q *Queue) lookup(tr kv.ReadTransaction, id int64) (pos, []byte, bool, error) {
	var runRead kv.FutureRange
	idRead := kv.GetAsync(tr, q.idKey(id))
	runs := mayHoldRuns(tr)
	atIssue := kv.AnswersAtIssue(tr)
	if runs && !atIssue {
		runRead = q.readRunAt(tr.Snapshot(), id)
	}
	v, err := idRead.Get()
	if err != nil {
		return pos{}, nil, false, err
	}
	if v != nil {
		p, err := q.decodeIDValue(id, v)
		return p, nil, true, err
	}
	if !runs {
		return pos{}, nil, false, nil
	}
	if atIssue {
		runRead = q.readRunAt(tr.Snapshot(), id)
	}
	r, ok, err := q.runOf(runRead)
	if err != nil || !ok || !r.holds(id) {
		return pos{}, nil, false, err
	}
	return q.findInRun(tr, r, id, id)
}

// Remove deletes the item with id, visible or not, and reports whether it
// was queued.
func (q *Queue) Remove(tr kv.Transaction, id int64) (Item, bool, error) {
	it, p, ok, err := q.getByID(tr, id)
	if err != nil || !ok {
		return Item{}, false, err
	}
	return it, true, q.remove(tr, p, it)
}

// Move re-prioritises the item with id: it keeps its id, value, lease and
// visible_at, and goes to the back of its new priority. It reports whether
// the item was queued.
func (q *Queue) Move(tr kv.Transaction, id, priority int64) (bool, error) {
	if q.kind != Priority {
		return false, fmt.Errorf("%w: a %s queue has no priorities", ErrInvalidItem, q.kind)
	}
	it, ok, err := q.Remove(tr, id)
	if err != nil || !ok {
		return false, err
	}
	if it.Held && !it.VisibleAt.After(q.opts.now()) {
		q.AddStat(tr, StatExpired, 1) // its lease ended: it comes back visible
	}
	it.Priority = priority
	return true, q.push(tr, it) // the same id again: no push marker
}
