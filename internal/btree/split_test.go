package btree

import (
	"math/rand/v2"
	"testing"
)

// fill returns the share of the slots of tr's nodes that hold an item.
func fill[T any](tr *BTreeG[T]) float64 {
	var items, slots int
	var walk func(n *node[T])
	walk = func(n *node[T]) {
		items += len(n.items)
		slots += tr.max
		if !n.leaf() {
			for _, c := range *n.children {
				walk(c)
			}
		}
	}
	walk(tr.root)
	return float64(items) / float64(slots)
}

func intsLess(a, b int) bool { return a < b }

// TestAppendsLeaveNodesFull: keys set in ascending order, at one tail or
// at several (a queue's priorities), fill the nodes they leave behind,
// where splits in the middle left them half empty; keys in random order
// split in the middle, as before.
func TestAppendsLeaveNodesFull(t *testing.T) {
	const n = 200_000
	for _, tails := range []int{1, 10} {
		tr := NewBTreeGOptions(intsLess, Options{NoLocks: true, Degree: 64})
		var hint PathHint
		for i := range n {
			tail := i % tails
			tr.SetHint(tail*n+i, &hint)
		}
		t.Logf("%d tails: %.1f%% full", tails, 100*fill(tr))
		if f := fill(tr); f < 0.95 {
			t.Fatalf("%d tails: nodes %.0f%% full after appends, want 95%% or more", tails, 100*f)
		}
		checkTree(t, tr, n)
	}
	tr := NewBTreeGOptions(intsLess, Options{NoLocks: true, Degree: 64})
	r := rand.New(rand.NewPCG(1, 1))
	for _, k := range r.Perm(n) {
		tr.Set(k)
	}
	t.Logf("random: %.1f%% full", 100*fill(tr))
	if f := fill(tr); f < 0.69 {
		t.Fatalf("nodes %.0f%% full after random sets, want 69%% or more, as with splits only", 100*f)
	}
	checkTree(t, tr, n)
	// Deleting every other key, then all, keeps the tree whole.
	for k := 0; k < n; k += 2 {
		if _, ok := tr.Delete(k); !ok {
			t.Fatalf("key %d not deleted", k)
		}
	}
	checkTree(t, tr, n/2)
}

// checkTree checks that tr holds want keys in ascending order, every node
// but the root holds at least one, and counts add up.
func checkTree[T any](t *testing.T, tr *BTreeG[T], want int) {
	t.Helper()
	if tr.Len() != want {
		t.Fatalf("Len %d, want %d", tr.Len(), want)
	}
	var prev T
	first, seen := true, 0
	tr.Scan(func(item T) bool {
		if !first && !tr.less(prev, item) {
			t.Fatalf("items out of order: %v then %v", prev, item)
		}
		prev, first = item, false
		seen++
		return true
	})
	if seen != want {
		t.Fatalf("scanned %d items, want %d", seen, want)
	}
	var walk func(n *node[T], root bool) int
	walk = func(n *node[T], root bool) int {
		if len(n.items) == 0 && !root {
			t.Fatal("empty node")
		}
		c := len(n.items)
		if !n.leaf() {
			if len(*n.children) != len(n.items)+1 {
				t.Fatalf("%d children for %d items", len(*n.children), len(n.items))
			}
			for _, ch := range *n.children {
				c += walk(ch, false)
			}
		}
		if c != n.count {
			t.Fatalf("node count %d, holds %d", n.count, c)
		}
		checkAbbrevs(t, tr, n)
		return c
	}
	if tr.root != nil {
		walk(tr.root, true)
	}
}
