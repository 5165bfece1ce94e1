// Package btree is github.com/tidwall/btree v1.8.1's generic B-tree
// (btreeg.go, and from map.go what it needs: iso.go), MIT-licensed (see
// LICENSE), with five changes. The first: a full node first moves items
// into its left sibling, if that has room, and splits only if not
// (shiftLeft, as a B*-tree does).
//
// Why: the engine's tree gets most of its keys appended in order at a few
// tails (each priority's and each fit-index cell's tail of a queue,
// consecutive ids), and a node that splits in the middle under appends
// keeps its empty half for good: the engine's tree took 16 B a key, twice
// its 8-byte slot (BenchmarkMemoryPerTask and
// BenchmarkMemoryPerRow report it). Upstream has no option for it.
//
// A second change, an addition (next.go): SetHintNext sets an item that
// goes right after the last one set with the hint, as a sorted batch's
// keys mostly do, with two comparisons instead of a search; TrySetNext
// does only that, with any path (the engine keeps the paths of recent
// inserts); TrySetRun does it for a run of such items at once, with one
// shift of the leaf; SetHintPast is SetHint leaving the hint after the
// item.
//
// A third (abbrev.go): a tree made by NewBTreeGKeyed orders its items by
// the bytes of their keys, and each node keeps the prefix its keys share
// and 8 bytes of each key after it, so that a search compares those and
// reads an item's key only on a tie. Why: the engine's items point to
// records scattered over the heap, and each comparison read two of them
// (cache misses: 20% of a realistic 100-row INSERT's CPU). It costs 8 bytes
// an item more.
//
// A fourth (splitTail, reserve): in a keyed tree, a full leaf into which
// a key goes inside, after a key it shares a longer prefix with than with
// the next (the tail of a run: a queue's fit-index entry at the end of its
// (cell, priority)), splits there, leaving the run's tail at the end of
// its leaf, where the run's next keys go without shifting the items after
// them (they shifted half a leaf of cold memory a key); such a leaf may
// hold fewer than min items (PopMin, PopMax and DeleteAt allow for it).
// And a keyed tree's node arrays grow by 32 slots at a time, not by
// doubling: leaves that a run's tail fills slowly keep no empty half;
// a leaf split in the middle (nodeSplit) keeps its array for its left
// half and copies its right half out, where both halves shared it with
// no room and grew twice; and the arrays a node grows out of are kept,
// a few, for the next node that needs one (spareItems), where they were
// garbage: most of what a young database's inserts left to collect.
//
// A fifth (finger.go): a Finger is a place in a leaf that stays usable
// long after, while splits and merges elsewhere move the paths' indices:
// it holds the leaf, valid while the leaf's gen (changed whenever the
// leaf loses items or leaves the tree) and the tree's (Clear,
// DeleteRange) are unchanged, and TrySetFinger inserts into it with no
// node above the leaf read. The nodes' counts above it are then made
// again by the next GetAt or DeleteAt. Why: a 100-row INSERT puts most of
// its index entries at the tails of thousands of runs, each coming back
// every 20 commits or so, and the searches for them were 28% of its CPU.
//
// To update: copy btreeg.go and the tests from upstream again, and carry
// the changes over (search for "fdbqueue's change"; next.go, abbrev.go and
// finger.go are ours; an upstream line that moves items becomes a call of insertAt,
// setAt, removeAt, removeRange or appendFrom, which keep the
// abbreviations); upstream's tests of BTreeG run here (btreeg_test.go, but
// TestContiguous*) beside the changes' own (split_test.go, next_test.go,
// abbrev_test.go, finger_test.go).
package btree
