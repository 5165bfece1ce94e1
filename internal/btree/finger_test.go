package btree

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFingersOutliveSplitsAndMerges: keys appended at the tails of many
// runs, as a queue's fit index takes them, each through the finger its run
// kept from its last key (taken once, however long ago), while the tree
// splits, merges, borrows, loses ranges and keys from anywhere, and is
// copied: the tree holds what a sorted slice does throughout, and the
// fingers place many of the keys (20-43% in this mix of writes; more in a
// queue's, where fewer writes change a run's tail leaf).
func TestFingersOutliveSplitsAndMerges(t *testing.T) {
	t.Parallel()
	for _, degree := range []int{2, 4, 16, 64} {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("degree=%d/seed=%d", degree, seed), func(t *testing.T) {
				t.Parallel()
				r := rand.New(rand.NewPCG(seed, uint64(degree)))
				tr := NewBTreeGKeyed(strKey, Options{NoLocks: true, Degree: degree})
				m := advModel{}
				const runs = 300
				next := make([]int, runs)
				fingers := make([]Finger[string], runs)
				key := func(run, i int) string {
					// Runs of keys longer than a finger keeps of a
					// separator too.
					return fmt.Sprintf("run%05d/%s%08d", run, strings.Repeat("x", run%3*16), i)
				}
				var hint PathHint
				appends, hits := 0, 0
				for op := range 20_000 {
					switch c := r.IntN(10_000); {
					case c < 9000: // the next key of a run
						run := r.IntN(runs)
						k := key(run, next[run])
						next[run]++
						appends++
						if tr.TrySetFinger(k, &fingers[run]) {
							require.False(t, m.has(k))
							hits++
							hint = fingers[run].Hint()
						} else {
							_, rep := tr.SetHintPast(k, &hint)
							require.False(t, rep)
							fingers[run] = tr.FingerOf(&hint)
						}
						m.add(k)
					case c < 9600: // a key deleted, anywhere
						if len(m) > 0 {
							k := m[r.IntN(len(m))]
							_, ok := tr.Delete(k)
							require.True(t, ok)
							m.del(k)
						}
					case c < 9700:
						if it, ok := tr.PopMin(); ok {
							m.del(it)
						}
					case c < 9705: // a stretch of keys deleted in one go
						if len(m) > 0 {
							i := r.IntN(len(m))
							j := min(len(m), i+1+r.IntN(4*degree))
							lo, hi := m[i], m[j-1]+"\x00"
							tr.DeleteRange(lo, hi, nil)
							for _, x := range slices.Clone(m[i:j]) {
								m.del(x)
							}
						}
					case c < 9707: // a few keys from a pivot on, in one go
						if len(m) > 0 {
							i := r.IntN(len(m))
							n := 1 + r.IntN(4*degree)
							var gone []string
							tr.DeleteAscend(m[i], func(x string) Action {
								if len(gone) == n {
									return Stop
								}
								gone = append(gone, x)
								return Delete
							})
							require.Equal(t, []string(m[i:min(len(m), i+n)]), gone)
							for _, x := range gone {
								m.del(x)
							}
						}
					case c < 9710: // a whole run cleared
						run := r.IntN(runs)
						lo := fmt.Sprintf("run%05d/", run)
						for _, x := range slices.Clone(m) {
							if strings.HasPrefix(x, lo) {
								_, ok := tr.Delete(x)
								require.True(t, ok)
								m.del(x)
							}
						}
					case c < 9800:
						if len(m) > 0 {
							i := r.IntN(len(m))
							it, ok := tr.DeleteAt(i)
							require.True(t, ok)
							require.Equal(t, m[i], it)
							m.del(it)
						}
					case c < 9803: // a copy, written from now on
						tr = tr.Copy()
					default:
						if r.IntN(50) == 0 {
							tr.Clear()
							m = m[:0]
						}
					}
					if op%500 == 0 || op > 19_900 {
						checkAdv(t, r, tr, m, fmt.Sprintf("op %d", op))
					}
				}
				checkAdv(t, r, tr, m, "end")
				t.Logf("%d of %d appends placed by fingers", hits, appends)
				require.Greater(t, hits, appends/8, "appends placed by fingers")
			})
		}
	}
}

// TestFingerOfSeparatorKeys: a finger at the end of its leaf places a
// key only if it sorts before the separator after the leaf, and tells so
// from the part of a long separator it keeps, or refuses.
func TestFingerOfSeparatorKeys(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("s", fingerHi+8)
	for _, c := range []struct {
		sep, k string
		below  bool
	}{
		{"b", "a", true},
		{"b", "b", false},
		{"b", "c", false},
		{"bb", "b", true},
		{"b", "b\x00", false},
		{long, long[:fingerHi-1], true},
		{long, long[:fingerHi], false}, // could be below: not known
		{long, long + "a", false},
		{long, long[:fingerHi-1] + "r", true},
		{long, long[:fingerHi-1] + "t", false},
	} {
		var f Finger[string]
		f.hasHi, f.hiCut = true, len(c.sep) > fingerHi
		f.hiLen = uint8(copy(f.hi[:], c.sep))
		require.Equal(t, c.below, f.belowHi([]byte(c.k)), "%q below %q", c.k, c.sep)
		if c.below {
			require.Less(t, c.k, c.sep)
		}
	}
}

// TestLockedTreesTakeNoFingers: a tree with locks may be read by many
// goroutines at once, and the counts a finger leaves behind are made
// again by the next GetAt, which writes them: such a tree takes no
// fingers, and FingerOf, which reads the tree, reads nothing of it (a
// review found readers' GetAt racing to count, and FingerOf racing with a
// writer; -race runs this). GetAt from concurrent readers then answers
// exactly.
func TestLockedTreesTakeNoFingers(t *testing.T) {
	t.Parallel()
	tr := NewBTreeGKeyed(strKey, Options{Degree: 4}) // locks on
	key := func(i int) string { return fmt.Sprintf("k%06d", i) }
	for i := range 2000 {
		tr.Set(key(2 * i))
	}
	var wg sync.WaitGroup
	wg.Go(func() { // a writer, under the tree's lock
		for i := range 5000 {
			if k := key(2*(i%2000) + 1); i%2 == 0 {
				tr.Set(k)
			} else {
				tr.Delete(k)
			}
		}
	})
	for i := range 5000 {
		var h PathHint
		tr.GetHint(key(2*(i%2000)), &h)
		f := tr.FingerOf(&h)
		require.False(t, tr.TrySetFinger(key(2*(i%2000))+"x", &f))
	}
	wg.Wait()
	require.False(t, tr.recount)
	want := tr.Items()
	for range 4 {
		wg.Go(func() {
			for i := range 500 {
				got, ok := tr.GetAt(i * 3)
				require.True(t, ok)
				require.Equal(t, want[i*3], got)
			}
		})
	}
	wg.Wait()
}
