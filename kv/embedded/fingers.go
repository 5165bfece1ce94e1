// Fingers: where recent commits' keys went in the tree, so that a commit's
// key that lands next to one of them is inserted without a search.

package embedded

import (
	"bytes"

	"github.com/fdbqueue/fdbqueue/internal/btree"
)

// A queue's push writes most of its keys at tails: an item at its
// priority's tail, an index entry at its cell's tail, an id after the last
// one. The keys of one commit are sorted, and those that land right after
// the one before are inserted with two comparisons (btree.SetHintNext);
// but a 100-row INSERT's fit-index entries each go to the tail of another
// (cell, priority), and each took a search of the tree: about 20
// comparisons, most of them loading a record from a cold part of memory.
// That tail is where an earlier commit inserted the cell's last entry,
// though: fingers remember, for keys recent commits inserted, the leaf
// they went into (btree.Finger). A key is tried in the leaf of the largest
// remembered key at or below it, and searched for only if the leaf does
// not take it. A finger may be stale (the leaf split, lost items, or left
// the tree since): btree.TrySetFinger then refuses it, so any finger is
// safe.

// fingerCommits is how many commits a finger is kept for after the last
// one that used it. A 100-row INSERT into a queue with a fit index writes
// at the tails of about 4,500 runs ((cell, priority) and (shape,
// priority)), so each run's tail comes back every 20 commits or so; kept
// for 4 commits, fingers placed 24% of the keys that did not land next to
// the commit's previous one, and searches for the rest were 28% of the
// INSERT's CPU (1,500,000 rows, one client). Kept for 64, and in leaves
// rather than paths from the root, they place 93%.
const fingerCommits = 64

// maxFingers bounds the fingers kept, to 1 MiB (a finger costs 128 bytes:
// its slot, and its entries in the list and the list's scratch).
const maxFingers = 8192

// fingersPerCommit bounds the fingers a commit adds: a load of thousands
// of rows a commit keeps no more than a 100-row INSERT does.
const fingersPerCommit = 256

// finger is a remembered key, an entry of the sorted list: its slot, and
// the low 32 bits of the version of the last commit that used it.
type finger struct {
	slot int32
	used uint32
}

// fingerSlot is a remembered key and where it went in the tree
// (btree.Finger: its leaf, which splits elsewhere do not move). The key is
// a copy of its first fingerKey bytes, not the record: a finger kept for
// many commits would pin its record's slab (slab.go). A longer key's
// start sorts at or below it, so that the list stays sorted by the
// copies, and a key sought may find a finger past it, whose leaf does not
// take it: a search then places it.
type fingerSlot struct {
	fg  btree.Finger[rec]
	n   uint8
	key [fingerKey]byte
}

// fingerKey bounds the bytes of a key a finger keeps: a queue's keys are
// 15-30 bytes.
const fingerKey = 32

// setKey makes key the slot's.
func (s *fingerSlot) setKey(key []byte) { s.n = uint8(copy(s.key[:], key)) }

// Where the commit's last key is remembered (fingers.last).
const (
	lastNone  = -2 // not remembered
	lastAdded = -1 // added's last
	// >= 0: its index in list
)

// fingers is the store's fingers and the cursor of the commit being
// installed. Guarded by store.mu.
//
// The list is sorted by key. A key placed by a finger takes the finger
// over in place (the finger's old key is now right before it, and the
// next key of its run goes after the new one), which keeps the list's
// order and needs no merge; a key placed by a search adds a finger, and a
// commit's added fingers are merged into the list when it finishes. The
// list holds small entries; the fingers are in slots that stay put.
type fingers struct {
	list  []finger
	next  []finger // scratch for the next list
	slots []fingerSlot
	free  []int32  // slots no finger uses
	added []finger // the fingers the commit adds, in key order
	at    []int    // for each of added, its place in list
	cur   int      // list[:cur] is at or below the last key sought
	last  int      // where the commit's last key is remembered
	ver   uint64   // the commit's version
	swept uint64   // the version of the last merge
	hits  int      // keys placed by a finger, for tests
	// searched counts the keys placed by a search, for tests.
	searched int
	// adding says whether the commit uses fingers (fingerMinKeys,
	// minTree).
	adding bool
	// minTree is fingerMinTree; tests of the fingers make it 0.
	minTree int
	// run is store.setRunsLocked's scratch: the records of a stretch of
	// a commit's plain sets (mvcc.go).
	run []rec
}

// fingerMinKeys is the fewest keys a commit uses fingers for. A commit of
// one row or a few (a 1-row INSERT, a pop) has few keys that do not land
// next to the one before, and they are searched for: such commits, most
// of a queue's, neither pay for adding fingers (1-row INSERTs, memory:,
// 10% fewer a second when each commit added its keys' fingers and merged
// them into the list) nor look for them among those the larger ones left
// (fit pops 6% fewer a second: thousands of fingers, whose leaves the
// pops' deletions had changed).
const fingerMinKeys = 32

// fingerMinTree is the fewest keys the tree holds for commits to use
// fingers. A search of a small tree reads nodes the cache holds, and costs
// little more than a finger, which has its own costs: 100-row INSERTs,
// memory:, into a new queue (20,000 rows, where the tree fits in the
// cache) ran 13% more CPU a row with fingers (BenchmarkApplyYoung).
const fingerMinTree = 1 << 18

// start readies f for the keys of the commit at version ver, n keys in
// ascending order, into a tree of size keys.
func (f *fingers) start(ver uint64, n, size int) {
	f.adding = n >= fingerMinKeys && size >= f.minTree
	f.cur = 0
	f.added = f.added[:0]
	f.at = f.at[:0]
	f.last = lastNone
	f.ver = ver
}

