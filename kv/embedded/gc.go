// Read versions in use, and pruning the versions and history no live
// transaction can read any more.

package embedded

import (
	"sync/atomic"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
)

// gcRecord is the records one commit wrote, to prune once no reader needs
// the versions older than them.
type gcRecord struct {
	ver     uint64
	entries []rec
}

// reader is a live transaction's read version and when it got it.
type reader struct {
	rv    uint64
	since time.Time
	// pinned readers (checkpoints) never expire.
	pinned bool
	// done: released, or expired (past the 5-second limit).
	done bool
}

// readerQueue holds the read versions in use, in the order they were
// handed out: read versions only grow, so the queue is sorted by version
// and its oldest live reader is the horizon, found without visiting the
// others (a commit asks for it every time). A reader is known by its
// ticket, its position counted from the first reader ever queued. Pinned
// readers (checkpoints) are few and never expire; they are kept aside.
type readerQueue struct {
	q      []reader // q[i] has ticket first+i; q[0] is not done unless q is empty
	first  uint64
	live   int
	pinned map[uint64]uint64 // ticket -> rv, of pinned readers
	next   uint64            // the next pinned reader's ticket (counted apart)
	// expired is the ticket of the last reader oldest expired: the
	// collector may have pruned what the readers up to it read
	// (txn.expired).
	expired atomic.Uint64
}

// add queues a reader at rv and returns its ticket (never 0).
func (rq *readerQueue) add(rv uint64, now time.Time) uint64 {
	rq.q = append(rq.q, reader{rv: rv, since: now})
	rq.live++
	return rq.first + uint64(len(rq.q))
}

// remove releases the reader of ticket, and reports whether it was the
// oldest; a ticket already released or expired is ignored.
func (rq *readerQueue) remove(ticket uint64) bool {
	i := ticket - 1 - rq.first
	if ticket == 0 || ticket-1 < rq.first || i >= uint64(len(rq.q)) || rq.q[i].done {
		return false
	}
	rq.q[i].done = true
	rq.live--
	rq.trim()
	return i == 0
}

// trim drops the done readers at the head.
func (rq *readerQueue) trim() {
	n := 0
	for n < len(rq.q) && rq.q[n].done {
		n++
	}
	if n == 0 {
		return
	}
	rq.first += uint64(n)
	if n == len(rq.q) {
		rq.q = rq.q[:0]
		return
	}
	rq.q = rq.q[n:]
}

// oldest returns the oldest read version in use and whether there is one,
// expiring first the unpinned readers older than kv.MaxTransactionAge: they
// can only fail now.
func (rq *readerQueue) oldest(now time.Time) (uint64, bool) {
	for len(rq.q) > 0 && now.Sub(rq.q[0].since) > kv.MaxTransactionAge {
		rq.expired.Store(rq.first + 1)
		rq.q[0].done = true
		rq.live--
		rq.trim()
	}
	var rv uint64
	found := len(rq.q) > 0
	if found {
		rv = rq.q[0].rv
	}
	for _, p := range rq.pinned {
		if !found || p < rv {
			rv, found = p, true
		}
	}
	return rv, found
}

// acquireReadVersion registers t as a reader at the current version, and
// hands it the metadata version at that version (t.mdv): a commit that
// bumps it publishes both under activeMu (publishLocked), so the pair read
// here is always one some version had.
func (s *store) acquireReadVersion(t *txn, now time.Time) uint64 {
	s.activeMu.Lock()
	rv := s.version.Load()
	t.mdv = s.mdv
	t.ticket = s.active.add(rv, now)
	s.activeMu.Unlock()
	return rv
}

// expired fails a read made after t's age check, once the collector has
// expired t's reader (oldest): by the collector's clock, which may have
// passed the 5-second limit between t's check and its read, t is too
// old, and the versions it read may be gone, or the history of the
// writes since its read version that its commit is checked against.
// Checked after the read, it sees every expiry before it: the collector
// expires readers and prunes under s.mu exclusively.
func (t *txn) expired() error {
	if !t.hasRV || t.pinned || t.ticket > t.s.active.expired.Load() {
		return nil
	}
	return kv.Errorf(kv.CodeTransactionTooOld, "read version is older than %v", kv.MaxTransactionAge)
}

