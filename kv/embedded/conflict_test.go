package embedded_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
)

// ckey returns the i-th key of the conflict tests, in key order.
func ckey(i int) []byte { return []byte(fmt.Sprintf("k%05d", i)) }

// ckeys returns ckey(i) for each i in from..to-1, step by step.
func ckeys(from, to, step int) [][]byte {
	var out [][]byte
	for i := from; i < to; i += step {
		out = append(out, ckey(i))
	}
	return out
}

// A commit conflicts exactly when a commit after its read version wrote a
// key inside one of its read ranges or point reads. The check searches
// whichever side is longer, the writer's keys or the reader's ranges; both
// shapes are here, with the boundaries of each range.
func TestConflictsAreExact(t *testing.T) {
	t.Parallel()
	between := func(i int) []byte { return append(ckey(i), 'x') } // after ckey(i), before ckey(i+1)
	cases := []struct {
		name     string
		reads    []readSpan
		writes   [][]byte  // set by the other commit
		clear    *kv.Range // cleared by the other commit
		conflict bool
	}{
		// Many written keys, a few reads: each read searches the keys.
		{"range holds a written key", []readSpan{{ckey(101), ckey(104)}}, ckeys(0, 400, 2), nil, true},
		{"range between written keys", []readSpan{{between(100), ckey(102)}}, ckeys(0, 400, 2), nil, false},
		{"range ends at a written key", []readSpan{{ckey(99), ckey(100)}}, ckeys(0, 400, 2), nil, false},
		{"range starts at a written key", []readSpan{{ckey(100), ckey(101)}}, ckeys(0, 400, 2), nil, true},
		{"range past every written key", []readSpan{{ckey(400), ckey(500)}}, ckeys(0, 400, 2), nil, false},
		{"range before every written key", []readSpan{{[]byte("a"), ckey(0)}}, ckeys(0, 400, 2), nil, false},
		{"point read of a written key", []readSpan{{ckey(398), nil}}, ckeys(0, 400, 2), nil, true},
		{"point read beside written keys", []readSpan{{ckey(397), nil}}, ckeys(0, 400, 2), nil, false},
		{"last of several ranges hit", []readSpan{{ckey(1), ckey(2)}, {ckey(3), ckey(4)}, {ckey(397), ckey(399)}}, ckeys(0, 400, 2), nil, true},
		// Many reads, a few written keys: each key searches the reads.
		{"key inside one of many ranges", rangesEvery(10), [][]byte{ckey(205)}, nil, true},
		{"key between many ranges", rangesEvery(10), [][]byte{ckey(207)}, nil, false},
		{"key at a range's end", rangesEvery(10), [][]byte{ckey(206)}, nil, false},
		{"key at a range's begin", rangesEvery(10), [][]byte{ckey(200)}, nil, true},
		// Clears, whatever the counts.
		{"clear over a read", rangesEvery(10), nil, &kv.Range{Begin: ckey(207), End: ckey(211)}, true},
		{"clear between reads", rangesEvery(10), nil, &kv.Range{Begin: ckey(207), End: ckey(210)}, false},
		{"clear beside many keys", []readSpan{{ckey(101), ckey(102)}}, ckeys(0, 100, 1), &kv.Range{Begin: ckey(101), End: ckey(102)}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := embedded.Open("", embedded.Config{})
			defer db.Close()
			reader, err := db.CreateTransaction(ctx)
			require.NoError(t, err)
			for _, r := range c.reads {
				if r.end == nil {
					_, err := reader.Get(r.begin)
					require.NoError(t, err)
					continue
				}
				it := reader.GetRange(kv.Range{Begin: r.begin, End: r.end}, kv.RangeOptions{})
				for it.Next() {
				}
				require.NoError(t, it.Err())
			}
			require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
				for _, k := range c.writes {
					tr.Set(k, []byte("v"))
				}
				if c.clear != nil {
					tr.ClearRange(*c.clear)
				}
				return nil
			}))
			reader.Set([]byte("out"), []byte("v"))
			err = reader.Commit()
			if c.conflict {
				require.ErrorIs(t, err, kv.ErrNotCommitted)
			} else {
				require.NoError(t, err)
			}
		})
	}
}

// readSpan is a read of the conflict tests: the range [begin, end), or
// with end nil a point read of begin.
type readSpan struct{ begin, end []byte }

