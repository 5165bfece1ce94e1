package btree

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// checkAbbrevs fails t unless n, a node of tr, holds an abbreviation for
// each item, and each is its key's bytes after the node's prefix, which
// the key starts with.
func checkAbbrevs[T any](t *testing.T, tr *BTreeG[T], n *node[T]) {
	t.Helper()
	if tr.key == nil {
		return
	}
	if len(n.abbrs) != len(n.items) {
		t.Fatalf("%d abbreviations for %d items", len(n.abbrs), len(n.items))
	}
	for i, item := range n.items {
		k := tr.key(item)
		if !bytes.HasPrefix(k, n.pre) {
			t.Fatalf("key %q lacks its node's prefix %q", k, n.pre)
		}
		if a := abbrAt(k, len(n.pre)); n.abbrs[i] != a {
			t.Fatalf("key %q after prefix %q: abbreviation %x, want %x", k, n.pre, n.abbrs[i], a)
		}
	}
}

func strKey(s string) []byte { return []byte(s) }

// randStr returns a key like the engine's: one of a few long prefixes,
// then a few bytes from a small alphabet (zero bytes included, so that
// keys differ past their abbreviations' zero padding), of any length.
func randStr(r *rand.Rand) string {
	prefixes := []string{"", "\x02fdbqueue\x00\x02t\x00\x15\x01", "\x02fdbqueue\x00\x02t\x00\x15\x02\x15\x03", "\x02fdbqueue\x00\x02t\x00\x15\x01\x15\x05\x15\x02\x15\x07\x00\x00\x00\x00\x00"}
	var b strings.Builder
	b.WriteString(prefixes[r.IntN(len(prefixes))])
	for range r.IntN(14) {
		b.WriteByte([]byte{0, 0, 1, 2, 0x15, 0xff}[r.IntN(6)])
	}
	return b.String()
}

// TestKeyedTreeMatchesModel: every way the tree changes (sets with and
// without hints, appends, the next-key sets, deletes of every kind, copies
// changed afterwards) leaves a keyed tree holding what a sorted slice
// does, each node's abbreviations right for its prefix (checkTree), and
// searches finding what the slice finds.
func TestKeyedTreeMatchesModel(t *testing.T) {
	t.Parallel()
	for _, degree := range []int{2, 3, 8, 64} {
		r := rand.New(rand.NewPCG(uint64(degree), 11))
		tr := NewBTreeGKeyed(strKey, Options{NoLocks: true, Degree: degree})
		want := []string{}
		var hint PathHint
		var hints [8]PathHint
		var copies []*BTreeG[string]
		var copied [][]string
		for round := range 300 {
			// Sets: a sorted batch, set in all the ways the engine does.
			var batch []string
			for range r.IntN(40) {
				batch = append(batch, randStr(r))
			}
			slices.Sort(batch)
			batch = slices.Compact(batch)
			for _, k := range batch {
				var replaced bool
				other := hints[r.IntN(len(hints))]
				switch r.IntN(5) {
				case 0:
					_, replaced = tr.Set(k)
				case 1:
					_, replaced = tr.SetHint(k, &hint)
				case 2:
					_, replaced = tr.SetHintNext(k, &hint)
				case 3:
					if !tr.TrySetNext(k, &other) {
						_, replaced = tr.SetHintPast(k, &hint)
					}
				case 4:
					if tr.Len() > 0 {
						last, _ := tr.Max()
						if k <= last {
							_, replaced = tr.Set(k)
							break
						}
					}
					_, replaced = tr.Load(k)
				}
				hints[r.IntN(len(hints))] = hint
				require.Equal(t, sortedHas(want, k), replaced, "key %q", k)
				sortedAdd(&want, k)
			}
			// Deletes of every kind.
			for range r.IntN(30) {
				if len(want) == 0 {
					break
				}
				var k string
				var ok bool
				switch r.IntN(6) {
				case 0:
					k = randStr(r)
					_, ok = tr.Delete(k)
					require.Equal(t, sortedHas(want, k), ok)
				case 1:
					k = want[r.IntN(len(want))]
					_, ok = tr.DeleteHint(k, &hint)
					require.True(t, ok)
				case 2:
					k, ok = tr.PopMin()
					require.True(t, ok)
					require.Equal(t, want[0], k)
				case 3:
					k, ok = tr.PopMax()
					require.True(t, ok)
					require.Equal(t, want[len(want)-1], k)
				case 4:
					i := r.IntN(len(want))
					k, ok = tr.DeleteAt(i)
					require.True(t, ok)
					require.Equal(t, want[i], k)
				case 5:
					lo, hi := randStr(r), randStr(r)
					if lo > hi {
						lo, hi = hi, lo
					}
					if r.IntN(2) == 0 {
						tr.DeleteRange(lo, hi, nil)
					} else {
						tr.DeleteAscend(lo, func(item string) Action {
							if item >= hi {
								return Stop
							}
							if r.IntN(4) == 0 {
								return Keep
							}
							sortedDel(&want, item)
							return Delete
						})
						break
					}
					for _, w := range slices.Clone(want) {
						if w >= lo && w < hi {
							sortedDel(&want, w)
						}
					}
				}
				if ok {
					sortedDel(&want, k)
				}
			}
			require.Equal(t, want, tr.Items(), "round %d", round)
			checkTree(t, tr, len(want))
			// Searches.
			for range 20 {
				k := randStr(r)
				_, ok := tr.GetHint(k, &hint)
				require.Equal(t, sortedHas(want, k), ok)
				i, _ := slices.BinarySearch(want, k)
				got := []string{}
				tr.AscendHint(k, func(item string) bool { got = append(got, item); return len(got) < 3 }, &hint)
				require.Equal(t, want[i:min(i+3, len(want))], got, "ascend from %q", k)
				it := tr.Iter()
				if it.Seek(k) {
					require.Equal(t, want[i], it.Item())
				} else {
					require.Equal(t, len(want), i)
				}
				it.Release()
			}
			if round%40 == 7 {
				copies = append(copies, tr.Copy())
				copied = append(copied, slices.Clone(want))
			}
		}
		for i, c := range copies {
			require.Equal(t, copied[i], c.Items(), "copy %d changed", i)
			checkTree(t, c, len(copied[i]))
		}
	}
}

