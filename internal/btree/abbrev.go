package btree

import (
	"bytes"
	"encoding/binary"
	"slices"
)

// Abbreviated keys (fdbqueue's change). A tree made by NewBTreeGKeyed
// orders its items by the bytes its key function returns, and each node
// keeps, beside its items, a prefix every one of their keys starts with
// (pre) and for each item an abbreviation (abbrs): the 8 bytes of its key
// after the prefix, big endian, zero-padded past the key's end. A search
// compares the search key with the prefix once a node, then with the
// abbreviations, and calls the key function for an item only on a tie:
// where each comparison of a tree of records called it twice, each call a
// load from wherever the item's key lies (a cache miss in a large tree).
//
// Abbreviations keep the order: if a's is below b's, a's key is below
// b's (a key that ends within the 8 bytes is padded with zeros, and is
// below any longer key that agrees with it up to its end). Equal
// abbreviations say nothing.
//
// A node's prefix may be shorter than its keys' common prefix, never
// longer. Moving items into a node whose prefix is longer than a moved
// key shares shortens it, and its abbreviations are rewritten from the
// bytes dropped from the prefix (reabbr): without calling the key function.
// A node whose items moved (split, shifted, merged) gets the longer prefix
// its keys may share now (lengthen), if two of its abbreviations are
// equal: a node's keys, far down the tree, share more bytes than the node
// they split from.
//
// Why 8 bytes in leaves too: a leaf holds 99% of the items, and fewer
// bytes were tried. 4 bytes (a full leaf's in 512 bytes, not 1,024; inner
// nodes kept 8, as a cell's keys tie in 4 there) took
// BenchmarkMemoryPerRow's tree from 65.6 to 50.0 B a row, 6 bytes (3
// uint16s, 768) to 57.6; but ApplyRandom's thread CPU was 20-30% above 8
// bytes' with either (alternated runs), more than the abbreviations
// bought. With 4, a leaf's abbreviations tied after most splits and
// shifts, and lengthen rewrote them from the keys: 7.8 key loads per
// installed key, 4.0 with 8 bytes. With 6 the loads were 4.1, and the
// cost was in the comparisons themselves (pprof: abbr, lengthen,
// memmove), not found in the time there was.

// maxPre bounds a node's prefix: the bytes copied into each node.
const maxPre = 48

// NewBTreeGKeyed returns a tree whose items are ordered by the bytes key
// returns for them (bytes.Compare), with abbreviated keys (abbrev.go).
// key must return the same bytes for an item for as long as it is in the
// tree.
func NewBTreeGKeyed[T any](key func(T) []byte, opts Options) *BTreeG[T] {
	tr := NewBTreeGOptions(func(a, b T) bool { return bytes.Compare(key(a), key(b)) < 0 }, opts)
	tr.key = key
	return tr
}

// keyOf returns item's key in a keyed tree, nil in others.
func (tr *BTreeG[T]) keyOf(item T) []byte {
	if tr.key == nil {
		return nil
	}
	return tr.key(item)
}

// abbrAt returns the abbreviation of k after its first at bytes.
func abbrAt(k []byte, at int) uint64 {
	if len(k) >= at+8 {
		return binary.BigEndian.Uint64(k[at:])
	}
	var a uint64
	for i := at; i < at+8; i++ {
		a <<= 8
		if i < len(k) {
			a |= uint64(k[i])
		}
	}
	return a
}

// reabbr returns the abbreviation after its first l bytes of a key with
// prefix pre, of which a is the abbreviation after pre.
func reabbr(a uint64, pre []byte, l int) uint64 {
	d := len(pre) - l
	switch {
	case d == 0:
		return a
	case d >= 8:
		return binary.BigEndian.Uint64(pre[l:])
	}
	return abbrAt(pre, l) | a>>(8*d)
}

