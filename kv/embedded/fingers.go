// Fingers: where the last commits' keys went in the tree, so that a
// commit's key that lands right after one of them is inserted without a
// search.

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
// though: fingers remember, for the keys the last few commits inserted,
// the tree's path to just after them. A key is tried right after the
// largest remembered key at or below it (comparisons with records written
// a few commits ago, still in the cache), and searched for only if the
// tree does not take it there. A path may be stale (the tree changed since);
// btree.TrySetNext checks the key's neighbours where the path leads, so
// any path is safe.

// fingerCommits is how many commits a finger is kept for.
const fingerCommits = 4

// finger is a key a commit inserted and the path to just after it.
type finger struct {
	r    rec
	ver  uint64
	hint btree.PathHint
}

// fingers is the store's list of fingers, sorted by key, and the cursor of
// the commit being installed. Guarded by store.mu.
type fingers struct {
	list  []finger
	next  []finger // scratch for the next list
	added []finger // the fingers of the commit being installed, in key order
	at    []int    // for each of added, its place in list
	cur   int      // list[:cur] is at or below the last key sought
	hits  int      // keys placed by a finger, for tests
	// run is store.setRunsLocked's scratch: the records of a stretch of
	// a commit's plain sets (mvcc.go).
	run []rec
}

// start readies f for a commit's keys, in ascending order.
func (f *fingers) start() {
	f.cur = 0
	f.added = f.added[:0]
	f.at = f.at[:0]
}

// seek moves the cursor past the fingers at or below key, galloping:
// the keys of a commit come in ascending order.
func (f *fingers) seek(key []byte) {
	lo, step := f.cur, 1
	// Invariant: list[:lo] is at or below key.
	for lo+step-1 < len(f.list) && bytes.Compare(f.list[lo+step-1].r.key(), key) <= 0 {
		lo += step
		step *= 2
	}
	hi := min(lo+step-1, len(f.list)) // list[hi:] is above key
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if bytes.Compare(f.list[m].r.key(), key) <= 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	f.cur = lo
}

// insert puts r, of a commit's key, into tree: after the largest
// remembered key at or below it if the tree takes it there, else as
// SetHintNext does with hint (the commit's running hint). It returns what
// SetHintNext returns.
func (f *fingers) insert(tree *btree.BTreeG[rec], r rec, hint *btree.PathHint) (prev rec, replaced bool) {
	if tree.TrySetNext(r, hint) {
		f.extend(r, hint)
		return rec{}, false
	}
	return f.insertFar(tree, r, hint)
}

// insertFar is insert for r that the tree did not take right after the
// commit's last key (hint).
func (f *fingers) insertFar(tree *btree.BTreeG[rec], r rec, hint *btree.PathHint) (prev rec, replaced bool) {
	f.seek(r.key())
	if f.cur > 0 {
		h := f.list[f.cur-1].hint
		if tree.TrySetNext(r, &h) {
			f.hits++
			*hint = h
			f.add(r, hint)
			return rec{}, false
		}
	}
	prev, replaced = tree.SetHintPast(r, hint)
	f.add(r, hint)
	return prev, replaced
}

// add makes r, just inserted with the path hint to after it, a finger. A
// commit adds at most fingersPerCommit, so that the fingers take at most
// 64 KiB (2 lists of 4 commits' 256 fingers of 32 bytes): a load of
// thousands of rows a commit keeps no more than a 100-row INSERT does.
func (f *fingers) add(r rec, hint *btree.PathHint) {
	if len(f.added) < fingersPerCommit {
		f.added = append(f.added, finger{r: r, hint: *hint})
		f.at = append(f.at, f.cur)
	}
}

// fingersPerCommit bounds the fingers a commit adds.
const fingersPerCommit = 256

// extend makes r, inserted right after the previous key the commit
// inserted, a finger: in place of the last one when no remembered key lies
// between them, so that a run of adjacent keys keeps only its last.
func (f *fingers) extend(r rec, hint *btree.PathHint) {
	f.seek(r.key())
	if n := len(f.added); n > 0 && f.at[n-1] == f.cur {
		f.added[n-1] = finger{r: r, hint: *hint}
		return
	}
	f.add(r, hint)
}

// finish merges the commit's fingers, at version ver, into the list and
// drops those older than fingerCommits commits: no comparison is needed,
// as each added finger's place was found by seek.
func (f *fingers) finish(ver uint64) {
	next := f.next[:0]
	keep := func(g finger) {
		if g.ver+fingerCommits > ver {
			next = append(next, g)
		}
	}
	i := 0
	for k, g := range f.added {
		for ; i < f.at[k]; i++ {
			keep(f.list[i])
		}
		g.ver = ver
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
