// Range tombstones: a range clear of many keys, applied without a
// deletion per key.

package embedded

import (
	"bytes"

	"github.com/fdbqueue/fdbqueue/kv"
)

// A clear of a range that holds more than tombMinKeys keys is recorded as a
// tombstone (its range and version) rather than a deletion record per key,
// which it took under the store's lock, all at once: measured, a DROP
// TABLE of 1,000,000 tasks (4.5 million keys) took 3.9 s on memory:, and
// every other writer of the database waited that long. Reads filter the
// keys a tombstone covers (at); the collector removes them from the tree,
// tombBudget keys at a time, once no reader is older than the tombstone
// (tombsLocked), and then forgets the tombstone. store.tombMin holds it
// (tests lower it).
const tombMinKeys = 4096

// tombBudget is how many keys under tombstones one collection visits at
// least.
const tombBudget = 2048

// tomb is a range clear at version ver; next is where its removal of the
// keys it covers has got to.
type tomb struct {
	r    kv.Range
	ver  uint64
	next []byte
}

// tombed reports whether a tombstone hides, from a reader at rv, the
// version v of key: one covers key, and came after v, at rv or before.
// Callers hold s.mu.
func (s *store) tombed(key []byte, v, rv uint64) bool {
	for i := range s.tombs {
		t := &s.tombs[i]
		if v < t.ver && t.ver <= rv && t.r.Contains(key) {
			return true
		}
	}
	return false
}

// clearManyLocked records the clear of r at ver as a tombstone if r holds
// more than s.tombMin keys, and reports whether it did. Callers hold s.mu
// exclusively.
func (s *store) clearManyLocked(ver uint64, r kv.Range) bool {
	n := 0
	s.tree.Ascend(probe(&s.probeBuf, r.Begin), func(e rec) bool {
		if bytes.Compare(e.key(), r.End) >= 0 {
			return false
		}
		n++
		return n <= s.tombMin
	})
	if n <= s.tombMin {
		return false
	}
	r = kv.Range{Begin: bytes.Clone(r.Begin), End: bytes.Clone(r.End)}
	s.tombs = append(s.tombs, tomb{r: r, ver: ver, next: r.Begin})
	s.fireWatchesInLocked(r)
	return true
}

// tombsLocked removes from the tree, up to budget keys at a time (at least
// tombBudget), the keys that tombstones at or below the horizon h cover
// and that were written before them: no reader can see them any more.
// Callers hold s.mu exclusively.
func (s *store) tombsLocked(h uint64, budget int) {
	budget = max(budget, tombBudget)
	var batch []rec
	for len(s.tombs) > 0 && budget > 0 {
		t := &s.tombs[0]
		if t.ver > h {
			return
		}
		batch = batch[:0]
		done := true
		s.tree.Ascend(probe(&s.probeBuf, t.next), func(e rec) bool {
			if bytes.Compare(e.key(), t.r.End) >= 0 {
				return false
			}
			if len(batch) == budget {
				done = false
				return false
			}
			batch = append(batch, e)
			return true
		})
		budget -= len(batch)
		for _, e := range batch {
			if e.ver() < t.ver {
				s.tree.Delete(e)
				s.dropOlderLocked(e)
				e.mark(flagStale)
				s.slabs.drop(e)
			} else {
				s.cutBelowLocked(e, t.ver)
			}
		}
		if !done {
			t.next = kv.KeyAfter(batch[len(batch)-1].key())
			return
		}
		// The deleted keys too: their older versions may be below it.
		batch = batch[:0]
		s.dead.Ascend(probe(&s.probeBuf, t.r.Begin), func(e rec) bool {
			if bytes.Compare(e.key(), t.r.End) >= 0 {
				return false
			}
			batch = append(batch, e)
			return true
		})
		budget -= len(batch)
		for _, e := range batch {
			s.cutBelowLocked(e, t.ver)
		}
		s.tombs[0] = tomb{}
		s.tombs = s.tombs[1:]
	}
}

// cutBelowLocked drops the versions of r's key older than ver: a
// tombstone at ver hides them from every reader, and forgetting it must
// not bring them back. Callers hold s.mu exclusively.
func (s *store) cutBelowLocked(r rec, ver uint64) {
	for r.hasOlder() {
		if o := s.older[r]; o.ver() >= ver {
			r = o
			continue
		}
		s.dropOlderLocked(r)
		return
	}
}
