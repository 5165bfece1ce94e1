package btree

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// checkShape is checkTree (order, counts, no empty node but the root,
// abbreviations) and the rest of the tree's shape since splitTail: every
// leaf at the same depth, no node over tr.max items, inner nodes but the
// root at tr.min or more (only leaves may hold fewer: splitTail makes
// such leaves, never inner nodes), an inner root not empty, prefixes no
// longer than maxPre, and the slots of every node's arrays past their
// length empty (a stale item there keeps a deleted record alive).
func checkShape[T any](t *testing.T, tr *BTreeG[T], want int) {
	t.Helper()
	checkTree(t, tr, want)
	if tr.root == nil {
		require.Zero(t, want, "nil root")
		return
	}
	require.False(t, !tr.root.leaf() && len(tr.root.items) == 0, "empty inner root")
	depth := -1
	var walk func(n *node[T], d int)
	walk = func(n *node[T], d int) {
		require.LessOrEqual(t, len(n.items), tr.max, "node over max")
		require.LessOrEqual(t, len(n.pre), maxPre, "prefix over maxPre")
		for _, it := range n.items[len(n.items):cap(n.items)] {
			require.True(t, reflect.ValueOf(&it).Elem().IsZero(), "stale item past a node's length: %v", it)
		}
		if n.leaf() {
			if depth < 0 {
				depth = d
			}
			require.Equal(t, depth, d, "leaves at different depths")
			return
		}
		if n != tr.root {
			require.GreaterOrEqual(t, len(n.items), tr.min, "inner node under min")
		}
		kids := *n.children
		for _, c := range kids[len(kids):cap(kids)] {
			require.Nil(t, c, "stale child past a node's length")
		}
		for _, c := range kids {
			walk(c, d+1)
		}
	}
	walk(tr.root, 0)
}

// tailKeys makes keys shaped like a queue's index entries: a long shared
// prefix, then (cell, priority) and a sequence number and an id, so that
// a run's keys share a prefix longer than the next run's head shares with
// them, and most sets go at a run's tail (where splitTail splits).
type tailKeys struct {
	r    *rand.Rand
	runs int
	head []uint64 // per run: its lowest sequence number that may be held
	next []uint64 // per run: the next sequence number at its tail
}

// prefix returns the bytes every key of run starts with.
func (g *tailKeys) prefix(run int) []byte {
	return append([]byte("\x02fdbqueue\x00\x02t\x00\x15"), byte(run/7), 0x15, byte(run%7))
}

func (g *tailKeys) key(run int, seq uint64) string {
	b := g.prefix(run)
	if run%5 == 4 {
		// Some runs' keys differ within their first 8 bytes after
		// the run: short keys, abbreviations that do not tie.
		b = binary.BigEndian.AppendUint16(b, uint16(seq))
		return string(b)
	}
	b = binary.BigEndian.AppendUint64(b, seq)
	return string(append(b, byte(seq*7), 0x00))
}

// tail returns the next key at a random run's tail.
func (g *tailKeys) tail() string {
	run := g.r.IntN(g.runs)
	return g.tailOf(run)
}

func (g *tailKeys) tailOf(run int) string {
	g.next[run]++
	return g.key(run, g.next[run]-1)
}

// inside returns a key inside a random run, or past all runs.
func (g *tailKeys) inside() string {
	run := g.r.IntN(g.runs)
	if g.next[run] == 0 {
		return g.tailOf(run)
	}
	return g.key(run, g.r.Uint64N(g.next[run]+1)) // may be held already
}

// TestRunTailsModel: a keyed tree taking keys mostly at runs' tails
// (splitTail's case) in every way the engine sets them, deleted from at
// runs' heads (a queue's pops), at random, by ranges and by iterators,
// copied and cleared, holds what a sorted slice does after each step, its
// shape sound (checkShape), its searches and iterators agreeing with the
// slice, and its copies unchanged.
func TestRunTailsModel(t *testing.T) {
	t.Parallel()
	for _, degree := range []int{2, 3, 4, 6, 16, 32} {
		for seed := uint64(1); seed <= 8; seed++ {
			t.Run(fmt.Sprintf("degree=%d/seed=%d", degree, seed), func(t *testing.T) {
				t.Parallel()
				runTailsModel(t, degree, seed, 2500)
			})
		}
	}
}

