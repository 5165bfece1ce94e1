package btree

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// advKey returns a key of the shapes that stress abbreviations: the
// empty key, keys that are prefixes of one another, a long shared prefix
// (up to 70 bytes, past maxPre) then a difference at any offset (across
// the 8-byte window's edges), 0x00 and 0xff bytes, equal abbreviations
// with different tails.
func advKey(r *rand.Rand) string {
	const base = "\x02fdbqueue\x00\x02t\x00\x15\x01\x15\x05\x00\xff\x00\xff\x15\x02\x15\x07\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a"
	switch r.IntN(10) {
	case 0:
		return ""
	case 1: // a prefix of the base
		return base[:r.IntN(len(base)+1)]
	}
	b := []byte(base[:r.IntN(len(base)+1)])
	if len(b) > 0 && r.IntN(3) > 0 {
		// change one byte at any offset
		b[r.IntN(len(b))] = []byte{0, 1, 0x7f, 0xfe, 0xff}[r.IntN(5)]
	}
	for range r.IntN(12) {
		b = append(b, []byte{0, 0, 1, 0xff, 0xff, 0x15}[r.IntN(6)])
	}
	return string(b)
}

// advModel is a sorted slice of a tree's keys.
type advModel []string

func (m advModel) has(k string) bool { _, ok := slices.BinarySearch(m, k); return ok }

func (m *advModel) add(k string) {
	if i, ok := slices.BinarySearch(*m, k); !ok {
		*m = slices.Insert(*m, i, k)
	}
}

func (m *advModel) del(k string) {
	if i, ok := slices.BinarySearch(*m, k); ok {
		*m = slices.Delete(*m, i, i+1)
	}
}

// checkAdv checks tr against its model: every item in order, forwards and
// backwards, every node's abbreviations, and searches of random keys
// (Get, Ascend and Descend from a pivot, Min, Max, GetAt).
func checkAdv(t *testing.T, r *rand.Rand, tr *BTreeG[string], m advModel, what string) {
	t.Helper()
	require.Equal(t, []string(m), tr.Items(), what)
	checkTree(t, tr, len(m))
	if tr.root != nil {
		var walk func(n *node[string])
		walk = func(n *node[string]) {
			checkAbbrevs(t, tr, n)
			if !n.leaf() {
				for _, c := range *n.children {
					walk(c)
				}
			}
		}
		walk(tr.root)
	}
	rev := []string{}
	tr.Reverse(func(item string) bool { rev = append(rev, item); return true })
	slices.Reverse(rev)
	require.Equal(t, []string(m), rev, what)
	if len(m) > 0 {
		lo, _ := tr.Min()
		hi, _ := tr.Max()
		require.Equal(t, m[0], lo, what)
		require.Equal(t, m[len(m)-1], hi, what)
		i := r.IntN(len(m))
		at, ok := tr.GetAt(i)
		require.True(t, ok)
		require.Equal(t, m[i], at, what)
	}
	for range 4 {
		k := advKey(r)
		if len(m) > 0 && r.IntN(2) == 0 {
			k = m[r.IntN(len(m))]
		}
		_, ok := tr.Get(k)
		require.Equal(t, m.has(k), ok, "%s: get %q", what, k)
		i, found := slices.BinarySearch(m, k)
		got := []string{}
		tr.Ascend(k, func(item string) bool { got = append(got, item); return len(got) < 3 })
		require.Equal(t, []string(m[i:min(i+3, len(m))]), got, "%s: ascend from %q", what, k)
		got = got[:0]
		tr.Descend(k, func(item string) bool { got = append(got, item); return len(got) < 3 })
		j := i
		if found {
			j++
		}
		want := slices.Clone([]string(m[max(0, j-3):j]))
		slices.Reverse(want)
		require.Equal(t, want, got, "%s: descend from %q", what, k)
		it := tr.Iter()
		if it.Seek(k) {
			require.Equal(t, m[i], it.Item(), "%s: seek %q", what, k)
			if it.Prev() {
				require.Equal(t, m[i-1], it.Item(), "%s: seek %q, prev", what, k)
			} else {
				require.Zero(t, i, "%s: seek %q, prev", what, k)
			}
		} else {
			require.Equal(t, len(m), i, "%s: seek %q", what, k)
		}
		it.Release()
	}
}

