package embedded

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// TestClearSetModel checks clearSet against the plain list of the ranges
// added, over a small key space where ranges overlap, touch and nest often.
func TestClearSetModel(t *testing.T) {
	t.Parallel()
	key := func(i int) []byte { return []byte(fmt.Sprintf("k%02d", i)) }
	for seed := uint64(0); seed < 50; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		var c clearSet
		var added []kv.Range
		for step := 0; step < 40; step++ {
			a, b := r.IntN(40), r.IntN(40)
			if a == b {
				continue
			}
			if a > b {
				a, b = b, a
			}
			rg := kv.Range{Begin: key(a), End: key(b)}
			c.add(rg)
			added = append(added, rg)

			// Disjoint, not touching, ordered.
			rs := c.ranges()
			for i := range rs {
				require.Negative(t, bytes.Compare(rs[i].Begin, rs[i].End))
				if i > 0 {
					require.Negative(t, bytes.Compare(rs[i-1].End, rs[i].Begin), "seed %d: %q then %q", seed, rs[i-1], rs[i])
				}
			}
			inAny := func(k []byte) bool {
				for _, x := range added {
					if x.Contains(k) {
						return true
					}
				}
				return false
			}
			for i := 0; i < 41; i++ {
				k := key(i)
				require.Equal(t, inAny(k), c.contains(k), "seed %d key %s", seed, k)
				require.Equal(t, inAny(append(k, 0)), c.contains(append(k, 0)))
				for j := i + 1; j < 41; j++ {
					q := kv.Range{Begin: k, End: key(j)}
					want := false
					for _, x := range added {
						if bytes.Compare(x.Begin, q.End) < 0 && bytes.Compare(q.Begin, x.End) < 0 {
							want = true
						}
					}
					require.Equal(t, want, c.intersects(q), "seed %d range %s", seed, q)
				}
			}
		}
	}
}

// BenchmarkClearRowByRow: a transaction that clears rows one range at a
// time, as a DELETE of many rows does, and reads between the clears. It was
// quadratic (every read scanned every clear).
func BenchmarkClearRowByRow(b *testing.B) {
	db := Open("", Config{})
	defer db.Close()
	tr, _ := db.CreateTransaction(b.Context())
	defer tr.Cancel()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		k := []byte(fmt.Sprintf("row/%09d/", i))
		tr.ClearRange(kv.PrefixRange(k))
		if _, err := tr.Get(append(k, 'x')); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRecSize: the tree holds a key as one pointer into a slab;
// a field added to rec grows every key's slot in the tree.
func TestRecSize(t *testing.T) {
	t.Parallel()
	require.Equal(t, uintptr(8), unsafe.Sizeof(rec{}))
}