func runTailsModel(t *testing.T, degree int, seed uint64, steps int) {
	r := rand.New(rand.NewPCG(seed, 0x7a11+uint64(degree)))
	runs := 2 + r.IntN(29)
	g := &tailKeys{r: r, runs: runs, head: make([]uint64, runs), next: make([]uint64, runs)}
	tr := NewBTreeGKeyed(strKey, Options{NoLocks: r.IntN(2) == 0, Degree: degree})
	var want []string
	hints := make([]PathHint, 4)
	type snapshot struct {
		tr   *BTreeG[string]
		want []string
	}
	var snaps []snapshot
	target := 8*tr.max + r.IntN(24*tr.max)
	split := 0
	for step := range steps {
		hint := &hints[r.IntN(len(hints))]
		if step%600 == 599 {
			// Grow, then shrink (merges of the small leaves), then grow.
			target = r.IntN(4*tr.max + 1)
			if step%1200 == 599 {
				target = 8*tr.max + r.IntN(24*tr.max)
			}
		}
		op := r.IntN(100)
		grow := len(want) < target
		// How many items a range or an iterator deletes at most: a
		// few, or now and then (or when shrinking) up to three nodes'.
		span := 1 + r.IntN(8)
		if !grow || r.IntN(10) == 0 {
			span = 1 + r.IntN(3*tr.max)
		}
		what := ""
		switch {
		case op < 85 && grow || op < 25:
			// Sets at runs' tails, one at a time or as a batch.
			what = "set"
			switch r.IntN(6) {
			case 0:
				k := g.tail()
				_, rep := tr.Set(k)
				require.Equal(t, sortedHas(want, k), rep)
				sortedAdd(&want, k)
			case 1:
				k := g.tail()
				_, rep := tr.SetHint(k, hint)
				require.Equal(t, sortedHas(want, k), rep)
				sortedAdd(&want, k)
			case 2:
				k := g.tail()
				_, rep := tr.SetHintNext(k, hint)
				require.Equal(t, sortedHas(want, k), rep)
				sortedAdd(&want, k)
			case 3:
				k := g.inside()
				if !tr.TrySetNext(k, hint) {
					_, rep := tr.SetHintPast(k, hint)
					require.Equal(t, sortedHas(want, k), rep)
				}
				sortedAdd(&want, k)
			case 4:
				// A batch: a few runs' consecutive tails, sorted.
				var batch []string
				for range 1 + r.IntN(3) {
					run := r.IntN(runs)
					for range 1 + r.IntN(12) {
						batch = append(batch, g.tailOf(run))
					}
				}
				slices.Sort(batch)
				for len(batch) > 0 {
					n := tr.TrySetRun(batch, hint)
					for _, k := range batch[:n] {
						require.False(t, sortedHas(want, k))
						sortedAdd(&want, k)
					}
					batch = batch[n:]
					if n == 0 {
						_, rep := tr.SetHintPast(batch[0], hint)
						require.Equal(t, sortedHas(want, batch[0]), rep)
						sortedAdd(&want, batch[0])
						batch = batch[1:]
					}
				}
			case 5:
				k := g.tail()
				if mx, ok := tr.Max(); ok && k <= mx {
					_, rep := tr.Set(k)
					require.Equal(t, sortedHas(want, k), rep)
				} else {
					tr.Load(k)
				}
				sortedAdd(&want, k)
			}
		case len(want) == 0:
			continue
		case op < 60:
			// A queue's pop: the head of a run.
			what = "pop a run's head"
			run := r.IntN(runs)
			lo := g.key(run, 0)
			i, _ := slices.BinarySearch(want, lo)
			if i == len(want) || !strings.HasPrefix(want[i], string(g.prefix(run))) {
				continue
			}
			k := want[i]
			var ok bool
			if r.IntN(2) == 0 {
				_, ok = tr.DeleteHint(k, hint)
			} else {
				var got string
				got, ok = tr.DeleteAt(i)
				require.Equal(t, k, got)
			}
			require.True(t, ok)
			sortedDel(&want, k)
		case op < 75:
			what = "delete one"
			i := r.IntN(len(want))
			k := want[i]
			switch r.IntN(4) {
			case 0:
				got, ok := tr.Delete(k)
				require.True(t, ok)
				require.Equal(t, k, got)
			case 1:
				got, ok := tr.DeleteAt(i)
				require.True(t, ok)
				require.Equal(t, k, got)
			case 2:
				k = want[0]
				got, ok := tr.PopMin()
				require.True(t, ok)
				require.Equal(t, k, got)
			case 3:
				k = want[len(want)-1]
				got, ok := tr.PopMax()
				require.True(t, ok)
				require.Equal(t, k, got)
			}
			sortedDel(&want, k)
		case op < 82:
			what = "delete a range"
			i := r.IntN(len(want))
			j := min(len(want), i+r.IntN(span))
			lo := want[i]
			hi := g.inside()
			if j < len(want) {
				hi = want[j]
			}
			if hi < lo {
				lo, hi = hi, lo
			}
			incl := r.IntN(2) == 0
			var deleted []string
			for _, w := range want {
				if w >= lo && (w < hi || incl && w == hi) {
					deleted = append(deleted, w)
				}
			}
			list := tr.DeleteRange(lo, hi, &DeleteRangeOptions{MaxInclusive: incl})
			var got []string
			list.Scan(func(k string) bool { got = append(got, k); return true })
			require.Equal(t, len(deleted), list.Len())
			require.Equal(t, deleted, got)
			for _, k := range deleted {
				sortedDel(&want, k)
			}
		case op < 89:
			what = "delete by iterator"
			lo := want[r.IntN(len(want))]
			stop := span
			keep := r.IntN(4)
			seen := 0
			tr.DeleteAscend(lo, func(k string) Action {
				require.True(t, sortedHas(want, k))
				seen++
				if seen > stop {
					return Stop
				}
				if keep > 0 && r.IntN(4) < keep-1 {
					return Keep
				}
				sortedDel(&want, k)
				return Delete
			})
		case op < 93:
			what = "delete what AscendMut and DescendMut visit"
			i := r.IntN(len(want))
			n := min(len(want)-i, span)
			var got []string
			if r.IntN(2) == 0 {
				tr.AscendMut(want[i], func(k string) bool {
					got = append(got, k)
					return len(got) < n
				})
				require.Equal(t, want[i:i+n], got)
			} else {
				tr.DescendMut(want[i+n-1], func(k string) bool {
					got = append(got, k)
					return len(got) < n
				})
				slices.Reverse(got)
				require.Equal(t, want[i:i+n], got)
			}
			for _, k := range got {
				_, ok := tr.DeleteHint(k, hint)
				require.True(t, ok)
				sortedDel(&want, k)
			}
		case op < 98:
			what = "iterate"
			var it IterG[string]
			if r.IntN(2) == 0 {
				it = tr.IterMut()
			} else {
				it = tr.Iter()
			}
			k := g.inside()
			i, _ := slices.BinarySearch(want, k)
			var ok bool
			if r.IntN(2) == 0 {
				ok = it.SeekHint(k, hint)
			} else {
				ok = it.Seek(k)
			}
			require.Equal(t, i < len(want), ok)
			for range 3 * tr.max {
				if !ok {
					break
				}
				require.Equal(t, want[i], it.Item())
				if r.IntN(3) == 0 {
					ok = it.Prev()
					i--
					require.Equal(t, i >= 0, ok)
				} else {
					ok = it.Next()
					i++
					require.Equal(t, i < len(want), ok)
				}
			}
			it.Release()
			for range 5 {
				j := r.IntN(len(want))
				got, ok := tr.GetAt(j)
				require.True(t, ok)
				require.Equal(t, want[j], got)
				got, ok = tr.GetHint(want[j], hint)
				require.True(t, ok)
				require.Equal(t, want[j], got)
			}
		case op < 99:
			what = "copy"
			snaps = append(snaps, snapshot{tr.Copy(), slices.Clone(want)})
			if r.IntN(2) == 0 {
				// Go on with the copy; the original is the snapshot.
				s := &snaps[len(snaps)-1]
				s.tr, tr = tr, s.tr
			}
		default:
			if r.IntN(5) == 0 {
				what = "clear"
				tr.Clear()
				want = want[:0]
			}
		}
		require.Equal(t, want, tr.Items(), "step %d: %s", step, what)
		checkShape(t, tr, len(want))
		split += smallLeaves(tr)
	}
	for i, s := range snaps {
		require.Equal(t, s.want, s.tr.Items(), "copy %d changed", i)
		checkShape(t, s.tr, len(s.want))
	}
	if degree > 2 {
		// degree 2's leaves (min 1) are never under min.
		require.Positive(t, split, "no leaf under min seen: splitTail untested")
	}
}

// smallLeaves returns how many of tr's leaves but the root hold fewer
// than tr.min items.
func smallLeaves[T any](tr *BTreeG[T]) int {
	small := 0
	var walk func(n *node[T])
	walk = func(n *node[T]) {
		if n.leaf() {
			if n != tr.root && len(n.items) < tr.min {
				small++
			}
			return
		}
		for _, c := range *n.children {
			walk(c)
		}
	}
	if tr.root != nil {
		walk(tr.root)
	}
	return small
}

// sortedHas, sortedAdd and sortedDel keep a model of a tree's keys: a
// sorted slice without duplicates.
func sortedHas(want []string, k string) bool {
	_, ok := slices.BinarySearch(want, k)
	return ok
}

func sortedAdd(want *[]string, k string) {
	if i, ok := slices.BinarySearch(*want, k); !ok {
		*want = slices.Insert(*want, i, k)
	}
}

func sortedDel(want *[]string, k string) {
	if i, ok := slices.BinarySearch(*want, k); ok {
		*want = slices.Delete(*want, i, i+1)
	}
}