// TestKeyedTreeAdversarialKeys: a keyed tree and its copies, each changed
// afterwards by every kind of write (hinted ones with hints shared
// between the trees, so that a hint is reused after other writers
// changed the tree), hold what sorted slices do after every write, with
// keys of advKey's shapes.
func TestKeyedTreeAdversarialKeys(t *testing.T) {
	t.Parallel()
	for _, degree := range []int{2, 3, 4, 8} {
		for seed := uint64(1); seed <= 6; seed++ {
			t.Run(fmt.Sprintf("degree=%d/seed=%d", degree, seed), func(t *testing.T) {
				t.Parallel()
				r := rand.New(rand.NewPCG(seed, uint64(degree)))
				trees := []*BTreeG[string]{NewBTreeGKeyed(strKey, Options{NoLocks: true, Degree: degree})}
				models := []advModel{{}}
				var hints [4]PathHint
				// Fingers taken after hinted writes and kept: each
				// tried again long after, on any tree (fingerKeys:
				// the key each was taken after).
				var fingers [16]Finger[string]
				var fingerKeys [16]string
				tries, hits := 0, 0
				for op := range 2500 {
					w := r.IntN(len(trees))
					tr, m := trees[w], &models[w]
					hint := &hints[r.IntN(len(hints))]
					k := advKey(r)
					var what string
					switch c := r.IntN(20); {
					case c < 3:
						_, rep := tr.Set(k)
						require.Equal(t, m.has(k), rep)
						m.add(k)
						what = "set"
					case c < 6:
						_, rep := tr.SetHint(k, hint)
						require.Equal(t, m.has(k), rep)
						m.add(k)
						what = "sethint"
					case c < 8:
						_, rep := tr.SetHintNext(k, hint)
						require.Equal(t, m.has(k), rep)
						m.add(k)
						what = "sethintnext"
					case c < 9:
						if !tr.TrySetNext(k, hint) {
							_, rep := tr.SetHintPast(k, hint)
							require.Equal(t, m.has(k), rep)
						} else {
							require.False(t, m.has(k))
						}
						m.add(k)
						what = "trysetnext"
					case c < 10:
						if len(*m) > 0 && k <= (*m)[len(*m)-1] {
							tr.Set(k)
						} else {
							tr.Load(k)
						}
						m.add(k)
						what = "load"
					case c < 12:
						if len(*m) > 0 && r.IntN(2) == 0 {
							k = (*m)[r.IntN(len(*m))]
						}
						_, ok := tr.Delete(k)
						require.Equal(t, m.has(k), ok)
						m.del(k)
						what = "delete"
					case c < 14:
						if len(*m) > 0 && r.IntN(2) == 0 {
							k = (*m)[r.IntN(len(*m))]
						}
						_, ok := tr.DeleteHint(k, hint)
						require.Equal(t, m.has(k), ok)
						m.del(k)
						what = "deletehint"
					case c < 15:
						if it, ok := tr.PopMin(); ok {
							require.Equal(t, (*m)[0], it)
							m.del(it)
						}
						if it, ok := tr.PopMax(); ok {
							require.Equal(t, (*m)[len(*m)-1], it)
							m.del(it)
						}
						what = "popminmax"
					case c < 16:
						if len(*m) > 0 {
							i := r.IntN(len(*m))
							it, ok := tr.DeleteAt(i)
							require.True(t, ok)
							require.Equal(t, (*m)[i], it)
							m.del(it)
						}
						what = "deleteat"
					case c < 17:
						hi := advKey(r)
						if hi < k {
							k, hi = hi, k
						}
						tr.DeleteRange(k, hi, nil)
						for _, x := range slices.Clone(*m) {
							if x >= k && x < hi {
								m.del(x)
							}
						}
						what = "deleterange"
					case c < 18:
						// A run of keys that share a prefix, then one that
						// breaks it (lands at a node's edge).
						p := k
						for i := range 3 * degree {
							x := p + string([]byte{byte(i >> 8), byte(i)})
							tr.SetHint(x, hint)
							m.add(x)
						}
						x := p[:len(p)/2] + "\xff"
						tr.SetHint(x, hint)
						m.add(x)
						what = "run"
					case c < 19:
						if len(trees) < 4 {
							trees = append(trees, tr.Copy())
							models = append(models, slices.Clone(*m))
						}
						what = "copy"
					default:
						if len(trees) > 1 {
							trees = slices.Delete(trees, w, w+1)
							models = slices.Delete(models, w, w+1)
							what = "drop"
							continue
						}
						what = "none"
					}
					switch what {
					case "sethint", "sethintnext", "trysetnext", "deletehint", "run":
						f := r.IntN(len(fingers))
						fingers[f], fingerKeys[f] = tr.FingerOf(hint), k
					}
					if r.IntN(2) == 0 {
						// A key right after the one a finger was taken
						// after (or a random one) through the finger.
						checkAdv(t, r, tr, *m, fmt.Sprintf("op %d %s %q in tree %d", op, what, k, w))
						f := r.IntN(len(fingers))
						if k = advKey(r); r.IntN(4) > 0 {
							k = fingerKeys[f] + k[:min(len(k), 1+r.IntN(2))]
						}
						tries++
						if tr.TrySetFinger(k, &fingers[f]) {
							require.False(t, m.has(k), "op %d: finger placed %q, which the tree held", op, k)
							m.add(k)
							fingerKeys[f] = k
							hits++
						}
						what = "finger"
					}
					desc := fmt.Sprintf("op %d %s %q in tree %d", op, what, k, w)
					checkAdv(t, r, tr, *m, desc)
					if op%50 == 0 {
						for i := range trees {
							checkAdv(t, r, trees[i], models[i], desc+fmt.Sprintf(" (tree %d)", i))
						}
					}
				}
				t.Logf("%d of %d keys placed by fingers", hits, tries)
				require.Greater(t, hits, 5, "fingers placed too few keys to test them")
			})
		}
	}
}
