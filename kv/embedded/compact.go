// Compaction: moving the records still in use out of slabs that are mostly
// garbage, so that a few long-lived keys do not keep whole slabs alive.

package embedded

import (
	"github.com/fdbqueue/fdbqueue/internal/btree"
)

// compactSlack is the garbage in slabs (bytes) below which compaction does
// not start: small stores are not worth it.
const compactSlack = 4 << 20

// sweep is a compaction in progress: it walks the tree in key order, a few
// records per commit, and copies every record it meets into the current
// slab, so that the slabs it leaves hold only records dropped since.
//
// A slab lives while any of its records is referenced. A queue drained in
// order frees its slabs as it goes, but a queue popped in another order (by
// priority, by fit) leaves stragglers in every slab; and the tree pins
// records too: a node split keeps stale copies of the items it gave away
// in its array, past its length, which the Go collector still follows.
// Measured on a million tasks pushed, then 90% popped by priority: the
// heap stayed at 222 MB without compaction, 46 MB with it (51 MB before
// slabs).
//
// Compaction starts when the slabs hold more than 1.5 times the bytes in
// use (and compactSlack more) and at least half as many bytes died since
// the last compaction began as are in use: a compaction copies the bytes
// in use once, so it costs at most two copies per byte that died.
type sweep struct {
	slack  int // compactSlack; tests lower it
	on     bool
	cursor []byte // the next key to look at
	batch  []rec  // scratch
}

// compactLocked continues a compaction, or starts one when it pays, moving
// up to budget records. Callers hold s.mu.
func (s *store) compactLocked(budget int) {
	sw := &s.slabs
	if budget <= 0 {
		return
	}
	if !s.sweep.on {
		if sw.slabBytes == nil || 2*sw.dead < sw.live ||
			sw.slabBytes.Load() <= int64(sw.live)+max(int64(sw.live)/2, int64(s.sweep.slack)) {
			return
		}
		s.sweep.on, s.sweep.cursor, sw.dead = true, []byte{}, 0
		// The tree's nodes keep stale copies of items past their
		// length (a split leaves the moved half in the old node's
		// array), and a stale record pins its slab. Copy-on-write
		// gives every node the sweep changes a fresh array.
		s.tree = s.tree.Copy()
		s.fing.reset()
	}
	batch := s.sweep.batch[:0]
	done := true
	// AscendMut: every node the walk visits gets its fresh array.
	s.tree.AscendMut(probe(&s.probeBuf, s.sweep.cursor), func(r rec) bool {
		if len(batch) == budget {
			done = false
			return false
		}
		batch = append(batch, r)
		return true
	})
	var hint btree.PathHint
	for _, r := range batch {
		// A record with older versions is linked from s.older, and a
		// deletion leaves soon: they stay.
		if r.word()&(flagOlder|flagDel) != 0 {
			continue
		}
		key, val := r.kv()
		moved := sw.put(r.ver(), key, val, false)
		s.tree.SetHint(moved, &hint)
		// The old copy may be in s.gcq still: stale, the collector
		// leaves it alone.
		r.mark(flagStale)
		sw.live -= r.size()
	}
	if done {
		s.sweep.on, s.sweep.cursor = false, nil
	} else {
		last := batch[len(batch)-1].key()
		s.sweep.cursor = append(last[:len(last):len(last)], 0)
	}
	clear(batch)
	s.sweep.batch = batch[:0]
}
