package queues

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
)

// TestKnownReaderAnswersAsReads: reads answered from a range read ahead
// (whole, or cut short by a limit) return what the same reads return, and
// record what they would have covered and returned (as a conflictReader
// records them), reading through the reader below only past what is
// known.
func TestKnownReaderAnswersAsReads(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	key := func(i int) []byte { return fmt.Appendf(nil, "k%03d", i) }
	require.NoError(t, db.Transact(context.Background(), func(tr kv.Transaction) error {
		for i := 0; i < 100; i += 3 {
			tr.Set(key(i), fmt.Append(nil, i))
		}
		return nil
	}))
	r := rand.New(rand.NewPCG(3, 27))
	for round := range 300 {
		tr, err := db.CreateTransaction(context.Background())
		require.NoError(t, err)
		a := NewClaims().Begin(tr)
		from := 10 + r.IntN(20)
		ahead := kv.Range{Begin: key(from), End: key(50 + r.IntN(40))}
		limit := []int{0, 3, 8}[r.IntN(3)]
		rows, err := kv.Collect(tr.Snapshot().GetRange(ahead, kv.RangeOptions{Limit: limit}))
		require.NoError(t, err)
		// Two readers: the one under test, and the reads themselves.
		x := &knownReader{rd: &conflictReader{a: a, snap: tr.Snapshot()}, ks: []known{newKnown(ahead, limit, rows)}}
		want := &conflictReader{a: a, snap: tr.Snapshot()}
		for range 4 {
			b := r.IntN(100)
			if r.IntN(2) == 0 {
				b = from // as a scan of what was read ahead starts
			}
			q := kv.Range{Begin: key(b), End: key(b + 1 + r.IntN(40))}
			desc := fmt.Sprintf("round %d: %q read ahead with limit %d, read %q", round, ahead, limit, q)
			switch r.IntN(3) {
			case 0, 1:
				reverse := r.IntN(2) == 0
				e, ok, err := x.First(q, reverse)
				require.NoError(t, err)
				we, wok, err := want.First(q, reverse)
				require.NoError(t, err)
				require.Equal(t, wok, ok, desc)
				require.Equal(t, we, e, desc)
			default:
				n := 1 + r.IntN(8)
				got, wantRows := take(t, x.GetRange(q, kv.RangeOptions{}), n), take(t, want.GetRange(q, kv.RangeOptions{}), n)
				require.Equal(t, wantRows, got, desc)
			}
		}
		got, err := x.rd.(*conflictReader).ranges()
		require.NoError(t, err)
		got = append(got, x.ranges()...)
		wantRanges, err := want.ranges()
		require.NoError(t, err)
		require.Equal(t, mergeRanges(wantRanges), mergeRanges(got), "round %d", round)
		seen := append(slices.Clone(x.seen), x.rd.(*conflictReader).seen...)
		slices.SortFunc(seen, bytes.Compare)
		slices.SortFunc(want.seen, bytes.Compare)
		require.Equal(t, want.seen, seen, "round %d", round)
		a.Release(false)
		tr.Cancel()
	}
}

// take returns the first n key-values of it, or fewer if it ends.
func take(t *testing.T, it kv.Iterator, n int) []kv.KeyValue {
	var out []kv.KeyValue
	for len(out) < n && it.Next() {
		out = append(out, it.KeyValue())
	}
	require.NoError(t, it.Err())
	return out
}