func (s *store) releaseReadVersion(t *txn) {
	s.activeMu.Lock()
	oldest := true // a pinned reader may be the oldest
	if t.pinned {
		delete(s.active.pinned, t.ticket)
	} else {
		oldest = s.active.remove(t.ticket)
	}
	t.ticket = 0
	s.activeMu.Unlock()
	// The horizon may have passed a tombstone that waits for the readers
	// older than it: only a commit's collection started its collector,
	// and a database no one commits to any more kept the keys of a
	// range clear (a dropped table's) in its tree.
	if oldest && s.tombsBlocked.Load() && s.tombsBlocked.CompareAndSwap(true, false) {
		go s.kickTombs()
	}
}

// horizonLocked returns the oldest version a live transaction may read:
// everything older than the newest version at or below it can be pruned.
// Transactions past the 5-second limit do not count (they can only fail
// now). Callers hold s.mu.
func (s *store) horizonLocked(now time.Time) uint64 {
	s.activeMu.Lock()
	defer s.activeMu.Unlock()
	h := s.version.Load()
	if rv, ok := s.active.oldest(now); ok && rv < h {
		h = rv
	}
	return h
}

// gcLocked prunes versions that no reader can see any more, and drops
// history no conflict check needs. budget bounds the entries visited.
// Callers hold s.mu.
func (s *store) gcLocked(now time.Time, budget int) {
	s.compactLocked(budget)
	h := s.horizonLocked(now)

	// History: records at or below h are older than every live reader.
	n := 0
	for n < len(s.history) && s.history[n].ver <= h {
		n++
	}
	if n > 0 {
		for i := range s.history[:n] {
			s.history[i].release()
		}
		clear(s.history[:n])
		s.history = s.history[n:]
	}

	for s.gcHead < len(s.gcq) && budget > 0 {
		rec := &s.gcq[s.gcHead]
		if rec.ver > h {
			break
		}
		for len(rec.entries) > 0 && budget > 0 {
			r := rec.entries[len(rec.entries)-1]
			rec.entries = rec.entries[:len(rec.entries)-1]
			budget--
			// Every reader reads at h or later, so sees r (written at
			// rec.ver <= h) or a newer version: the older ones go.
			s.dropOlderLocked(r)
			if r.del() && !r.stale() {
				// A deletion nobody can read past: the key leaves.
				s.dead.Delete(r)
				r.mark(flagStale)
				s.slabs.drop(r)
			}
		}
		if len(rec.entries) > 0 {
			break
		}
		s.gcq[s.gcHead] = gcRecord{}
		s.gcHead++
	}
	s.startTombsLocked(h)
	if s.gcHead > 1024 && s.gcHead*2 > len(s.gcq) {
		n := copy(s.gcq, s.gcq[s.gcHead:])
		clear(s.gcq[n:])
		s.gcq = s.gcq[:n]
		s.gcHead = 0
	}
}

// collectQueuedLocked prunes what the collector has queued, as far as the
// read versions in use allow. Each commit prunes what commits before it
// wrote, not its own writes (its transaction still reads), so the records
// in use after the last commits include their garbage: a drained queue's
// last pops, counted as live, would hide that a checkpoint is due at
// Close. Callers hold s.mu.
func (s *store) collectQueuedLocked(now time.Time) {
	// One more per commit: the loop pops a commit's record only with
	// budget left, and one that wrote nothing (a range clear made a
	// tombstone) after the last entries would stay queued.
	n := 0
	for _, r := range s.gcq[s.gcHead:] {
		n += len(r.entries) + 1
	}
	s.gcLocked(now, n)
}

// dropOlderLocked forgets the versions older than r. Callers hold s.mu.
func (s *store) dropOlderLocked(r rec) {
	for r.hasOlder() {
		o := s.older[r]
		delete(s.older, r)
		r.unmark(flagOlder)
		s.slabs.drop(o)
		r = o
	}
}

// pinReadVersion registers a reader at the current readable version that
// the collector waits for however long it lives (a checkpoint); release it
// with releaseReadVersion.
func (s *store) pinReadVersion() (*txn, uint64) {
	pin := &txn{s: s, pinned: true}
	s.activeMu.Lock()
	defer s.activeMu.Unlock()
	ver := s.version.Load()
	if s.active.pinned == nil {
		s.active.pinned = make(map[uint64]uint64)
	}
	s.active.next++
	pin.ticket = s.active.next
	s.active.pinned[pin.ticket] = ver
	return pin, ver
}