// seek moves the cursor past the fingers at or below key, galloping:
// the keys of a commit come in ascending order.
func (f *fingers) seek(key []byte) {
	lo, step := f.cur, 1
	// Invariant: list[:lo] is at or below key.
	for lo+step-1 < len(f.list) && f.below(lo+step-1, key) {
		lo += step
		step *= 2
	}
	hi := min(lo+step-1, len(f.list)) // list[hi:] is above key
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if f.below(m, key) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	f.cur = lo
}

// below reports whether list[i] is at or below key.
func (f *fingers) below(i int, key []byte) bool {
	s := &f.slots[f.list[i].slot]
	return bytes.Compare(s.key[:s.n], key) <= 0
}

// insert puts r, of a commit's key, into tree: right after the commit's
// last key if the tree takes it there (hint, the commit's running hint),
// else as insertFar does. It returns what SetHintNext returns.
func (f *fingers) insert(tree *btree.BTreeG[rec], r rec, hint *btree.PathHint) (prev rec, replaced bool) {
	if tree.TrySetNext(r, hint) {
		if f.adding {
			f.extend(tree, r, hint)
		}
		return rec{}, false
	}
	return f.insertFar(tree, r, hint)
}

// insertFar is insert for r that the tree did not take right after the
// commit's last key: into the leaf of the largest remembered key at or
// below it if it belongs there, else after a search.
func (f *fingers) insertFar(tree *btree.BTreeG[rec], r rec, hint *btree.PathHint) (prev rec, replaced bool) {
	if !f.adding {
		f.searched++
		return tree.SetHintPast(r, hint)
	}
	f.seek(r.key())
	// The largest remembered key at or below r: the commit's last added
	// finger if it lies after list[cur-1].
	var g *finger
	last := lastNone
	switch n := len(f.added); {
	case n > 0 && f.at[n-1] == f.cur:
		g, last = &f.added[n-1], lastAdded
	case f.cur > 0:
		g, last = &f.list[f.cur-1], f.cur-1
	}
	if g != nil {
		sl := &f.slots[g.slot]
		if tree.TrySetFinger(r, &sl.fg) {
			f.hits++
			// The commit's next key goes elsewhere (most of
			// them: another run's tail), and the path to a
			// finger's leaf goes through nodes no search
			// brought into the cache: TrySetRun would walk
			// it to no avail. A key right after r finds the
			// finger again.
			*hint = btree.PathHint{}
			g.used = uint32(f.ver)
			sl.setKey(r.key())
			f.last = last
			return rec{}, false
		}
	}
	f.searched++
	prev, replaced = tree.SetHintPast(r, hint)
	f.add(tree, r, hint)
	return prev, replaced
}

// add makes r, just inserted with the path hint to after it, a new
// finger, if the bounds leave room for one.
func (f *fingers) add(tree *btree.BTreeG[rec], r rec, hint *btree.PathHint) {
	if len(f.added) >= fingersPerCommit || len(f.list)+len(f.added) >= maxFingers {
		f.last = lastNone
		return
	}
	var s int32
	if k := len(f.free); k > 0 {
		s = f.free[k-1]
		f.free = f.free[:k-1]
	} else {
		s = int32(len(f.slots))
		f.slots = append(f.slots, fingerSlot{})
	}
	f.slots[s].fg = tree.FingerOf(hint)
	f.slots[s].setKey(r.key())
	f.added = append(f.added, finger{slot: s, used: uint32(f.ver)})
	f.at = append(f.at, f.cur)
	f.last = lastAdded
}

// extend remembers r, inserted right after the commit's last key: in the
// last key's finger when no other remembered key lies between them, so
// that a run of adjacent keys keeps only its last.
func (f *fingers) extend(tree *btree.BTreeG[rec], r rec, hint *btree.PathHint) {
	f.seek(r.key())
	n := len(f.added)
	var g *finger
	switch {
	case f.last == lastAdded && f.at[n-1] == f.cur:
		g = &f.added[n-1]
	case f.last >= 0 && f.last == f.cur-1 && (n == 0 || f.at[n-1] < f.cur):
		g = &f.list[f.last]
	default:
		f.add(tree, r, hint)
		return
	}
	g.used = uint32(f.ver)
	f.slots[g.slot].fg = tree.FingerOf(hint)
	f.slots[g.slot].setKey(r.key())
}

// finish merges the commit's added fingers into the list, and drops the
// fingers no commit used for fingerCommits: no comparison is needed, as
// each added finger's place was found by seek. A commit that added none
// skips it, but for a sweep every fingerCommits.
func (f *fingers) finish() {
	if len(f.added) == 0 && f.ver < f.swept+fingerCommits {
		return
	}
	f.swept = f.ver
	next := f.next[:0]
	keep := func(g finger) {
		if uint32(f.ver)-g.used < fingerCommits {
			next = append(next, g)
			return
		}
		f.slots[g.slot].fg = btree.Finger[rec]{} // pins no node
		f.free = append(f.free, g.slot)
	}
	i := 0
	for k, g := range f.added {
		for ; i < f.at[k]; i++ {
			keep(f.list[i])
		}
		next = append(next, g)
	}
	for ; i < len(f.list); i++ {
		keep(f.list[i])
	}
	clear(f.list)
	f.list, f.next = next, f.list[:0]
	clear(f.added)
	f.added = f.added[:0]
}

// reset forgets every finger: the tree was copied (compact.go), and the
// fingers' leaves are the old tree's, which they would keep from the
// garbage collector with the stale items past their length.
func (f *fingers) reset() {
	clear(f.slots)
	f.slots = f.slots[:0]
	f.free = f.free[:0]
	clear(f.list)
	f.list = f.list[:0]
}
