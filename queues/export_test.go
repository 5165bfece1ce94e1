package queues

import (
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
)

// NewIDSource returns a function that hands out ids as NewID does, from a
// source of its own: a test of the sequence sees no ids other tests take.
func NewIDSource() func() int64 {
	var s idSource
	return s.id
}

// PrefixRangeOf is prefixRange, and KeyOf key, for tests.
func (q *Queue) PrefixRangeOf(tag int, vs ...int64) kv.Range { return q.prefixRange(tag, vs...) }

func (q *Queue) KeyOf(tag int, vs ...int64) []byte { return q.key(tag, vs...) }

// Downgrade makes the queue look as a version before statistics left it:
// its items without pushed_at and held, no counts and no mark of exact
// statistics (the counters stay: they only count on).
func (q *Queue) Downgrade(tr kv.Transaction) error {
	for _, tag := range []int{tagItems, tagHidden} {
		rows, err := kv.Collect(tr.GetRange(kv.PrefixRange(q.sub[tag]), kv.RangeOptions{}))
		if err != nil {
			return err
		}
		for _, e := range rows {
			it, _, err := q.decodeItemUnder(tag, e.Key, e.Value)
			if err != nil {
				return err
			}
			it.PushedAt, it.Held = time.Time{}, false
			tr.Set(e.Key, encodeValue(it))
		}
	}
	tr.ClearRange(kv.Range{Begin: q.key(tagStats, statDue), End: q.prefixRange(tagStats).End})
	return nil
}