// rangesEvery returns the read ranges [ckey(i), ckey(i+step/2+1)) for i in
// 0, step, ... below 1000.
func rangesEvery(step int) []readSpan {
	var out []readSpan
	for i := 0; i < 1000; i += step {
		out = append(out, readSpan{ckey(i), ckey(i + step/2 + 1)})
	}
	return out
}

// TestConflictsAreExactRandom checks the conflict check against a
// brute-force one on random commits: a writer of 50 to 400 keys, a reader
// of 1 to 15 ranges and point reads (the check's search from each read of
// the writer's keys, from where the read before it left off), scattered
// over the same 1,000 keys, the reads of one reader disjoint.
func TestConflictsAreExactRandom(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	outcomes := map[bool]int{}
	for trial := range 400 {
		written := map[int]bool{}
		for range 20 + rng.IntN(280) {
			written[rng.IntN(1000)] = true
		}
		var reads []readSpan
		want := false
		nreads := 1 + rng.IntN(15)
		for i := rng.IntN(40); i < 1000 && len(reads) < nreads; i += 1 + rng.IntN(150) {
			n := rng.IntN(4) // 0: a point read, else a range of n keys
			if n == 0 {
				reads = append(reads, readSpan{ckey(i), nil})
				want = want || written[i]
				continue
			}
			reads = append(reads, readSpan{ckey(i), ckey(i + n)})
			for k := i; k < i+n; k++ {
				want = want || written[k]
			}
			i += n
		}
		db := embedded.Open("", embedded.Config{})
		reader, err := db.CreateTransaction(ctx)
		require.NoError(t, err)
		for _, r := range reads {
			if r.end == nil {
				_, err := reader.Get(r.begin)
				require.NoError(t, err)
				continue
			}
			_, err := kv.Collect(reader.GetRange(kv.Range{Begin: r.begin, End: r.end}, kv.RangeOptions{}))
			require.NoError(t, err)
		}
		require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
			for k := range written {
				tr.Set(ckey(k), []byte("v"))
			}
			return nil
		}))
		reader.Set([]byte("out"), []byte("v"))
		err = reader.Commit()
		if want {
			require.ErrorIs(t, err, kv.ErrNotCommitted, "trial %d", trial)
		} else {
			require.NoError(t, err, "trial %d", trial)
		}
		outcomes[want]++
		db.Close()
	}
	// Both outcomes, often: a check that always or never conflicts fails.
	require.Greater(t, outcomes[true], 100)
	require.Greater(t, outcomes[false], 100)
}

// TestEndedReadsConflictNoMore: a transaction's read conflicts are kept in
// an array that goes back with its buffers once it ends (committed or
// cancelled), for the next transaction's. The next one must start with
// none of them: a transaction that read only other keys commits, though a
// write landed after its read version on every key the one before read
// (with First, Get and a range read), on memory: and file:.
func TestEndedReadsConflictNoMore(t *testing.T) {
	t.Parallel()
	onMemoryAndFile(t, embedded.Config{RetryLimit: -1}, func(t *testing.T, db *embedded.DB) {
		ctx := context.Background()
		for round := range 20 {
			read := func(tr kv.Transaction) {
				for i := range 40 { // more than a first array holds
					_, _, err := kv.First(tr, kv.Range{Begin: ckey(100 * i), End: ckey(100*i + 50)}, false)
					require.NoError(t, err)
				}
				_, err := tr.Get(ckey(7))
				require.NoError(t, err)
				_, err = kv.Collect(tr.GetRange(kv.Range{Begin: ckey(9000), End: ckey(9100)}, kv.RangeOptions{}))
				require.NoError(t, err)
			}
			before, err := db.CreateTransaction(ctx)
			require.NoError(t, err)
			read(before)
			if round%2 == 0 {
				before.Cancel()
			} else {
				before.Set([]byte("w/before"), []byte("x"))
				require.NoError(t, before.Commit())
			}

			next, err := db.CreateTransaction(ctx)
			require.NoError(t, err)
			_, _, err = kv.First(next, kv.Range{Begin: []byte("other/"), End: []byte("other0")}, false)
			require.NoError(t, err)
			require.NoError(t, kv.Transact(ctx, db, func(tr kv.Transaction) error {
				for _, i := range []int{100 * (round % 40), 7, 9000 + round} {
					tr.Set(ckey(i), []byte("v"))
				}
				return nil
			}))
			next.Set([]byte("w/next"), []byte("x"))
			require.NoError(t, next.Commit(), "round %d: the next transaction read none of those keys", round)
		}
	})
}
