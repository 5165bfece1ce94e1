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

// GetMany reads what Get reads, key by key, at the transaction's read
// version: for keys that are neighbours in the store, keys far apart,
// absent keys between present ones, keys given twice, keys before the
// first and past the last, keys deleted since the read version (which the
// reader still sees) and keys set since (which it does not).
func TestGetManyReadsAsGets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := embedded.Open("", embedded.Config{})
	t.Cleanup(func() { _ = db.Close() })
	key := func(i int) []byte { return fmt.Appendf(nil, "k%05d", i) }
	const n = 3000
	// Every key but each third; runs of absent keys, longer than a walk
	// steps over, at 1000-1099 and 2000-2499.
	present := func(i int) bool { return i%3 != 0 && !(i >= 1000 && i < 1100) && !(i >= 2000 && i < 2500) }
	// Keys that differ only past their first 9 bytes, each second one
	// present.
	long := func(i int) []byte { return fmt.Appendf(nil, "m0123456789ab%05d", i) }
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		for i := range n {
			if present(i) {
				tr.Set(key(i), fmt.Appendf(nil, "v%d", i))
			}
		}
		for i := 0; i < 300; i += 2 {
			tr.Set(long(i), fmt.Appendf(nil, "l%d", i))
		}
		return nil
	}))
	reader, err := db.CreateTransaction(ctx)
	require.NoError(t, err)
	t.Cleanup(reader.Cancel)
	_, err = reader.Get(key(1)) // takes the read version
	require.NoError(t, err)
	// After the reader's version: deletions it still sees, sets it does
	// not, and changed values it sees the old ones of.
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		for i := range n {
			switch {
			case i%7 == 0 && present(i):
				tr.Clear(key(i))
			case i%11 == 0 && !present(i):
				tr.Set(key(i), []byte("new"))
			case i%13 == 0 && present(i):
				tr.Set(key(i), []byte("changed"))
			}
		}
		return nil
	}))
	now, err := db.CreateTransaction(ctx)
	require.NoError(t, err)
	t.Cleanup(now.Cancel)
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var keys [][]byte
		switch m := r.IntN(5); m {
		case 0: // neighbours
			start := r.IntN(n)
			for i := start; i < min(n+5, start+r.IntN(200)+1); i++ {
				keys = append(keys, key(i))
			}
		case 1: // spread, some twice
			for range r.IntN(150) + 1 {
				keys = append(keys, key(r.IntN(n+10)))
			}
		case 2: // every fourth of a stretch, and around the ends
			for i := r.IntN(50); i < n; i += 4 * (1 + r.IntN(30)) {
				keys = append(keys, key(i))
			}
			keys = append(keys, []byte("a"), []byte("z"), []byte("k"))
		case 3: // long keys, and one that is not
			for range r.IntN(100) + 1 {
				keys = append(keys, long(r.IntN(310)))
			}
			keys = append(keys, key(r.IntN(n)))
		default: // one
			keys = append(keys, key(r.IntN(n)))
		}
		r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		for _, tr := range []kv.Transaction{reader, now} {
			got, err := kv.GetMany(tr.Snapshot(), keys)
			require.NoError(t, err)
			require.Len(t, got, len(keys))
			for i, k := range keys {
				want, err := tr.Snapshot().Get(k)
				require.NoError(t, err)
				require.Equal(t, want, got[i], "round %d, key %s", round, k)
			}
		}
	}
}
