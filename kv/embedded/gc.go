// Read versions in use, and pruning the versions and history no live
// transaction can read any more.

package embedded

import (
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
)

// gcRecord is one commit's touched entries, to prune once no reader needs
// their older versions.
type gcRecord struct {
	ver     uint64
	entries []*entry
}

// reader is a live transaction's read version and when it got it.
type reader struct {
	rv    uint64
	since time.Time
	// pinned readers (checkpoints) never expire.
	pinned bool
}

// acquireReadVersion registers t as a reader at the current version.
func (s *store) acquireReadVersion(t *txn, now time.Time) uint64 {
	s.activeMu.Lock()
	rv := s.version.Load()
	s.active[t] = reader{rv: rv, since: now}
	s.activeMu.Unlock()
	return rv
}

func (s *store) releaseReadVersion(t *txn) {
	s.activeMu.Lock()
	delete(s.active, t)
	s.activeMu.Unlock()
}

// horizonLocked returns the oldest version a live transaction may read:
// everything older than the newest version at or below it can be pruned.
// Transactions past the 5-second limit do not count (they can only fail
// now). Callers hold s.mu.
func (s *store) horizonLocked(now time.Time) uint64 {
	s.activeMu.Lock()
	defer s.activeMu.Unlock()
	h := s.version.Load()
	for t, r := range s.active {
		if !r.pinned && now.Sub(r.since) > kv.MaxTransactionAge {
			delete(s.active, t)
			continue
		}
		if r.rv < h {
			h = r.rv
		}
	}
	return h
}

// gcLocked prunes versions that no reader can see any more, and drops
// history no conflict check needs. budget bounds the entries visited.
// Callers hold s.mu.
func (s *store) gcLocked(now time.Time, budget int) {
	h := s.horizonLocked(now)

	// History: records at or below h are older than every live reader.
	n := 0
	for n < len(s.history) && s.history[n].ver <= h {
		n++
	}
	if n > 0 {
		clear(s.history[:n])
		s.history = s.history[n:]
	}

	for s.gcHead < len(s.gcq) && budget > 0 {
		rec := &s.gcq[s.gcHead]
		if rec.ver > h {
			break
		}
		for len(rec.entries) > 0 && budget > 0 {
			e := rec.entries[len(rec.entries)-1]
			rec.entries = rec.entries[:len(rec.entries)-1]
			budget--
			if e.removed() {
				continue
			}
			if e.v.ver() <= h {
				e.v.older = nil
				if e.v.del() {
					s.tree.Delete(e)
					e.v.word |= flagRemoved
				}
				continue
			}
			for o := e.v.older; o != nil; o = o.older {
				if o.ver() <= h {
					o.older = nil
					break
				}
			}
		}
		if len(rec.entries) > 0 {
			break
		}
		s.gcq[s.gcHead] = gcRecord{}
		s.gcHead++
	}
	if s.gcHead > 1024 && s.gcHead*2 > len(s.gcq) {
		n := copy(s.gcq, s.gcq[s.gcHead:])
		clear(s.gcq[n:])
		s.gcq = s.gcq[:n]
		s.gcHead = 0
	}
}

// pinReadVersion registers a reader at the current readable version that
// the collector waits for however long it lives (a checkpoint); release it
// with releaseReadVersion.
func (s *store) pinReadVersion() (*txn, uint64) {
	pin := &txn{s: s}
	s.activeMu.Lock()
	defer s.activeMu.Unlock()
	ver := s.version.Load()
	s.active[pin] = reader{rv: ver, since: s.cfg.Clock(), pinned: true}
	return pin, ver
}
