package btree

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// advRun returns a batch for TrySetRun: keys of advKey's shapes grown
// from one key (keys that are prefixes of the next, 0x00 and 0xff bytes,
// differences past the 8-byte window), sorted, some of them keys m holds
// already (updates, not inserts), a few repeated inside the batch, and
// now and then one out of order.
func advRun(r *rand.Rand, m advModel) []string {
	var batch []string
	for range 1 + r.IntN(3) {
		k := advKey(r)
		for range 1 + r.IntN(30) {
			batch = append(batch, k)
			switch r.IntN(4) {
			case 0:
				k += "\x00"
			case 1:
				k += string([]byte{0xff, byte(r.IntN(3))})
			case 2:
				if len(k) > 0 {
					k = k[:len(k)-1] + string([]byte{k[len(k)-1] + 1})
				} else {
					k = "\x00"
				}
			default:
				k += string([]byte{byte(r.IntN(256))})
			}
		}
	}
	for range r.IntN(3) {
		if len(m) > 0 {
			batch = append(batch, m[r.IntN(len(m))])
		}
	}
	slices.Sort(batch)
	if r.IntN(3) > 0 {
		batch = slices.Compact(batch)
	}
	if i := r.IntN(len(batch)); i > 0 && r.IntN(5) == 0 {
		batch[i-1], batch[i] = batch[i], batch[i-1]
	}
	return batch
}

// TestTrySetRunAdversarial: keyed and plain trees, their copies and
// unrelated trees (an empty one among them), sharing path hints (so that
// a hint comes from another tree, from a copy, or from before deletes and
// merges changed the tree, or is garbage), take batches of advRun's keys
// by TrySetRun, the keys it does not take by SetHintPast, and deletes of
// every kind (merges and rebalances of leaves whose prefixes differ):
// after each, every tree holds what a sorted slice does, with counts,
// prefixes and abbreviations right, and a copy is not changed by writes
// to the tree it was copied from. TrySetRun takes only keys the tree does
// not hold, in strictly ascending order, as many as it says.
func TestTrySetRunAdversarial(t *testing.T) {
	t.Parallel()
	for _, keyed := range []bool{true, false} {
		for _, degree := range []int{2, 3, 4, 8, 32} {
			for seed := uint64(1); seed <= 3; seed++ {
				t.Run(fmt.Sprintf("keyed=%v/degree=%d/seed=%d", keyed, degree, seed), func(t *testing.T) {
					t.Parallel()
					trySetRunAdversarial(t, keyed, degree, seed)
				})
			}
		}
	}
}

