// Multi-version storage: each key's chain of versions in the tree, reads as
// of a read version, and installing a committed batch at its version.

package embedded

import (
	"bytes"
	"time"

	"github.com/tidwall/btree"

	"github.com/fdbqueue/fdbqueue/kv"
)

// at returns the value visible at read version rv, from r (the tree's item
// for its key) or an older version. Callers hold s.mu.
func (s *store) at(r rec, rv uint64) ([]byte, bool) {
	for {
		w := r.word()
		if w&verMask <= rv {
			return r.val(), w&flagDel == 0
		}
		if w&flagOlder == 0 {
			return nil, false
		}
		r = s.older[r]
	}
}

// latest returns the newest committed value of r, the tree's item.
func latest(r rec) ([]byte, bool) {
	return r.val(), !r.del()
}

// get returns the value of key at rv. scratch is the caller's buffer for
// the lookup's probe.
func (s *store) get(rv uint64, key []byte, scratch *[]byte) ([]byte, bool) {
	p := probe(scratch, key)
	s.rlock()
	r, ok := s.tree.Get(p)
	var val []byte
	if ok {
		val, ok = s.at(r, rv)
	}
	s.mu.RUnlock()
	return val, ok
}

// fetch appends to out up to max key-values visible at rv in [begin, end),
// forward or reverse. done reports that the range holds no more.
// If beginEx, begin itself is excluded.
func (s *store) fetch(rv uint64, begin []byte, beginEx bool, end []byte, reverse bool, max int, out []kv.KeyValue) ([]kv.KeyValue, bool) {
	done := true
	visit := func(r rec) bool {
		key := r.key()
		if beginEx && bytes.Equal(key, begin) {
			if reverse {
				return false
			}
			return true
		}
		if reverse {
			if bytes.Compare(key, begin) < 0 {
				return false
			}
			if bytes.Compare(key, end) >= 0 {
				return true
			}
		} else if bytes.Compare(key, end) >= 0 {
			return false
		}
		if v, ok := s.at(r, rv); ok {
			if len(out) == max {
				done = false
				return false
			}
			out = append(out, kv.KeyValue{Key: key, Value: v})
		}
		return true
	}
	var scratch []byte
	s.rlock()
	if reverse {
		s.tree.Descend(probe(&scratch, end), visit)
	} else {
		s.tree.Ascend(probe(&scratch, begin), visit)
	}
	s.mu.RUnlock()
	return out, done
}

// installLocked applies b at version ver, makes it readable and collects
// garbage. Callers hold s.mu, and install versions in order.
func (s *store) installLocked(now time.Time, ver uint64, b *batch) {
	s.gcLocked(now, s.applyAtLocked(ver, b))
}

// applyAtLocked applies b at version ver and makes it readable, leaving
// garbage collection to the caller: it returns the budget the collection
// should get for it. Callers hold s.mu, and apply versions in order.
func (s *store) applyAtLocked(ver uint64, b *batch) int {
	touched := s.applyLocked(ver, b)
	s.fireWatchesLocked(touched)
	s.gcq = append(s.gcq, gcRecord{ver: ver, entries: touched})
	s.version.Store(ver)
	return 2*len(touched) + 64
}

// supersedeLocked makes r, just set in the tree in place of prev, the
// newest version of its key, with prev the next older one. Callers hold
// s.mu.
func (s *store) supersedeLocked(r, prev rec) {
	prev.mark(flagStale)
	if s.older == nil {
		s.older = make(map[rec]rec)
	}
	s.older[r] = prev
	r.mark(flagOlder)
}

// applyLocked installs b at version ver and returns the records it wrote.
// Callers hold s.mu.
func (s *store) applyLocked(ver uint64, b *batch) []rec {
	var touched []rec
	if len(b.clears) > 0 {
		touched = s.applyClearsLocked(ver, b.clears, touched)
	}
	if len(b.writes) == 0 {
		return touched
	}
	if cap(touched)-len(touched) < len(b.writes) {
		grown := make([]rec, len(touched), len(touched)+len(b.writes))
		copy(grown, touched)
		touched = grown
	}
	// The writes are in key order, and most land next to the previous one
	// (a push's keys sit at the ends of their ranges): a path hint starts
	// each search where the last one ended, and the Set of a record reuses
	// its Get's path. Measured: 407 -> 264 key comparisons per row of a
	// 100-row INSERT into a 100,000-task queue.
	var hint btree.PathHint
	for _, w := range b.writes {
		cur, exists := s.tree.GetHint(probe(&s.probeBuf, w.key), &hint)
		var curVal []byte
		var curOK bool
		if exists {
			curVal, curOK = latest(cur)
		}
		val, ok := w.resolve(curVal, curOK)
		if !ok && !curOK {
			continue // absent before and after
		}
		if !ok {
			val = nil
		}
		r := s.slabs.put(ver, w.key, val, !ok)
		if prev, replaced := s.tree.SetHint(r, &hint); replaced {
			s.supersedeLocked(r, prev)
		}
		touched = append(touched, r)
	}
	return touched
}

// applyClearsLocked writes a deletion at ver for every key the clears
// cover that is not deleted already, and appends them to touched. Callers
// hold s.mu.
func (s *store) applyClearsLocked(ver uint64, clears []kv.Range, touched []rec) []rec {
	var cleared []rec
	for _, r := range clears {
		s.tree.Ascend(probe(&s.probeBuf, r.Begin), func(e rec) bool {
			key := e.key()
			if bytes.Compare(key, r.End) >= 0 {
				return false
			}
			if !e.del() {
				cleared = append(cleared, e)
			}
			return true
		})
	}
	if len(cleared) == 0 {
		return touched
	}
	var hint btree.PathHint
	for _, prev := range cleared {
		r := s.slabs.put(ver, prev.key(), nil, true)
		s.tree.SetHint(r, &hint)
		s.supersedeLocked(r, prev)
		touched = append(touched, r)
	}
	return touched
}
