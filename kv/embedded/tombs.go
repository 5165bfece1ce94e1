// Range tombstones: a range clear of many keys, applied without a
// deletion per key.

package embedded

import (
	"bytes"
	"runtime"
	"time"

	"github.com/fdbqueue/fdbqueue/internal/btree"

	"github.com/fdbqueue/fdbqueue/kv"
)

// A clear of a range that holds more than tombMinKeys keys is recorded as a
// tombstone (its range and version) rather than a deletion record per key,
// which it took under the store's lock, all at once: measured, a DROP
// TABLE of 1,000,000 tasks (4.5 million keys) took 3.9 s on memory:, and
// every other writer of the database waited that long. Reads filter the
// keys a tombstone covers (at); once no reader is older than the
// tombstone, its keys leave the tree, tombSlice keys per hold of the lock
// (tombsLocked), and then the tombstone goes. The commit that made it
// removes them before it returns (awaitTombs), letting other commits in
// between slices; if readers older than it live on, a goroutine of the
// store's finishes once they are gone. Removing them in the commits that
// follow instead (2,048 keys each) made every commit after a DROP TABLE of
// 100,000 tasks wait 0.5 ms until they were gone; a goroutine alone
// competed for the cores with the next statements for as long.
// store.tombMin holds tombMinKeys (tests lower it).
const tombMinKeys = 4096

// tombSlice is how many keys under tombstones the collector visits per
// hold of the store's lock, at most, in the tree and in s.dead each.
const tombSlice = 256

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
	// Its watches fire once ver is readable (fireWatchesLocked).
	s.tombs = append(s.tombs, tomb{r: r, ver: ver, next: r.Begin})
	return true
}

