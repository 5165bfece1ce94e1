// Pre-built records: a commit's records written outside the store's lock,
// by the committing client, so that installing them under the lock only
// stamps their version.

package embedded

import (
	"slices"
	"sync"
	"unsafe"
)

// Installing a 100-row INSERT's batch copies its keys and values into
// slabs, under the store's lock: a quarter of the install's time in the
// profile (memmove writing fresh memory), while every other client waited
// for the lock. The committing client writes them instead, as it prepares
// its batch (txn.batch), into space it takes from recArena, a stream of
// slabs of its own, under a lock held only to take the space. The records
// of a commit that fails are garbage in their slab, as a record dropped
// later is; the slabs are counted with the others (slabWriter.slabBytes).
//
// Only plain sets are built ahead: a clear writes a deletion only if the
// key exists, and an atomic operation's value depends on the value it
// finds at install.

// recArena hands out space for pre-built records.
type recArena struct {
	mu  sync.Mutex
	buf []byte // the current slab's free space
}

// prebuilt is a batch's records built ahead, by write index: a zero rec
// for a write installed the usual way.
type prebuilt []rec

// prebuild writes the records of b's plain sets, at version 0 (the
// install stamps the commit's), and returns them, in bufs' slice if it
// is not nil. It runs without the store's lock.
func (s *store) prebuild(b *batch, bufs *txnBufs) prebuilt {
	sizes := 0
	for _, w := range b.writes {
		if prebuildable(w) {
			sizes += recSize(w.key, w.val)
		}
	}
	if sizes == 0 {
		return nil
	}
	// Take the space under the arena's lock, then write outside it.
	var recs prebuilt
	if bufs != nil {
		// Zeroed here, not only by release: a commit of this
		// attempt that failed or was reported unknown (applied) left
		// its records in it, and a write not built ahead now must not
		// find one of them (prebuild would write over it, in the
		// store).
		bufs.pre = slices.Grow(bufs.pre[:0], len(b.writes))[:len(b.writes)]
		clear(bufs.pre)
		recs = bufs.pre
	} else {
		recs = make(prebuilt, len(b.writes))
	}
	a := &s.arena
	a.mu.Lock()
	for i, w := range b.writes {
		if !prebuildable(w) {
			continue
		}
		n := recSize(w.key, w.val)
		switch {
		case n > slabSize/4:
			recs[i] = rec{p: &s.slabs.newSlab(n)[0]}
			continue
		case n > len(a.buf):
			a.buf = s.slabs.newSlab(slabSize)
		}
		recs[i], a.buf = rec{p: &a.buf[0]}, a.buf[n:]
	}
	a.mu.Unlock()
	for i, w := range b.writes {
		if recs[i].p != nil {
			putRec(unsafe.Slice(recs[i].p, recSize(w.key, w.val)), 0, w.key, w.val, false)
		}
	}
	return recs
}

// discard counts the records written ahead for a batch that was not
// applied (a conflict, a failed log) as dead: nothing will reference them,
// and compaction, which weighs dead bytes against live ones (compact.go),
// must see the slab space they take, as it sees a popped row's.
func (s *store) discard(p prebuilt) {
	n := 0
	for _, r := range p {
		if r.p != nil {
			n += r.size()
		}
	}
	if n == 0 {
		return
	}
	s.mu.Lock()
	s.slabs.dead += n
	s.mu.Unlock()
}

func prebuildable(w *write) bool { return w.base == baseSet && len(w.ops) == 0 }

// take returns the pre-built record of write i, stamped with version ver
// and counted in use, if there is one. Callers hold s.mu.
func (p prebuilt) take(i int, ver uint64, sw *slabWriter) (rec, bool) {
	if p == nil || p[i].p == nil {
		return rec{}, false
	}
	if ver > verMask {
		panic("embedded: version beyond the record word's 45 bits")
	}
	r := p[i]
	r.setWord(ver)
	sw.live += r.size()
	return r, true
}
