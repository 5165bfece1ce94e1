package btree

import "bytes"

// Finger is a place in a leaf of the tree, to insert next to long after
// (fdbqueue's change). A path hint leads there by indices, and a split or
// merge anywhere to the left of the path moves the indices of the nodes
// after it: kept over many commits of a growing tree, a hint leads
// elsewhere (measured: of a 100-row INSERT's keys that the paths kept from
// earlier commits did not take, the path differed at the root for a third
// and one level below for two fifths). And following a path from the root
// loads a node at every level, most of them cold. A finger holds the leaf
// itself, and the separator after it, valid while the leaf's gen and the
// tree's are what they were when the finger was taken:
//
//   - a node's gen changes whenever it loses items (removeRange: a
//     deletion, a split, a move of items to a sibling, the separator after
//     it replaced by its last item) or leaves the tree (a merge into its
//     left sibling);
//   - the tree's changes when nodes may leave it without their own
//     changing (Clear, and DeleteRange, which drops whole subtrees;
//     DeleteAscend deletes item by item);
//   - a copy of the tree (Copy, IsoCopy) gives it a new isoid, and a node
//     shared with the copy is not written to.
//
// While both hold, the leaf is in the tree and what lies between its last
// item and the separator after it still belongs in it: nothing is
// inserted but into a leaf, the separator after a leaf is only removed by
// taking the leaf's last item in its place, and a move of items into the
// leaf (a merge, a borrow from its right sibling) only widens its range.
// So an item that falls after the leaf's first item and before its next
// item there (or the separator, at its end) is inserted there, with no
// search and no node above the leaf read; the nodes' counts above it are
// then left behind, and made again by the next GetAt or DeleteAt (recount).
//
// Keyed trees only (NewBTreeGKeyed). A finger holds no item: the
// separator's key is copied (its first fingerHi bytes), so that a finger
// kept long pins no item's memory.
type Finger[T any] struct {
	leaf *node[T]
	gen  uint32 // leaf.gen when taken
	tgen uint32 // the tree's gen when taken
	// hint is the path to after the finger's item when it was taken;
	// depth is its leaf's level.
	hint  PathHint
	depth uint8
	hasHi bool  // there is a separator after the leaf
	hiCut bool  // hi holds the separator's first fingerHi bytes only
	hiLen uint8 // hi[:hiLen] is the separator's key, or its start
	hi    [fingerHi]byte
}

// fingerHi bounds the bytes of a separator's key a Finger keeps: a
// queue's keys are 15-30 bytes.
const fingerHi = 32

// FingerOf returns the finger of hint's path in tr as it is now: the leaf
// hint's indices lead to. A hint that leads to no leaf makes a finger that
// places nothing.
func (tr *BTreeG[T]) FingerOf(hint *PathHint) Finger[T] {
	if tr.locks {
		return Finger[T]{} // see TrySetFinger
	}
	f := Finger[T]{hint: *hint, tgen: tr.gen}
	n := tr.root
	var hi *node[T] // the separator after the leaf: hi.items[hiI]
	var hiI int
	for d := 0; tr.key != nil && n != nil && d < len(hint.path) && hint.used[d]; d++ {
		i := int(hint.path[d])
		if n.leaf() {
			f.leaf, f.gen, f.depth = n, n.gen, uint8(d)
			if hi != nil {
				k := tr.key(hi.items[hiI])
				f.hasHi, f.hiCut = true, len(k) > fingerHi
				f.hiLen = uint8(copy(f.hi[:], k))
			}
			return f
		}
		if i >= len(*n.children) {
			break
		}
		if i < len(n.items) {
			hi, hiI = n, i
		}
		n = (*n.children)[i]
	}
	return Finger[T]{}
}

// TrySetFinger inserts item into f's leaf, if f is still valid, item falls
// after the leaf's first item and before the next item there or the
// separator after the leaf, it is not there, and the leaf has room; and
// reports whether it did. Then f points after item, where the next item of
// an ascending run goes (f.Hint is the path to it, if the nodes above the
// leaf are where they were). Otherwise the tree and f are unchanged.
//
// For trees made with NoLocks, whose owner keeps readers out while it
// writes: a tree with locks takes no fingers (FingerOf returns one that
// places nothing). The counts of the nodes above the leaf are made again
// by the next call that reads them (GetAt, DeleteAt, DeleteRange), which
// writes them: on a tree that took fingers, those calls are writes.
func (tr *BTreeG[T]) TrySetFinger(item T, f *Finger[T]) bool {
	n := f.leaf
	if n == nil || n.gen != f.gen || tr.gen != f.tgen || n.isoid != tr.isoid ||
		len(n.items) == tr.max || len(n.items) == 0 {
		return false
	}
	k := tr.keyOf(item)
	i, found := tr.leafIndex(n, k, int(f.hint.path[f.depth]))
	if found || i == 0 {
		return false // i == 0: the leaf's lower bound is not known
	}
	if i == len(n.items) && f.hasHi && !f.belowHi(k) {
		return false
	}
	tr.insertAt(n, i, item)
	n.count++
	tr.count++
	tr.recount = true
	f.hint.path[f.depth] = uint8(i + 1)
	return true
}

// Hint returns the path to after f's item, as it was when the finger was
// taken: for the next items of an ascending run, which SetHintNext and
// TrySetRun check.
func (f *Finger[T]) Hint() PathHint { return f.hint }

// leafIndex returns where the key k goes in the leaf n of a keyed tree,
// and whether n holds it: first tried at i (after the item a finger was
// left past), else by a search of n.
func (tr *BTreeG[T]) leafIndex(n *node[T], k []byte, i int) (int, bool) {
	if i > 0 && i <= len(n.items) && tr.kcmpAt(n, i-1, k) > 0 &&
		(i == len(n.items) || tr.kcmpAt(n, i, k) < 0) {
		return i, false
	}
	return tr.kbsearch(n, k)
}

// belowHi reports whether k sorts before the separator after f's leaf;
// false when the part of it f keeps cannot tell.
func (f *Finger[T]) belowHi(k []byte) bool {
	h := f.hi[:f.hiLen]
	if c := bytes.Compare(k[:min(len(k), len(h))], h); c != 0 {
		return c < 0
	}
	// k and the separator agree on their first min(len(k), len(h))
	// bytes: k sorts first if it is a proper prefix of h. If h is the
	// whole separator, k is it or comes after it; if it is its start
	// only, which is not known.
	return len(k) < len(h)
}

// countAll makes the nodes' counts again if TrySetFinger left them
// behind: before any use of a node's count (getAt, DeleteAt, and
// DeleteRange, which drops a subtree by its count).
func (tr *BTreeG[T]) countAll() {
	if !tr.recount {
		return
	}
	if tr.root != nil {
		recount(tr.root)
	}
	tr.recount = false
}

func recount[T any](n *node[T]) int {
	c := len(n.items)
	if !n.leaf() {
		for _, ch := range *n.children {
			c += recount(ch)
		}
	}
	n.count = c
	return c
}
