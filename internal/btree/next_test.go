package btree

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSetHintNextMatchesSet: sorted runs at several tails, sets of keys
// already there, deletes, copies taken between (whose contents must not
// change) and garbage hints leave the tree holding what Set would, with
// counts that add up.
func TestSetHintNextMatchesSet(t *testing.T) {
	t.Parallel()
	for _, degree := range []int{2, 3, 16, 64} {
		r := rand.New(rand.NewPCG(uint64(degree), 7))
		tr := NewBTreeGOptions(intsLess, Options{NoLocks: true, Degree: degree})
		want := map[int]bool{}
		var hint PathHint
		var hints [8]PathHint // paths of earlier items
		var copies []*BTreeG[int]
		var copied [][]int
		for round := range 400 {
			// A batch: runs of ascending keys at random tails, some
			// already in the tree.
			var batch []int
			for range 1 + r.IntN(8) {
				base := r.IntN(100) * 1_000_000
				k := base + r.IntN(1000)
				for range 1 + r.IntN(60) {
					batch = append(batch, k)
					k += 1 + r.IntN(3)
				}
			}
			slices.Sort(batch)
			batch = slices.Compact(batch)
			if r.IntN(4) == 0 {
				hint = PathHint{}
				for d := range hint.path {
					hint.used[d] = r.IntN(2) == 0
					hint.path[d] = uint8(r.IntN(256))
				}
			}
			for _, k := range batch {
				var prev int
				var replaced bool
				// Now and then, as the engine's fingers do:
				// the path of an earlier item, or none, and
				// SetHintPast if the tree does not take k there.
				other := hints[r.IntN(len(hints))]
				switch {
				case r.IntN(3) > 0:
					prev, replaced = tr.SetHintNext(k, &hint)
				case !tr.TrySetNext(k, &other):
					prev, replaced = tr.SetHintPast(k, &hint)
				}
				hints[r.IntN(len(hints))] = hint
				require.Equal(t, want[k], replaced, "key %d", k)
				if replaced {
					require.Equal(t, k, prev)
				}
				want[k] = true
			}
			for range r.IntN(30) {
				k := r.IntN(100)*1_000_000 + r.IntN(1200)
				_, deleted := tr.DeleteHint(k, &hint)
				require.Equal(t, want[k], deleted, "key %d", k)
				delete(want, k)
			}
			if round%50 == 7 {
				copies = append(copies, tr.Copy())
				copied = append(copied, tr.Items())
			}
		}
		keys := make([]int, 0, len(want))
		for k := range want {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		require.Equal(t, keys, tr.Items())
		checkTree(t, tr, len(keys))
		for i, c := range copies {
			require.Equal(t, copied[i], c.Items(), "copy %d changed", i)
		}
	}
}

// TestSetHintNextCompares: keys set in ascending runs at ten tails of a
// large tree cost SetHintNext less than half the comparisons SetHint
// makes (about 3.5 a key against 13).
func TestSetHintNextCompares(t *testing.T) {
	t.Parallel()
	perKey := func(set func(tr *BTreeG[int], k int, hint *PathHint)) float64 {
		compares := 0
		less := func(a, b int) bool { compares++; return a < b }
		tr := NewBTreeGOptions(less, Options{NoLocks: true, Degree: 64})
		const tails, perRun, rounds = 10, 30, 2000
		next := make([]int, tails)
		var hint PathHint
		for round := range rounds {
			if round == rounds/2 {
				compares = 0
			}
			for tail := range tails {
				for range perRun {
					set(tr, tail*1_000_000_000+next[tail], &hint)
					next[tail]++
				}
			}
		}
		checkTree(t, tr, rounds*tails*perRun)
		return float64(compares) / (rounds / 2 * tails * perRun)
	}
	next := perKey(func(tr *BTreeG[int], k int, hint *PathHint) { tr.SetHintNext(k, hint) })
	plain := perKey(func(tr *BTreeG[int], k int, hint *PathHint) { tr.SetHint(k, hint) })
	t.Logf("comparisons a key: SetHintNext %.2f, SetHint %.2f", next, plain)
	require.Less(t, next, plain/2)
}

// TestTrySetRunMatchesModel: sorted batches set by TrySetRun, with the
// running path, the path of an earlier batch or a garbage one, and by
// SetHintPast for a key it does not take, leave keyed and plain trees
// holding what a sorted slice does, with counts and abbreviations right
// (checkTree); and a run is taken only where each of its keys falls
// between its neighbours, so a key the tree holds is never taken again,
// and only as far as its keys ascend.
func TestTrySetRunMatchesModel(t *testing.T) {
	t.Parallel()
	for _, degree := range []int{2, 3, 8, 64} {
		r := rand.New(rand.NewPCG(uint64(degree), 13))
		keyed := NewBTreeGKeyed(strKey, Options{NoLocks: true, Degree: degree})
		plain := NewBTreeGOptions(func(a, b string) bool { return a < b }, Options{NoLocks: true, Degree: degree})
		for _, tr := range []*BTreeG[string]{keyed, plain} {
			want := []string{}
			var hint PathHint
			var hints [8]PathHint
			runs := 0
			for round := range 300 {
				// Runs of adjacent keys at a few places, and
				// keys there already.
				var batch []string
				for range 1 + r.IntN(4) {
					k := randStr(r)
					for range 1 + r.IntN(40) {
						batch = append(batch, k)
						k += string([]byte{byte(r.IntN(3))})
					}
				}
				for range r.IntN(4) {
					if len(want) > 0 {
						batch = append(batch, want[r.IntN(len(want))])
					}
				}
				slices.Sort(batch)
				batch = slices.Compact(batch)
				if i := r.IntN(len(batch)); i > 0 && r.IntN(4) == 0 {
					// Out of order: a run ends before it.
					batch[i-1], batch[i] = batch[i], batch[i-1]
				}
				if r.IntN(8) == 0 {
					hint = PathHint{}
					for d := range hint.path {
						hint.used[d] = r.IntN(2) == 0
						hint.path[d] = uint8(r.IntN(256))
					}
				}
				for k := 0; k < len(batch); {
					h := &hint
					if r.IntN(4) == 0 {
						h = &hints[r.IntN(len(hints))]
					}
					if m := tr.TrySetRun(batch[k:], h); m > 0 {
						for _, key := range batch[k : k+m] {
							i, found := slices.BinarySearch(want, key)
							require.False(t, found, "key %q taken again", key)
							want = slices.Insert(want, i, key)
						}
						hint = *h
						runs += min(m-1, 1)
						k += m
						continue
					}
					tr.SetHintPast(batch[k], &hint)
					if i, found := slices.BinarySearch(want, batch[k]); !found {
						want = slices.Insert(want, i, batch[k])
					}
					k++
				}
				hints[r.IntN(len(hints))] = hint
				for range r.IntN(20) {
					if len(want) > 0 {
						i := r.IntN(len(want))
						tr.DeleteHint(want[i], &hint)
						want = slices.Delete(want, i, i+1)
					}
				}
				require.Equal(t, want, tr.Items(), "round %d", round)
				checkTree(t, tr, len(want))
				tr.Walk(func(items []string) bool {
					require.LessOrEqual(t, len(items), tr.max, "a leaf overfilled")
					return true
				})
			}
			if degree >= 8 {
				require.Greater(t, runs, 100, "runs of more than one key taken at once")
			}
			t.Logf("degree %d: %d runs", degree, runs)
		}
	}
}
