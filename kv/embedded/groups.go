// Commit groups: concurrent commits queue up, and one of them, the
// leader, takes the store's lock once for the whole queue.

package embedded

import (
	"sync"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
)

// commitReq is one commit on its way through the commitGroups. Everything but
// the outcome is prepared before it queues, outside the store's lock.
type commitReq struct {
	t      *txn
	b      *batch
	writes commitRecord // what the commit writes, its version not yet set
	reads  []span       // the read-conflict spans merged, nil until needed
	now    time.Time    // the commit's clock reading, for the age check
	done   chan bool    // receives once the leader has settled the commit (false), or to make this commit lead (true)
	err    error        // the outcome, set by the leader
	wait   <-chan error // file: the log's answer, set by the leader
	// gcBudget is what applying the commit (memory) adds to the group's
	// garbage-collection budget.
	gcBudget int
}

// commitGroups is the queue of commits waiting for the store's lock. mu guards
// queue, spare and leading; it is never held with store.mu.
type commitGroups struct {
	mu      sync.Mutex
	queue   []*commitReq
	spare   []*commitReq // the slice of the last group, reused for the next queue
	leading bool         // a leader is settling groups

	// groupHook, if set (tests), runs in the leader before it takes the
	// store's lock for a group, without commitGroups.mu held.
	groupHook func()
}

// maxLeadRounds bounds the groups one leader settles after its own, so that
// a steady stream of commits does not keep one client from returning: then
// the oldest waiting commit takes over.
const maxLeadRounds = 4

// settle settles r: checks it for conflicts and gives it a version, then
// applies it (memory) or hands it to the log (file). It returns once r is
// settled, with r.err and r.wait set.
func (s *store) settle(r *commitReq) {
	c := &s.comb
	c.mu.Lock()
	if c.leading {
		// Only a commit that waits needs a channel: a lone client
		// never allocates one.
		r.done = make(chan bool, 1)
		c.queue = append(c.queue, r)
		c.mu.Unlock()
		if lead := <-r.done; !lead {
			return
		}
		// Handed the lead: r is still first in the queue.
		c.mu.Lock()
	} else {
		c.queue = append(c.queue, r)
	}
	c.leading = true
	for round := 0; ; round++ {
		group := c.queue
		if len(group) == 0 {
			c.leading = false
			c.mu.Unlock()
			return
		}
		if round == maxLeadRounds {
			// r was settled in round 0; pass the lead on.
			c.mu.Unlock()
			group[0].done <- true
			return
		}
		c.queue = c.spare[:0]
		c.mu.Unlock()

		if c.groupHook != nil {
			c.groupHook()
		}
		s.settleGroup(group)
		for _, q := range group {
			if q != r {
				q.done <- false
			}
		}

		c.mu.Lock()
		clear(group)
		c.spare = group[:0]
	}
}

// settleGroup settles a group of commits in queue order, under one hold of
// the store's lock. Each is checked against the history left by those
// before it, so a conflict inside the group fails only the later commit.
//
// A commit's writes are applied here (memory), or staged (file, see
// wal.enqueue), and the lock is let go and taken again after a large
// commit: a 100-row INSERT installs hundreds of keys, and the clients
// preparing their next statements read between two, where they waited for
// the whole group (as in wal.commitGroup).
func (s *store) settleGroup(group []*commitReq) {
	s.wlock()
	defer s.mu.Unlock()
	budget := 0
	var now time.Time
	for i, r := range group {
		r.err = s.settleLocked(r)
		budget += r.gcBudget
		if r.now.After(now) {
			now = r.now
		}
		if i < len(group)-1 && len(r.b.writes)+len(r.b.clears) >= stageMin {
			s.mu.Unlock()
			s.wlock()
		}
	}
	if budget > 0 {
		s.gcLocked(now, budget)
	}
}

// settleLocked checks one commit and gives it its version. Callers hold
// s.mu.
func (s *store) settleLocked(r *commitReq) error {
	t := r.t
	if age := r.now.Sub(t.grvTime); age > kv.MaxTransactionAge {
		return kv.Errorf(kv.CodeTransactionTooOld, "read version is %v old at commit", age.Round(time.Millisecond))
	}
	// Its clock read before the lock: the collector, whose clock may have
	// passed the limit since, may have dropped history it is checked
	// against.
	if err := t.expired(); err != nil {
		return err
	}
	// A failed log comes first: the history holds the versions of the
	// group whose write failed, never installed, and a conflict with one of
	// them would pass an I/O error off as a retryable conflict.
	if s.log != nil {
		if err := s.log.failure(); err != nil {
			return err
		}
	}
	if len(s.history) > 0 && s.history[len(s.history)-1].ver > t.rv && len(t.reads) > 0 {
		if r.reads == nil {
			r.reads = mergeSpans(t.reads)
		}
		if s.conflictsLocked(t.rv, r.reads) {
			return kv.ErrNotCommitted
		}
	}
	if s.nextVer >= verMask {
		// A record's word numbers versions in 45 bits (slab.go): at
		// 50,000 commits a second, 22 years of them. Refuse the commit
		// rather than write a version that replay could not load.
		return kv.Errorf(kv.CodeClientInvalidOperation, "the database has used all %d commit versions the embedded engine numbers; it can still be read (and copied to a new database), but takes no more commits", uint64(verMask))
	}
	s.nextVer++
	ver := s.nextVer
	r.writes.ver = ver
	s.history = append(s.history, r.writes)
	if s.log == nil {
		r.gcBudget = s.applyAtLocked(ver, r.b)
		return nil
	}
	// File: the log writer makes the batch durable with others (group
	// commit), then applies them in version order; readers never see a
	// version before it is durable.
	r.wait = s.log.enqueue(ver, r.b)
	return nil
}