// TestAbbrevsLoadFewKeys: a keyed tree of keys that share long prefixes,
// as the engine's do (more than 8 bytes within a cell), finds a key calling the key function a
// few times a search, where comparing whole keys calls it twice a
// comparison (about 40 times).
func TestAbbrevsLoadFewKeys(t *testing.T) {
	t.Parallel()
	calls := 0
	key := func(s string) []byte { calls++; return []byte(s) }
	tr := NewBTreeGKeyed(key, Options{NoLocks: true, Degree: 64})
	r := rand.New(rand.NewPCG(3, 4))
	mk := func(cell, seq int) string {
		return "\x02fdbqueue\x00\x02t\x00\x15\x01\x15\x03" + string([]byte{0x15, byte(cell >> 8), byte(cell), 0x15, 0x04, 0x15, 0x01, 0x16, byte(seq >> 16), byte(seq >> 8), byte(seq)})
	}
	const cells, n = 200, 200_000
	next := appendAtTails(tr, r, cells, n, mk)
	checkTree(t, tr, n)
	calls = 0
	const searches = 10_000
	for range searches {
		c := r.IntN(cells)
		_, ok := tr.Get(mk(c, r.IntN(next[c])))
		require.True(t, ok)
	}
	perSearch := float64(calls) / searches
	t.Logf("key calls a search: %.1f", perSearch)
	require.Less(t, perSearch, 8.0)
}

// TestShiftsKeepPrefixes: keys appended at the tails of many ranges, as a
// queue's fit-index entries are, fill leaves that each end with the next
// range's first keys; a full one moves its first keys into its left
// sibling (shiftLeft), whose keys share a longer prefix than the full
// leaf's. The sibling keeps its prefix (appendFrom reads the moved keys),
// where taking the full leaf's shorter one made its abbreviations tie and
// lengthen rewrote each of them from its key: 18.5 key calls an insert,
// against 14.8 with the shifts reading the moved keys (most of the rest
// are ties in inner nodes, whose separators of one range share more than
// their 8 bytes).
func TestShiftsKeepPrefixes(t *testing.T) {
	t.Parallel()
	calls := 0
	key := func(s string) []byte { calls++; return []byte(s) }
	tr := NewBTreeGKeyed(key, Options{NoLocks: true, Degree: 64})
	r := rand.New(rand.NewPCG(5, 6))
	const ranges, n = 64, 200_000
	mk := func(rg, seq int) string {
		// (range, 5, 7, seq, id): a range's keys share 8 bytes after
		// the range's first byte.
		return "\x02fdbqueue\x00\x02t\x00\x15\x01\x15\x03" + string([]byte{0x15, byte(rg), 0x15, 0x05, 0x15, 0x07, 0x17, 0x01, byte(seq >> 16), byte(seq >> 8), byte(seq), 0x16, byte(seq >> 8), byte(seq)})
	}
	appendAtTails(tr, r, ranges, n, mk)
	checkTree(t, tr, n)
	perInsert := float64(calls) / n
	t.Logf("key calls an insert: %.2f", perInsert)
	require.Less(t, perInsert, 16.5)
}

// appendAtTails sets n keys mk makes, each at the tail of one of ranges
// ranges picked at random (a range's keys mk(range, 0), mk(range, 1)...),
// and returns the next seq of each range.
func appendAtTails(tr *BTreeG[string], r *rand.Rand, ranges, n int, mk func(rg, seq int) string) []int {
	next := make([]int, ranges)
	var hint PathHint
	for range n {
		rg := r.IntN(ranges)
		tr.SetHint(mk(rg, next[rg]), &hint)
		next[rg]++
	}
	return next
}

// TestLengthenAtTheFirstByte: lengthen leaves a node's prefix as it is
// when its first and last keys differ in the byte after it (it returns
// before scanning the abbreviations), and lengthens it when they share
// that byte, by one byte or more, and two abbreviations tie.
func TestLengthenAtTheFirstByte(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		keys []string
		pre  string // the prefix lengthen leaves
	}{
		{"first byte differs", []string{"pa0123456789x", "pa0123456789y", "pb"}, "p"},
		{"second byte differs", []string{"pab01234567x", "pab01234567y", "pac"}, "pa"},
		{"long run", []string{"pabcdefghijk1", "pabcdefghijk2", "pabcdefghijk3"}, "pabcdefghijk"},
		{"no tie", []string{"pa1", "pa2", "pa3"}, "p"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tr := NewBTreeGKeyed(strKey, Options{NoLocks: true})
			n := tr.newNode(true)
			n.pre = []byte("p")
			for _, k := range c.keys {
				n.items = append(n.items, k)
				n.abbrs = append(n.abbrs, abbrAt([]byte(k), 1))
			}
			tr.lengthen(n)
			require.Equal(t, c.pre, string(n.pre))
			checkAbbrevs(t, tr, n)
		})
	}
}