// tombsLocked removes from the tree, visiting up to budget keys, the keys
// that tombstones at or below the horizon h cover and that were written
// before them: no reader can see them any more. Each slice of a
// tombstone's range it reads in the tree, it reads in s.dead too, in the
// same hold of the lock: a key deleted ahead of the walk and set again
// behind it between two slices is in neither part of the walk, and its
// versions under the tombstone, left in its chain, would be read again
// once the tombstone is gone. Callers hold s.mu exclusively.
func (s *store) tombsLocked(h uint64, budget int) {
	// A slice's keys in scratch arrays the store keeps: a dropped table
	// of 20,000 rows took 270 slices, each growing arrays of its own up
	// to tombSlice records.
	if s.tombBatch == nil {
		s.tombBatch = make([]rec, 0, tombSlice)
	}
	batch, dead := s.tombBatch[:0], s.tombDead[:0]
	defer func() {
		// Every slot any slice filled, in the arrays kept and in those
		// that grew past them (recovery's): records pin their slabs.
		clear(s.tombBatch[:cap(s.tombBatch)])
		clear(s.tombDead[:cap(s.tombDead)])
		clear(batch[:cap(batch)])
		clear(dead[:cap(dead)])
		if cap(batch) <= 2*tombSlice && cap(dead) <= 2*tombSlice { // not recovery's
			s.tombBatch, s.tombDead = batch[:0], dead[:0]
		}
	}()
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
		end := t.r.End // of the slice: the tree's keys in [t.next, end) are in batch
		if !done {
			end = kv.KeyAfter(batch[len(batch)-1].key())
		}
		// The deleted keys too: their older versions may be below it.
		// At most budget of them: a range whose keys were deleted one
		// by one while an older reader lived holds them in s.dead, all
		// of them between two keys of the tree, and the slice ends at
		// the last one it takes.
		dead = dead[:0]
		s.dead.Ascend(probe(&s.probeBuf, t.next), func(e rec) bool {
			if bytes.Compare(e.key(), end) >= 0 {
				return false
			}
			if len(dead) == budget {
				done = false
				end = kv.KeyAfter(dead[len(dead)-1].key())
				return false
			}
			dead = append(dead, e)
			return true
		})
		for len(batch) > 0 && bytes.Compare(batch[len(batch)-1].key(), end) >= 0 {
			batch = batch[:len(batch)-1] // the next slice's
		}
		budget -= len(batch) + len(dead)
		var hint btree.PathHint // the batch's keys are adjacent
		for _, e := range batch {
			if e.ver() < t.ver {
				s.tree.DeleteHint(e, &hint)
				s.dropOlderLocked(e)
				e.mark(flagStale)
				s.slabs.drop(e)
			} else {
				s.cutBelowLocked(e, t.ver)
			}
		}
		for _, e := range dead {
			s.cutBelowLocked(e, t.ver)
		}
		if !done {
			t.next = end
			return
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

// startTombsLocked starts the goroutine that collects tombstones when the
// oldest one is at or below the horizon h and none runs, unless the store
// is recovering (recovery collects them at its end). Callers hold s.mu
// exclusively.
func (s *store) startTombsLocked(h uint64) {
	if len(s.tombs) == 0 || s.tombWorker || s.recovering {
		return
	}
	if s.tombsWaitLocked(h) {
		return
	}
	s.tombsBlocked.Store(false)
	s.tombWorker = true
	go s.collectTombs()
}

// tombsWaitLocked reports whether the oldest tombstone waits for readers
// older than it, the horizon being h. If so, it marks the tombstones
// blocked, for the oldest reader's release to start their collector
// (releaseReadVersion), then looks at the horizon again: a release
// between the horizon's reading and the mark saw no mark. Callers hold
// s.mu exclusively; s.tombs is not empty.
func (s *store) tombsWaitLocked(h uint64) bool {
	if s.tombs[0].ver <= h {
		return false
	}
	s.tombsBlocked.Store(true)
	if s.tombs[0].ver > s.horizonLocked(s.cfg.Clock()) {
		return true
	}
	s.tombsBlocked.Store(false)
	return false
}

// kickTombs starts the tombstones' collector if the horizon has passed
// the oldest tombstone (a reader ended), or marks them blocked again.
func (s *store) kickTombs() {
	s.wlock()
	defer s.mu.Unlock()
	s.startTombsLocked(s.horizonLocked(s.cfg.Clock()))
}

// collectTombs collects tombstones, tombSlice keys per hold of the lock,
// until none is left that no reader is older than.
func (s *store) collectTombs() {
	for {
		if _, collected := s.tombSlice(^uint64(0), true); !collected {
			return
		}
		runtime.Gosched()
	}
}

// tombSlice takes the lock once, and removes up to tombSlice keys of the
// tombstones at or below ver, if no reader is older than the first. It
// reports whether such tombstones remain (pending) and whether it removed
// any (collected). worker: the caller is collectTombs, whose flag it
// clears when it collected nothing.
func (s *store) tombSlice(ver uint64, worker bool) (pending, collected bool) {
	s.wlock()
	defer s.mu.Unlock()
	pending = len(s.tombs) > 0 && s.tombs[0].ver <= ver
	h := s.horizonLocked(s.cfg.Clock())
	collected = pending && s.tombs[0].ver <= h
	if collected {
		s.tombsLocked(h, tombSlice)
	}
	if worker && !collected {
		if len(s.tombs) > 0 && !s.tombsWaitLocked(h) {
			return pending, true // a reader ended meanwhile: go on
		}
		s.tombWorker = false
	}
	return pending, collected
}

// tombWait bounds how long a commit that made tombstones waits for readers
// older than them to end, so that it can remove their keys itself
// (store.tombWait holds it; tests shorten it).
const tombWait = 100 * time.Millisecond

// awaitTombs removes the keys of the tombstones at or below ver (those of
// a commit that just returned), a slice at a time, releasing the lock in
// between. It leaves them to collectTombs when readers older than them
// still live after tombWait.
func (s *store) awaitTombs(ver uint64) {
	var blocked time.Time
	for {
		pending, collected := s.tombSlice(ver, false)
		switch {
		case !pending:
			return
		case collected:
			blocked = time.Time{}
			runtime.Gosched()
		case blocked.IsZero():
			blocked = time.Now()
		case time.Since(blocked) >= s.tombWait:
			return
		default:
			time.Sleep(50 * time.Microsecond)
		}
	}
}
