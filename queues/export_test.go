package queues

import "github.com/fdbqueue/fdbqueue/kv"

// NewIDSource returns a function that hands out ids as NewID does, from a
// source of its own: a test of the sequence sees no ids other tests take.
func NewIDSource() func() int64 {
	var s idSource
	return s.id
}

// PrefixRangeOf is prefixRange, and KeyOf key, for tests.
func (q *Queue) PrefixRangeOf(tag int, vs ...int64) kv.Range { return q.prefixRange(tag, vs...) }

func (q *Queue) KeyOf(tag int, vs ...int64) []byte { return q.key(tag, vs...) }
