package embedded

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// TestRangeFutureIsIteratorRead: a range future reads the store without an
// iterator when the transaction wrote nothing in its range (collect); its
// rows, its read conflict and the bytes it counts are the iterator's, over
// several batches, limits that stop it or not, both directions, keys
// deleted and added since the read version, and ranges the transaction
// wrote in (which take the iterator). A read of one row (Limit 1, and
// kv.First) takes firstRow's path: its own seek, and a read conflict
// carved out of the transaction's byte blocks, which must not alias the
// caller's range (overwritten after the read here).
func TestRangeFutureIsIteratorRead(t *testing.T) {
	ctx := context.Background()
	db := Open("", Config{})
	defer db.Close()
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		for i := range 40 {
			v := []byte(fmt.Sprint(i))
			if i%7 == 0 {
				v = nil // present and empty
			}
			tr.Set(fmt.Appendf(nil, "k%02d", i), v)
		}
		return nil
	}))
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		tr, err := db.CreateTransaction(ctx)
		require.NoError(t, err)
		tx := tr.(*txn)
		_, err = tr.GetReadVersion()
		require.NoError(t, err)
		// Changes after the read version, which the reads must not see.
		require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
			tr.ClearRange(kv.Range{Begin: []byte("k10"), End: []byte("k14")})
			tr.Set([]byte("k20a"), []byte("new"))
			return nil
		}))
		if round%4 == 0 {
			tr.Set(fmt.Appendf(nil, "k%02d", r.IntN(40)), []byte("mine"))
		}
		for range 8 {
			a, b := fmt.Sprintf("k%02d", r.IntN(42)), fmt.Sprintf("k%02d", r.IntN(42))
			if a > b {
				a, b = b, a
			}
			rg := kv.Range{Begin: []byte(a), End: []byte(b)}
			opts := kv.RangeOptions{Limit: []int{0, 1, 1, 2, 3, 8, 9, 20}[r.IntN(8)], Reverse: r.IntN(2) == 0, Mode: kv.StreamingMode(r.IntN(3))}
			var rt kv.ReadTransaction = tr
			if r.IntN(3) == 0 {
				rt = tr.Snapshot()
			}
			what := fmt.Sprintf("round %d: %q %+v, snapshot %v", round, rg, opts, rt != kv.ReadTransaction(tr))

			reads, size := len(tx.reads), tx.size
			got, err := kv.GetRangeAsync(rt, rg, opts).Get()
			require.NoError(t, err, what)
			gotSpans, gotSize := spansText(liveSpans(tx.reads[reads:])), tx.size-size
			if opts.Limit == 1 {
				reads, size := len(tx.reads), tx.size
				e, ok, err := kv.First(rt, rg, opts.Reverse)
				require.NoError(t, err, what)
				var first []kv.KeyValue
				if ok {
					first = []kv.KeyValue{e}
				}
				require.Equal(t, rowsText(got), rowsText(first), what)
				require.Equal(t, gotSpans, spansText(liveSpans(tx.reads[reads:])), what)
				require.Equal(t, gotSize, tx.size-size, what)
			}
			// The caller's range is its own again: the spans recorded
			// keep their bounds.
			copy(rg.Begin, "zzz")
			copy(rg.End, "zzz")
			require.Equal(t, gotSpans, spansText(liveSpans(tx.reads[len(tx.reads)-len(gotSpans):])), what)
			rg = kv.Range{Begin: []byte(a), End: []byte(b)}

			reads, size = len(tx.reads), tx.size
			want, err := kv.Collect(rt.GetRange(rg, opts))
			require.NoError(t, err, what)
			require.Equal(t, rowsText(want), rowsText(got), what)
			require.Equal(t, spansText(liveSpans(tx.reads[reads:])), gotSpans, what)
			if a != b || opts.Limit != 1 {
				// (The iterator counts the empty span of an empty
				// range; a one-row read records none.)
				require.Equal(t, tx.size-size, gotSize, what)
			}
		}
		tr.Cancel()
		require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
			for i := 10; i < 14; i++ {
				tr.Set(fmt.Appendf(nil, "k%02d", i), []byte(fmt.Sprint(i)))
			}
			tr.Clear([]byte("k20a"))
			return nil
		}))
	}
}

func rowsText(kvs []kv.KeyValue) []string {
	var out []string
	for _, e := range kvs {
		out = append(out, fmt.Sprintf("%s=%q (nil %v)", e.Key, e.Value, e.Value == nil))
	}
	return out
}

// liveSpans drops the empty spans of ss, of reads that read nothing,
// which the commit drops too (mergeSpans): a one-row read records none.
func liveSpans(ss []span) []span {
	var out []span
	for _, s := range ss {
		if s.end == nil || !bytes.Equal(s.begin, s.end) {
			out = append(out, s)
		}
	}
	return out
}

// spansText describes read-conflict spans, telling a single key (a nil
// end) from an empty span.
func spansText(ss []span) []string {
	var out []string
	for _, s := range ss {
		out = append(out, fmt.Sprintf("[%q, %q) (nil end %v)", s.begin, s.end, s.end == nil))
	}
	return out
}