// lcp returns the length of a's and b's common prefix.
func lcp(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i+8 <= n && binary.LittleEndian.Uint64(a[i:]) == binary.LittleEndian.Uint64(b[i:]) {
		i += 8
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// side tells where k lies against n's items when it does not start with
// n's prefix: below them all (-1) or above (1); otherwise 0, and k's
// abbreviation in n.
func side[T any](n *node[T], k []byte) (int, uint64) {
	p := n.pre
	if len(k) >= len(p) && string(k[:len(p)]) == string(p) {
		return 0, abbrAt(k, len(p))
	}
	// k does not start with p: it sorts below p (a prefix of p, or
	// below where they differ) or above. Comparing the prefix whole
	// (memequal), where lcp's loop found its length, took the install
	// of a 100-row INSERT from 11,160 to 10,440 instructions a row
	// (callgrind).
	if bytes.Compare(k, p) < 0 {
		return -1, 0
	}
	return 1, 0
}

// kcmp compares k, with abbreviation ab in n (side 0), with n's item i.
func (tr *BTreeG[T]) kcmp(n *node[T], i int, k []byte, ab uint64) int {
	if a := n.abbrs[i]; ab != a {
		if ab < a {
			return -1
		}
		return 1
	}
	l := len(n.pre)
	return bytes.Compare(k[l:], tr.key(n.items[i])[l:])
}

// kcmpAt compares k with n's item i.
func (tr *BTreeG[T]) kcmpAt(n *node[T], i int, k []byte) int {
	s, ab := side(n, k)
	if s != 0 {
		return s
	}
	return tr.kcmp(n, i, k, ab)
}

// kbsearch is bsearch for the key k.
func (tr *BTreeG[T]) kbsearch(n *node[T], k []byte) (index int, found bool) {
	s, ab := side(n, k)
	if s < 0 {
		return 0, false
	}
	if s > 0 {
		return len(n.items), false
	}
	low, high := 0, len(n.items)
	for low < high {
		h := int(uint(low+high) >> 1)
		c := tr.kcmp(n, h, k, ab)
		if c == 0 {
			return h, true
		}
		if c < 0 {
			high = h
		} else {
			low = h + 1
		}
	}
	return low, false
}

// khintsearch is hintsearch for the key k.
func (tr *BTreeG[T]) khintsearch(n *node[T], k []byte, hint *PathHint, depth int,
) (index int, found bool) {
	s, ab := side(n, k)
	low, high := 0, len(n.items)
	switch {
	case s < 0:
		index = 0
		goto path_match
	case s > 0 || high == 0:
		index = high
		goto path_match
	}
	if depth < 8 && hint.used[depth] {
		index = int(hint.path[depth])
		var c int
		if index >= len(n.items) {
			// tail item
			index = len(n.items) - 1
			if c = tr.kcmp(n, index, k, ab); c > 0 {
				index++
				goto path_match
			}
		} else {
			c = tr.kcmp(n, index, k, ab)
		}
		switch {
		case c == 0:
			found = true
			goto path_match
		case c > 0:
			low = index + 1
		case index == 0:
			goto path_match
		default:
			c = tr.kcmp(n, index-1, k, ab)
			if c > 0 {
				goto path_match
			}
			index--
			if c == 0 {
				found = true
				goto path_match
			}
			high = index
		}
	}
	for low < high {
		h := int(uint(low+high) >> 1)
		c := tr.kcmp(n, h, k, ab)
		if c == 0 {
			index, found = h, true
			goto path_match
		}
		if c < 0 {
			high = h
		} else {
			low = h + 1
		}
	}
	index = low

path_match:
	hint.record(n.leaf(), depth, index, found)
	return index, found
}

// admit shortens n's prefix, if needed, to one k starts with, rewriting
// the abbreviations.
func admit[T any](n *node[T], k []byte) {
	p := n.pre
	if len(k) >= len(p) && string(k[:len(p)]) == string(p) {
		return
	}
	l := lcp(p, k)
	for i, a := range n.abbrs {
		n.abbrs[i] = reabbr(a, p, l)
	}
	n.pre = p[:l]
}

// reserve makes room in node n for m more items: in a keyed tree by
// growStep slots at a time, where append doubled the arrays, whose empty
// half a node that fills slowly (a leaf splitTail left at a queue's
// tail, which takes a key every few dozen commits) kept for long; in
// others by doubling, as append did. A keyed tree's node takes a spare
// array, and leaves its old ones as spares (spareItems).
//
// The items left behind in the old array are cleared: an inner node's
// nodeSplit halves share their node's array, so the other half kept them
// reachable, deleted or not, for as long as it lived (the engine's
// records, and the slabs they lie in); and a spare's slots are empty.
func (tr *BTreeG[T]) reserve(n *node[T], m int) {
	l := len(n.items)
	if tr.key == nil {
		if l+m > cap(n.items) {
			items := slices.Grow([]T(nil), max(2*cap(n.items), l+m))[:l] // a size class's whole
			copy(items, n.items)
			clear(n.items)
			n.items = items
		}
		return
	}
	c := min(l+max(m, growStep), max(tr.max+1, l+m))
	if l+m > cap(n.items) {
		items := append(tr.spareItems(c), n.items...)
		clear(n.items)
		tr.dropItems(n.items)
		n.items = items
	}
	if l+m > cap(n.abbrs) {
		abbrs := append(tr.spareAbbrs(c), n.abbrs...)
		tr.dropAbbrs(n.abbrs)
		n.abbrs = abbrs
	}
}

// Spare arrays (fdbqueue's change). A keyed tree keeps the arrays its
// nodes grew out of, or a tail split left behind, and gives them to the
// next node that needs one of about their size: a young database's
// leaves grow and split all the time, and their old arrays were most of
// the garbage the engine made in the peers' 100-row INSERTs (220 of 800
// bytes a row), collected every few milliseconds in a small heap. A
// node's slots are its own: copy-on-write copies a node's arrays, and
// nodeSplit copies a leaf's right half out, and leaves an inner node's
// halves in parts of its array that do not overlap (the left half's
// capacity ends where the right half starts). So an array a node no
// longer uses is no other node's, and the tree's copies (Copy) keep
// spares of their own.

// maxSpares bounds the arrays of each kind a tree keeps.
const maxSpares = 16

// spareSlack is how many slots more than asked for a spare array may
// have: more would leave its node with room it may never fill.
const spareSlack = 16

// spareItems returns an empty item array of capacity c to c+spareSlack:
// a spare, or a new one (a size class's whole).
func (tr *BTreeG[T]) spareItems(c int) []T { return takeSpare(&tr.sparesT, c) }

// spareAbbrs is spareItems for abbreviation arrays.
func (tr *BTreeG[T]) spareAbbrs(c int) []uint64 { return takeSpare(&tr.sparesA, c) }

// dropItems keeps a, an array a node no longer uses, cleared by the
// caller (its items would keep what they point to reachable), as a spare.
func (tr *BTreeG[T]) dropItems(a []T) { dropSpare(&tr.sparesT, a) }

// dropAbbrs is dropItems for abbreviation arrays.
func (tr *BTreeG[T]) dropAbbrs(a []uint64) { dropSpare(&tr.sparesA, a) }

// takeSpare takes from *spares an array of capacity c to c+spareSlack,
// emptied, or makes one.
func takeSpare[E any](spares *[][]E, c int) []E {
	l := *spares
	for i := len(l) - 1; i >= 0; i-- {
		if a := l[i]; cap(a) >= c && cap(a) <= c+spareSlack {
			last := len(l) - 1
			l[i], l[last] = l[last], nil
			*spares = l[:last]
			return a[:0]
		}
	}
	return slices.Grow([]E(nil), c)
}

// dropSpare keeps a in *spares, if they have room.
func dropSpare[E any](spares *[][]E, a []E) {
	if cap(a) > 0 && len(*spares) < maxSpares {
		*spares = append(*spares, a[:0])
	}
}

// growStep is how many slots reserve adds to a node's arrays at least:
// 16 reallocated a filling leaf 4 times, its allocations 356 B a row of
// BenchmarkApplyRandom (173 with doubling), 32 twice (307 B), for the
// same memory a row (BenchmarkMemoryPerRow 297.7, 297.8 B).
const growStep = 32

// insertAt inserts item into n at index i.
func (tr *BTreeG[T]) insertAt(n *node[T], i int, item T) {
	tr.reserve(n, 1)
	n.items = append(n.items, tr.empty)
	copy(n.items[i+1:], n.items[i:])
	n.items[i] = item
	if tr.key == nil {
		return
	}
	k := tr.key(item)
	if len(n.abbrs) == 0 {
		n.pre = bytes.Clone(k[:min(len(k), maxPre)])
	} else {
		admit(n, k)
	}
	n.abbrs = append(n.abbrs, 0)
	copy(n.abbrs[i+1:], n.abbrs[i:])
	n.abbrs[i] = abbrAt(k, len(n.pre))
}

// insertRun inserts items, ascending, into n at index i, after n's item
// i-1 (n is not empty): one shift of n's arrays for them all. The prefix
// that the first and the last of them share with n's, every one between
// them shares.
func (tr *BTreeG[T]) insertRun(n *node[T], i int, items []T) {
	if len(items) == 1 {
		tr.insertAt(n, i, items[0])
		return
	}
	l, m := len(n.items), len(items)
	tr.reserve(n, m)
	n.items = slices.Grow(n.items, m)[:l+m]
	copy(n.items[i+m:], n.items[i:l])
	copy(n.items[i:], items)
	if tr.key == nil {
		return
	}
	admit(n, tr.key(items[0]))
	admit(n, tr.key(items[m-1]))
	n.abbrs = slices.Grow(n.abbrs, m)[:l+m]
	copy(n.abbrs[i+m:], n.abbrs[i:l])
	for j, item := range items {
		n.abbrs[i+j] = abbrAt(tr.key(item), len(n.pre))
	}
}

// setAt puts item, of another key, at n's index i.
func (tr *BTreeG[T]) setAt(n *node[T], i int, item T) {
	n.items[i] = item
	if tr.key != nil {
		k := tr.key(item)
		admit(n, k)
		n.abbrs[i] = abbrAt(k, len(n.pre))
	}
}

// removeRange removes n's items i to j-1.
func (tr *BTreeG[T]) removeRange(n *node[T], i, j int) {
	n.gen++ // finger.go
	end := len(n.items) - (j - i)
	copy(n.items[i:], n.items[j:])
	clear(n.items[end:])
	n.items = n.items[:end]
	if tr.key != nil {
		copy(n.abbrs[i:], n.abbrs[j:])
		n.abbrs = n.abbrs[:end]
	}
}

// removeAt removes n's item i and returns it.
func (tr *BTreeG[T]) removeAt(n *node[T], i int) T {
	item := n.items[i]
	tr.removeRange(n, i, i+1)
	return item
}

// appendFrom appends src's items lo to hi-1 to dst.
func (tr *BTreeG[T]) appendFrom(dst, src *node[T], lo, hi int) {
	tr.reserve(dst, hi-lo)
	dst.items = append(dst.items, src.items[lo:hi]...)
	if tr.key == nil || lo == hi {
		return
	}
	if len(dst.abbrs) == 0 {
		dst.pre = src.pre
		dst.abbrs = append(dst.abbrs, src.abbrs[lo:hi]...)
		return
	}
	if moved := hi - lo; len(dst.pre) > len(src.pre) && moved < len(dst.abbrs) {
		// The items may share dst's longer prefix, which src's
		// abbreviations cannot be stretched to: read their keys.
		// Shortening dst's prefix to src's, as below, cost more: a
		// leaf's first items moved into its left sibling (shiftLeft)
		// come from a leaf that holds the next range's first keys
		// too, with a short prefix, and the sibling's keys, sharing
		// more, tied with its prefix cut, so that lengthen rewrote
		// each of its abbreviations from its key (about 120 key
		// loads, a cold record each) at every other shift: 3.5 key
		// loads a row of a 100-row INSERT, 7 with 8 clients.
		admit(dst, tr.key(src.items[lo]))
		admit(dst, tr.key(src.items[hi-1]))
		for _, item := range src.items[lo:hi] {
			dst.abbrs = append(dst.abbrs, abbrAt(tr.key(item), len(dst.pre)))
		}
		return
	}
	admit(dst, src.pre)
	for _, a := range src.abbrs[lo:hi] {
		dst.abbrs = append(dst.abbrs, reabbr(a, src.pre, len(dst.pre)))
	}
}

// lengthen makes n's prefix its keys' common prefix, up to maxPre, if two
// of its abbreviations are equal (a search between them would call the
// key function) and that is longer, and rewrites the abbreviations: a
// call of the key function for each item. Distinct abbreviations are
// left as they are, however short the prefix: a search ties with one of
// them at most.
func (tr *BTreeG[T]) lengthen(n *node[T]) {
	if tr.key == nil || len(n.items) < 2 {
		return
	}
	// The first and the last key differ in the byte after the prefix
	// (their abbreviations' first): the prefix is their common prefix
	// already, and the scan below and the keys it loads would find no
	// longer one. A full leaf shifts into its sibling at most inserts
	// of a queue's index entries, and lengthens both: the scan was 5% of
	// installing 100-row INSERTs (callgrind: 104.1M -> 102.5M
	// instructions for 10,000 rows).
	if len(n.pre) >= maxPre || (n.abbrs[0]^n.abbrs[len(n.abbrs)-1])>>56 != 0 {
		return
	}
	dup := false
	for i := 1; i < len(n.abbrs) && !dup; i++ {
		dup = n.abbrs[i] == n.abbrs[i-1]
	}
	if !dup {
		return
	}
	f := tr.key(n.items[0])
	l := min(lcp(f, tr.key(n.items[len(n.items)-1])), maxPre)
	if l <= len(n.pre) {
		return
	}
	n.pre = bytes.Clone(f[:l])
	for i, item := range n.items {
		n.abbrs[i] = abbrAt(tr.key(item), l)
	}
}
