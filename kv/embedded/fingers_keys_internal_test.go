package embedded

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFingersAdversarialKeys: commits (>= fingerMinKeys keys) at the
// tails of runs whose keys share their first fingerKey bytes with other
// runs' (finger keys that tie when truncated), runs whose prefix is a
// prefix of another's, plus deletions and compactions: the tree holds
// exactly the model's keys, and the finger list stays sorted by its
// truncated keys.
func TestFingersAdversarialKeys(t *testing.T) {
	s := newStore("", Config{})
	s.fing.minTree = 0 // a small tree
	s.sweep.slack = 16 << 10
	r := rand.New(rand.NewPCG(11, 12))
	long := strings.Repeat("L", 30)
	prefixes := []string{
		long + "a",         // 31 bytes
		long + "ab",        // 32
		long + "ab/",       // 33: shares 32 with the above
		long + "abc",       // 33
		long + "abcdefgh",  // 38
		long + "abcdefghi", // 39, prefix relation with the above
		"s",
		"s/",
		"",
	}
	const runsPer = 40
	tails := make([]int, len(prefixes)*runsPer)
	key := func(run, seq int) string {
		p := prefixes[run%len(prefixes)]
		return fmt.Sprintf("%s%c%06d", p, byte(run/len(prefixes)), seq)
	}
	model := map[string]bool{}
	hits := 0
	for round := range 600 {
		ws := map[string]bool{} // true: set, false: clear
		for range fingerMinKeys + r.IntN(100) {
			run := r.IntN(len(tails))
			switch r.IntN(6) {
			case 0:
				if tails[run] > 0 {
					ws[key(run, r.IntN(tails[run]))] = false
				}
			case 1:
				ws[key(run, r.IntN(tails[run]+1))] = true
			default:
				ws[key(run, tails[run])] = true
				tails[run]++
			}
		}
		b := &batch{}
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range ws {
				if !yield(k) {
					return
				}
			}
		}) {
			w := &write{key: []byte(k), base: baseSet, val: []byte("v")}
			if !ws[k] {
				w.base, w.val = baseCleared, nil
				delete(model, k)
			} else {
				model[k] = true
			}
			b.writes = append(b.writes, w)
		}
		s.nextVer++
		s.mu.Lock()
		s.installLocked(time.Time{}, s.nextVer, b)
		// the list sorted by the fingers' keys
		for i := 1; i < len(s.fing.list); i++ {
			a, c := &s.fing.slots[s.fing.list[i-1].slot], &s.fing.slots[s.fing.list[i].slot]
			require.LessOrEqual(t, bytes.Compare(a.key[:a.n], c.key[:c.n]), 0, "round %d: list out of order at %d", round, i)
		}
		var got []string
		s.tree.Scan(func(x rec) bool {
			if x.word()&flagDel == 0 {
				got = append(got, string(x.key()))
			}
			return true
		})
		s.mu.Unlock()
		want := slices.Sorted(func(yield func(string) bool) {
			for k := range model {
				if !yield(k) {
					return
				}
			}
		})
		require.Equal(t, want, got, "round %d", round)
		hits = s.fing.hits
	}
	t.Logf("%d keys placed by fingers", hits)
	require.NotZero(t, hits)
}
