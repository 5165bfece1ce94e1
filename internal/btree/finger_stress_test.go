package btree

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFingerStress: many fingers kept across every kind of write,
// with advKey keys (empty, prefixes of each other, longer than fingerHi),
// counts left stale between checks (no checkAdv, hence no GetAt, after
// each write).
func TestFingerStress(t *testing.T) {
	t.Parallel()
	for _, degree := range []int{2, 3, 4, 8} {
		for seed := uint64(1); seed <= 8; seed++ {
			t.Run(fmt.Sprintf("degree=%d/seed=%d", degree, seed), func(t *testing.T) {
				t.Parallel()
				r := rand.New(rand.NewPCG(seed, 99+uint64(degree)))
				tr := NewBTreeGKeyed(strKey, Options{NoLocks: true, Degree: degree})
				m := advModel{}
				var fingers [64]Finger[string]
				var fkeys [64]string
				var hint PathHint
				hits := 0
				for op := range 6000 {
					k := advKey(r)
					if r.IntN(2) == 0 {
						// keys of runs: some longer than fingerHi, some
						// prefixes of others across the fingerHi cut
						run := r.IntN(12)
						pad := []int{0, 20, 28, 31, 32, 33, 40}[run%7]
						k = fmt.Sprintf("r%02d/%s%d", run, string(make([]byte, pad)), r.IntN(1000))
					}
					switch c := r.IntN(100); {
					case c < 20:
						tr.SetHintPast(k, &hint)
						m.add(k)
						f := r.IntN(len(fingers))
						fingers[f], fkeys[f] = tr.FingerOf(&hint), k
					case c < 30:
						tr.SetHintNext(k, &hint)
						m.add(k)
						f := r.IntN(len(fingers))
						fingers[f], fkeys[f] = tr.FingerOf(&hint), k
					case c < 35:
						run := []string{k, k + "\x00", k + "\x01", k + "\x01\x00"}
						kept := run[:0]
						for _, x := range run {
							if !m.has(x) {
								kept = append(kept, x)
							}
						}
						n := tr.TrySetRun(kept, &hint)
						for _, x := range kept[:n] {
							m.add(x)
						}
					case c < 70:
						f := r.IntN(len(fingers))
						if r.IntN(3) > 0 {
							k = fkeys[f] + k[:min(len(k), 1+r.IntN(3))]
						}
						if tr.TrySetFinger(k, &fingers[f]) {
							require.False(t, m.has(k), "op %d: finger placed %q, held", op, k)
							m.add(k)
							fkeys[f] = k
							hits++
						}
					case c < 75:
						if len(m) > 0 && r.IntN(2) == 0 {
							k = m[r.IntN(len(m))]
						}
						_, ok := tr.DeleteHint(k, &hint)
						require.Equal(t, m.has(k), ok)
						m.del(k)
					case c < 77:
						if it, ok := tr.PopMin(); ok {
							require.Equal(t, m[0], it)
							m.del(it)
						}
					case c < 79:
						if it, ok := tr.PopMax(); ok {
							require.Equal(t, m[len(m)-1], it)
							m.del(it)
						}
					case c < 82:
						if len(m) > 0 && k > m[len(m)-1] {
							tr.Load(k)
							m.add(k)
						}
					case c < 84:
						if len(m) > 0 {
							i := r.IntN(len(m))
							it, ok := tr.DeleteAt(i)
							require.True(t, ok)
							require.Equal(t, m[i], it)
							m.del(it)
						}
					case c < 86:
						n := 1 + r.IntN(3*degree)
						seen := 0
						var gone []string
						tr.DeleteAscend(k, func(x string) Action {
							seen++
							if seen > n {
								return Stop
							}
							if r.IntN(3) == 0 {
								return Keep
							}
							gone = append(gone, x)
							return Delete
						})
						for _, x := range gone {
							require.True(t, m.has(x))
							m.del(x)
						}
					case c < 87:
						hi := advKey(r)
						if hi < k {
							k, hi = hi, k
						}
						tr.DeleteRange(k, hi, nil)
						for _, x := range slices.Clone(m) {
							if x >= k && x < hi {
								m.del(x)
							}
						}
					case c < 88:
						tr = tr.Copy()
					case c < 89:
						if r.IntN(10) == 0 {
							tr.Clear()
							m = m[:0]
						}
					default:
						tr.Set(k)
						m.add(k)
					}
					if len(m) > 600 {
						for range 50 {
							it, ok := tr.PopMin()
							require.True(t, ok)
							m.del(it)
						}
					}
					require.Equal(t, []string(m), tr.Items(), "op %d", op)
					require.Equal(t, len(m), tr.Len(), "op %d", op)
					if op%200 == 0 {
						checkAdv(t, r, tr, m, fmt.Sprintf("op %d", op))
					}
				}
				t.Logf("%d hits", hits)
				require.NotZero(t, hits, "no finger placed a key")
			})
		}
	}
}
