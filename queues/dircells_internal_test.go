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

// TestCellsScanAsSkipScan: the skip-scan over a directory read whole and
// decoded once (dirRead.cells, cellsScan) lists what the skip-scan's own
// reads list, and adds the read conflicts they add, for directories of one
// to three coordinates and bounds below, inside and above what they hold;
// a directory it cannot decode (a key with a coordinate more, or not an
// integer) or read only in part is left to the skip-scan.
func TestCellsScanAsSkipScan(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	r := rand.New(rand.NewPCG(7, 31))
	for round := range 300 {
		d := 1 + round%3
		base := tuple.Tuple{"cells", int64(round)}.Pack()
		_, mins, maxs := randomDir(t, db, r, base, d)
		desc := fmt.Sprintf("round %d: %d coordinates within %v..%v", round, d, mins, maxs)

		scanAsSkipScan(t, db, base, d, mins, maxs, desc)
	}

	// What cells leaves to the skip-scan.
	base := tuple.Tuple{"cells", "odd"}.Pack()
	key := func(vs ...any) kv.KeyValue {
		return kv.KeyValue{Key: append(slices.Clone(base), tuple.Tuple(vs).Pack()...)}
	}
	pr := kv.PrefixRange(base)
	for _, c := range []struct {
		name  string
		rows  []kv.KeyValue
		limit int
	}{
		{"a coordinate more", []kv.KeyValue{key(int64(1), int64(2)), key(int64(1), int64(2), int64(3))}, 0},
		{"not an integer", []kv.KeyValue{key(int64(1), int64(2)), key(int64(1), "x")}, 0},
		{"cut short", []kv.KeyValue{key(int64(1), int64(2)), key(int64(1), int64(3))}, 2},
	} {
		dr := &dirRead{k: newKnown(pr, c.limit, c.rows)}
		require.Nil(t, dr.cells(base, 2), c.name)
		require.Nil(t, dr.cells(base, 2), c.name)
	}
}

// TestCellsScanAsSkipScanAtExtremes is TestCellsScanAsSkipScan with
// coordinates and bounds at the ends of int64 and around the encoding's
// length changes: a last coordinate equal to the maximum (the read after
// it is empty), bounds of math.MaxInt64, and minimums above maximums.
func TestCellsScanAsSkipScanAtExtremes(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	r := rand.New(rand.NewPCG(11, 13))
	vals := []int64{math.MinInt64, math.MinInt64 + 1, -256, -255, -1, 0, 1, 255, 256, 1 << 32, math.MaxInt64 - 1, math.MaxInt64}
	pickVal := func() int64 { return vals[r.IntN(len(vals))] }
	for round := range 300 {
		d := 1 + round%3
		base := tuple.Tuple{"cellsx", int64(round)}.Pack()
		require.NoError(t, db.Transact(context.Background(), func(tr kv.Transaction) error {
			for range r.IntN(30) {
				k := make([]int64, d)
				for i := range k {
					k[i] = pickVal()
				}
				tr.Set(appendInts(slices.Clone(base), k...), nil)
			}
			return nil
		}))
		mins, maxs := make([]int64, d), make([]int64, d)
		for i := range d {
			mins[i], maxs[i] = math.MinInt64, pickVal()
			if r.IntN(3) == 0 {
				mins[i] = pickVal()
			}
			if r.IntN(4) == 0 {
				maxs[i] = math.MaxInt64
			}
		}
		desc := fmt.Sprintf("round %d: %d coordinates within %v..%v", round, d, mins, maxs)
		scanAsSkipScan(t, db, base, d, mins, maxs, desc)
	}
}

// scanAsSkipScan requires cellsScan over the decoded directory under base
// (d coordinates) to list the cells within mins..maxs, and add the read
// conflicts, that skipScan does.
func scanAsSkipScan(t *testing.T, db kv.Database, base []byte, d int, mins, maxs []int64, desc string) {
	scan := func(decoded bool) ([][]int64, []kv.Range) {
		tr, err := db.CreateTransaction(context.Background())
		require.NoError(t, err)
		defer tr.Cancel()
		log := &conflictLog{Transaction: tr}
		var listed [][]int64
		fn := func(c []int64) error {
			listed = append(listed, slices.Clone(c))
			return nil
		}
		if !decoded {
			log.on = true
			require.NoError(t, skipScan(log, new([]byte), base, mins, maxs, fn), desc)
		} else {
			pr := kv.PrefixRange(base)
			rows, err := kv.GetRangeAsync(tr.Snapshot(), pr, kv.RangeOptions{Limit: maxDirAhead}).Get()
			require.NoError(t, err)
			dr := &dirRead{k: newKnown(pr, maxDirAhead, rows)}
			dc := dr.cells(base, d)
			require.NotNil(t, dc, desc)
			require.Same(t, dc, dr.cells(base, d), "decoded once")
			require.Nil(t, dr.cells(base, d+1), "decoded for %d coordinates", d)
			x := newKnownReader(log, true)
			defer x.release()
			x.ks = append(x.ks, dr.k)
			log.on = true
			require.NoError(t, cellsScan(x, dc, base, mins, maxs, fn), desc)
			require.NoError(t, (&pick{rd: log, tr: log}).record(x, true))
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
