package embedded

import (
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
// wrote in (which take the iterator).
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
			opts := kv.RangeOptions{Limit: []int{0, 2, 3, 8, 9, 20}[r.IntN(6)], Reverse: r.IntN(2) == 0, Mode: kv.StreamingMode(r.IntN(3))}
			var rt kv.ReadTransaction = tr
			if r.IntN(3) == 0 {
				rt = tr.Snapshot()
			}
			what := fmt.Sprintf("round %d: %q %+v, snapshot %v", round, rg, opts, rt != kv.ReadTransaction(tr))

			reads, size := len(tx.reads), tx.size
			got, err := kv.GetRangeAsync(rt, rg, opts).Get()
			require.NoError(t, err, what)
			gotSpans, gotSize := spansText(tx.reads[reads:]), tx.size-size

			reads, size = len(tx.reads), tx.size
			want, err := kv.Collect(rt.GetRange(rg, opts))
			require.NoError(t, err, what)
			require.Equal(t, rowsText(want), rowsText(got), what)
			require.Equal(t, spansText(tx.reads[reads:]), gotSpans, what)
			require.Equal(t, tx.size-size, gotSize, what)
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

// spansText describes read-conflict spans, telling a single key (a nil
// end) from an empty span.
func spansText(ss []span) []string {
	var out []string
	for _, s := range ss {
		out = append(out, fmt.Sprintf("[%q, %q) (nil end %v)", s.begin, s.end, s.end == nil))
	}
	return out
}
