package queues

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// TestDirAheadScansAsSkipScan: a directory read ahead (readDirAhead, with
// first coordinates that are right, stale, missing or none at all;
// readBoxAhead) lists what the skip-scan lists, and the pick records the
// read conflicts the skip-scan's own reads add, for directories of one to
// three coordinates.
func TestDirAheadScansAsSkipScan(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	r := rand.New(rand.NewPCG(5, 27))
	for round := range 200 {
		d := 1 + round%3
		base := tuple.Tuple{"dir", int64(round)}.Pack()
		keys, mins, maxs := randomDir(t, db, r, base, d)
		// The first coordinates a search would have learned, made stale:
		// some dropped, some added that the directory does not hold.
		var firsts []int64
		for _, k := range keys {
			if r.IntN(4) > 0 {
				firsts = append(firsts, k[0])
			}
		}
		for range r.IntN(3) {
			firsts = append(firsts, r.Int64N(12)-2)
		}
		slices.Sort(firsts)
		firsts = slices.Compact(firsts)
		if r.IntN(5) == 0 {
			firsts = nil
		}
		desc := fmt.Sprintf("round %d: %d coordinates within %v..%v, firsts %v", round, d, mins, maxs, firsts)

		scan := func(ahead bool) ([][]int64, []kv.Range) {
			tr, err := db.CreateTransaction(context.Background())
			require.NoError(t, err)
			defer tr.Cancel()
			log := &conflictLog{Transaction: tr, on: true}
			pk := &pick{rd: log, tr: log}
			var listed [][]int64
			fn := func(c []int64) error {
				listed = append(listed, slices.Clone(c))
				return nil
			}
			switch {
			case !ahead:
				require.NoError(t, skipScan(log, new([]byte), base, mins, maxs, fn), desc)
			case round%2 == 0 || mins[0] == math.MinInt64:
				require.NoError(t, readDirAhead(tr.Snapshot(), base, mins, maxs, firsts, nil).scan(pk, fn), desc)
			default:
				require.NoError(t, readBoxAhead(tr.Snapshot(), base, mins, maxs).scan(pk, fn), desc)
			}
			conflicts, err := log.conflicts()
			require.NoError(t, err)
			return listed, conflicts
		}
		wantListed, wantConflicts := scan(false)
		gotListed, gotConflicts := scan(true)
		require.Equal(t, wantListed, gotListed, desc)
		require.Equal(t, wantConflicts, gotConflicts, desc)
	}
}

// randomDir writes up to 40 keys of d random coordinates under base, and
// returns them, with bounds for a skip-scan of them: each coordinate's
// maximum below, inside or above theirs, its minimum mostly none.
func randomDir(t *testing.T, db *embedded.DB, r *rand.Rand, base []byte, d int) (keys [][]int64, mins, maxs []int64) {
	require.NoError(t, db.Transact(context.Background(), func(tr kv.Transaction) error {
		for range r.IntN(40) {
			k := make([]int64, d)
			for i := range k {
				k[i] = r.Int64N(12) - 2
			}
			keys = append(keys, k)
			tr.Set(appendInts(slices.Clone(base), k...), nil)
		}
		return nil
	}))
	mins, maxs = make([]int64, d), make([]int64, d)
	for i := range d {
		mins[i], maxs[i] = math.MinInt64, r.Int64N(12)-2
		if r.IntN(3) == 0 {
			mins[i] = r.Int64N(8) - 2
		}
	}
	return keys, mins, maxs
}
