package fdbmodel

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// universe is every key of up to 3 bytes from {0x00, a, b}, sorted. Spans
// between such keys are exactly described by the universe keys they hold:
// a span [b, e) of universe keys holds b.
func universe() []string {
	keys := []string{""}
	level := []string{""}
	for range 3 {
		var next []string
		for _, k := range level {
			for _, c := range []string{"\x00", "a", "b"} {
				next = append(next, k+c)
			}
		}
		keys = append(keys, next...)
		level = next
	}
	slices.Sort(keys)
	return keys
}

// TestKnownAgainstSet: known agrees with the set of universe keys its
// spans hold, and keeps its spans sorted, disjoint and apart.
func TestKnownAgainstSet(t *testing.T) {
	t.Parallel()
	keys := universe()
	r := rand.New(rand.NewPCG(7, 8))
	for round := range 200 {
		var k known
		want := map[string]bool{}
		for range 1 + r.IntN(12) {
			var b, e string
			if r.IntN(2) == 0 {
				b = keys[r.IntN(len(keys))]
				for len(b) > 2 {
					b = b[:len(b)-1]
				}
				e = keyAfter(b)
				k.add(b, e)
			} else {
				b, e = keys[r.IntN(len(keys))], keys[r.IntN(len(keys))]
				k.add(b, e)
			}
			for _, x := range keys {
				if b <= x && x < e {
					want[x] = true
				}
			}
		}
		for i, s := range k.spans {
			require.Less(t, s.b, s.e, "round %d: an empty span", round)
			if i > 0 {
				require.Less(t, k.spans[i-1].e, s.b, "round %d: spans out of order, overlapping or touching: %q", round, k.spans)
			}
		}
		for _, x := range keys {
			require.Equal(t, want[x], k.has(x), "round %d: has(%q) of %q", round, x, k.spans)
		}
		for range 50 {
			b, e := keys[r.IntN(len(keys))], keys[r.IntN(len(keys))]
			all := true
			for _, x := range keys {
				if b <= x && x < e && !want[x] {
					all = false
				}
			}
			require.Equal(t, all, k.covers(b, e), "round %d: covers(%q, %q) of %q", round, b, e, k.spans)
		}
	}
}
