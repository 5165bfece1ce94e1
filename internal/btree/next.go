package btree

import "bytes"

// SetHintNext is SetHint for items set in ascending order (fdbqueue's
// change): a batch's keys, sorted, most of which land right after the one
// set before them, at a queue's tail. It first follows the hint's path,
// without comparing, to the leaf where the last item set with the hint
// went, and if item falls strictly between the item there and the next
// one (the next item of the leaf, or the separator above it), inserts it
// there: two comparisons, where a search compares at every level (a hint
// costs two a level, a miss a binary search). Otherwise it is SetHint.
// Any hint is safe: the path is only followed, and the insert happens only
// between the item's true neighbours.
//
// The hint left behind points after the item set, where the next item of
// an ascending run goes.
func (tr *BTreeG[T]) SetHintNext(item T, hint *PathHint) (prev T, replaced bool) {
	if tr.locks {
		tr.mu.Lock()
		defer tr.mu.Unlock()
	}
	if tr.setNext(item, hint) {
		return tr.empty, false
	}
	return tr.setPast(item, hint)
}

// SetHintPast is SetHint, and leaves the hint pointing after the item, as
// SetHintNext does: for the item SetHintNext would set, once TrySetNext
// did not.
func (tr *BTreeG[T]) SetHintPast(item T, hint *PathHint) (prev T, replaced bool) {
	if tr.locks {
		tr.mu.Lock()
		defer tr.mu.Unlock()
	}
	return tr.setPast(item, hint)
}

func (tr *BTreeG[T]) setPast(item T, hint *PathHint) (prev T, replaced bool) {
	prev, replaced = tr.setHint(item, hint)
	if !replaced {
		// hintsearch left the leaf's index at the item (the place it
		// was inserted): step past it.
		n := tr.root
		for d := 0; d < len(hint.path) && hint.used[d]; d++ {
			i := int(hint.path[d])
			if n.leaf() {
				if i < len(n.items) {
					hint.path[d]++
				}
				break
			}
			if i >= len(*n.children) {
				break
			}
			n = (*n.children)[i]
		}
	}
	return prev, replaced
}

// TrySetNext inserts item where hint's path leads, as SetHintNext does
// without searching, if it falls strictly between its neighbours there and
// the leaf has room, and reports whether it did: otherwise the tree and the
// hint are unchanged. Any hint is safe.
func (tr *BTreeG[T]) TrySetNext(item T, hint *PathHint) bool {
	if tr.locks {
		tr.mu.Lock()
		defer tr.mu.Unlock()
	}
	return tr.setNext(item, hint)
}

// TrySetRun inserts the longest leading run of items that TrySetNext
// would insert one after the other (the leaf has room for them, and each
// falls between the previous one and the successor where hint's path
// leads), and returns how many it inserted:
// none leaves the tree and the hint unchanged. A run of adjacent keys (a
// batch's items of one priority, its consecutive ids) costs one walk of
// the path and one shift of the leaf, where item by item each took both.
// Any hint is safe.
func (tr *BTreeG[T]) TrySetRun(items []T, hint *PathHint) int {
	if tr.locks {
		tr.mu.Lock()
		defer tr.mu.Unlock()
	}
	return tr.setRun(items, hint)
}

// setNext inserts item at the leaf position hint's path leads to, if the
// item falls strictly between its neighbours there and the leaf has room,
// and reports whether it did.
func (tr *BTreeG[T]) setNext(item T, hint *PathHint) bool {
	one := [1]T{item}
	return tr.setRun(one[:], hint) == 1
}

// setRun inserts at the leaf position hint's path leads to the longest
// leading run of items that falls strictly between the neighbours there,
// in ascending order, and that the leaf has room for, and returns its
// length.
func (tr *BTreeG[T]) setRun(items []T, hint *PathHint) int {
	if len(items) == 0 {
		return 0
	}
	var path [len(PathHint{}.path)]*node[T]
	n := tr.root
	// The successor of n's subtree: the separator above it, up's item at
	// index ui (up nil: none).
	var up *node[T]
	var ui int
	k := tr.keyOf(items[0])
	for d := 0; n != nil && d < len(path) && hint.used[d]; d++ {
		if n.isoid != tr.isoid {
			return 0 // shared with a copy: setHint copies it first
		}
		path[d] = n
		i := int(hint.path[d])
		if !n.leaf() {
			if i >= len(*n.children) {
				return 0
			}
			if i < len(n.items) {
				up, ui = n, i
			}
			n = (*n.children)[i]
			continue
		}
		if i == 0 || i > len(n.items) || len(n.items) == tr.max ||
			!tr.after(n, i-1, items[0], k) {
			return 0
		}
		// The items go before the leaf's item i, or before the
		// separator above the leaf when they go at its end.
		succ, si := n, i
		if i == len(n.items) {
			succ, si = up, ui
		}
		m := 0
		for m < len(items) && m < tr.max-len(n.items) {
			if m > 0 {
				k = tr.keyOf(items[m])
				if !tr.after1(items[m-1], items[m], k) {
					break
				}
			}
			if succ != nil && !tr.before(succ, si, items[m], k) {
				break
			}
			m++
		}
		if m == 0 {
			return 0
		}
		tr.insertRun(n, i, items[:m])
		for _, p := range path[:d+1] {
			p.count += m
		}
		tr.count += m
		hint.path[d] = uint8(i + m)
		return m
	}
	return 0
}

// after1 reports whether item, of key k in a keyed tree, comes after
// prev.
func (tr *BTreeG[T]) after1(prev, item T, k []byte) bool {
	if tr.key != nil {
		return bytes.Compare(tr.key(prev), k) < 0
	}
	return tr.less(prev, item)
}

// after reports whether item, of key k in a keyed tree, comes after n's
// item i.
func (tr *BTreeG[T]) after(n *node[T], i int, item T, k []byte) bool {
	if tr.key != nil {
		return tr.kcmpAt(n, i, k) > 0
	}
	return tr.less(n.items[i], item)
}

// before reports whether item comes before n's item i.
func (tr *BTreeG[T]) before(n *node[T], i int, item T, k []byte) bool {
	if tr.key != nil {
		return tr.kcmpAt(n, i, k) < 0
	}
	return tr.less(item, n.items[i])
}