func trySetRunAdversarial(t *testing.T, keyed bool, degree int, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 100+uint64(degree)))
	newTree := func() *BTreeG[string] {
		if keyed {
			return NewBTreeGKeyed(strKey, Options{NoLocks: true, Degree: degree})
		}
		return NewBTreeGOptions(func(a, b string) bool { return a < b }, Options{NoLocks: true, Degree: degree})
	}
	trees := []*BTreeG[string]{newTree(), newTree()}
	models := []advModel{{}, {}}
	var hints [6]PathHint
	runs := 0
	for op := range 700 {
		w := r.IntN(len(trees))
		tr, m := trees[w], &models[w]
		hint := &hints[r.IntN(len(hints))]
		var what string
		switch c := r.IntN(20); {
		case c < 11:
			batch := advRun(r, *m)
			for k := 0; k < len(batch); {
				before := *hint
				n := tr.TrySetRun(batch[k:], hint)
				require.GreaterOrEqual(t, n, 0)
				require.LessOrEqual(t, n, len(batch)-k)
				if n == 0 {
					require.Equal(t, before, *hint, "a hint changed by a run not taken")
					_, rep := tr.SetHintPast(batch[k], hint)
					require.Equal(t, m.has(batch[k]), rep, "op %d: set %q", op, batch[k])
					m.add(batch[k])
					k++
					continue
				}
				for j, key := range batch[k : k+n] {
					require.False(t, m.has(key), "op %d: %q taken by a run, held already", op, key)
					if j > 0 {
						require.Less(t, batch[k+j-1], key, "op %d: a run out of order", op)
					}
					m.add(key)
				}
				if n > 1 {
					runs++
				}
				k += n
			}
			what = fmt.Sprintf("run of %d", len(batch))
		case c < 13:
			k := advKey(r)
			if len(*m) > 0 && r.IntN(3) > 0 {
				k = (*m)[r.IntN(len(*m))]
			}
			_, ok := tr.DeleteHint(k, hint)
			require.Equal(t, m.has(k), ok)
			m.del(k)
			what = "deletehint"
		case c < 14:
			// Many deletes: leaves merge and rebalance, moving
			// keys between leaves of different prefixes.
			for range 1 + r.IntN(len(*m)/2+1) {
				if len(*m) == 0 {
					break
				}
				i := r.IntN(len(*m))
				it, ok := tr.DeleteAt(i)
				require.True(t, ok)
				require.Equal(t, (*m)[i], it)
				m.del(it)
			}
			what = "deletes"
		case c < 15:
			lo, hi := advKey(r), advKey(r)
			if hi < lo {
				lo, hi = hi, lo
			}
			tr.DeleteRange(lo, hi, nil)
			for _, x := range slices.Clone(*m) {
				if x >= lo && x < hi {
					m.del(x)
				}
			}
			what = "deleterange"
		case c < 16:
			if it, ok := tr.PopMin(); ok {
				require.Equal(t, (*m)[0], it)
				m.del(it)
			}
			what = "popmin"
		case c < 17:
			if len(trees) < 5 {
				trees = append(trees, tr.Copy())
				models = append(models, slices.Clone(*m))
			}
			what = "copy"
		case c < 18:
			if len(trees) < 5 {
				trees = append(trees, newTree())
				models = append(models, advModel{})
			}
			what = "new tree"
		case c < 19:
			// A garbage hint.
			for d := range hint.path {
				hint.used[d] = r.IntN(3) > 0
				hint.path[d] = uint8(r.IntN(256))
			}
			what = "garbage hint"
		default:
			if len(trees) > 2 {
				trees = slices.Delete(trees, w, w+1)
				models = slices.Delete(models, w, w+1)
				continue
			}
			what = "none"
		}
		desc := fmt.Sprintf("op %d %s in tree %d", op, what, w)
		checkAdv(t, r, tr, *m, desc)
		tr.Walk(func(items []string) bool {
			require.LessOrEqual(t, len(items), tr.max, "%s: a leaf overfilled", desc)
			return true
		})
		for i := range trees {
			// The others, copies among them, are as they were.
			if op%25 == 0 {
				checkAdv(t, r, trees[i], models[i], desc+fmt.Sprintf(" (tree %d)", i))
			} else {
				require.Equal(t, []string(models[i]), trees[i].Items(), "%s (tree %d)", desc, i)
			}
		}
	}
	for i := range trees {
		checkAdv(t, r, trees[i], models[i], fmt.Sprintf("end (tree %d)", i))
	}
	if degree >= 4 {
		require.Greater(t, runs, 50, "runs of more than one key taken at once")
	}
}

// TestTrySetRunLeavesCopiesAlone: a run set with a hint into a tree whose
// nodes a copy shares (the hint taken before the copy) goes into the tree
// alone: the copy keeps what it held, in either direction.
func TestTrySetRunLeavesCopiesAlone(t *testing.T) {
	t.Parallel()
	for _, keyed := range []bool{true, false} {
		var tr *BTreeG[string]
		if keyed {
			tr = NewBTreeGKeyed(strKey, Options{NoLocks: true, Degree: 8})
		} else {
			tr = NewBTreeGOptions(func(a, b string) bool { return a < b }, Options{NoLocks: true, Degree: 8})
		}
		var m advModel
		for i := 0; i < 1000; i += 10 {
			k := fmt.Sprintf("k%04d", i)
			tr.Set(k)
			m.add(k)
		}
		for _, from := range []bool{true, false} {
			var hint PathHint
			_, rep := tr.SetHintPast("k0500", &hint) // a key the tree holds: the hint leads past it
			require.True(t, rep)
			cp := tr.Copy()
			dst, other := tr, cp
			if !from {
				dst, other = cp, tr
			}
			run := []string{"k0500a", "k0500b", "k0500c"}
			if from {
				run = []string{"k0500d", "k0500e"}
			}
			before := other.Items()
			n := dst.TrySetRun(run, &hint)
			require.Equal(t, before, other.Items(), "keyed %v: a run into a tree changed its copy", keyed)
			checkTree(t, other, len(before))
			for _, k := range run[:n] {
				_, ok := dst.Get(k)
				require.True(t, ok)
			}
			for _, k := range run[n:] {
				dst.SetHintPast(k, &hint)
			}
			checkTree(t, dst, len(before)+len(run))
			tr = dst
		}
	}
}
