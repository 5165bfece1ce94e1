package fdbmodel_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/internal/fdbmodel"
	"github.com/fdbqueue/fdbqueue/kv"
)

// TestGetAsyncTogether: ten point reads issued, then waited for, are one
// read wait after the read version's.
func TestGetAsyncTogether(t *testing.T) {
	t.Parallel()
	db := open(t, fdbmodel.Config{})
	hundred(t, db, 100)
	c := transact(t, db, func(tr kv.Transaction) {
		var fs []kv.FutureValue
		for i := range 10 {
			var rt kv.ReadTransaction = tr
			if i%2 == 1 {
				rt = tr.Snapshot()
			}
			fs = append(fs, kv.GetAsync(rt, key(i*7)))
		}
		for i, f := range fs {
			v, err := f.Get()
			require.NoError(t, err)
			require.Len(t, v, 58, "key %d", i*7)
		}
	})
	require.Equal(t, [3]int{1, 1, 0}, waits(c))
	require.Equal(t, 10, c.Gets)
	require.Equal(t, 9, c.Hidden, "the first wait covers the other nine")

	// A future waited for twice waits once; a key the cache knows costs
	// no request.
	c = transact(t, db, func(tr kv.Transaction) {
		tr.Set(key(1), []byte("mine"))
		known := kv.GetAsync(tr, key(1))
		f := kv.GetAsync(tr, key(2))
		for range 2 {
			_, err := f.Get()
			require.NoError(t, err)
		}
		v, err := known.Get()
		require.NoError(t, err)
		require.Equal(t, "mine", string(v))
	})
	require.Equal(t, [3]int{1, 1, 1}, waits(c))
	require.Equal(t, 1, c.Gets)
	require.Equal(t, 1, c.Cached)
	require.Zero(t, c.Hidden)
}

// TestGetRangeAsyncTogether: five heads (limit 1) read together are one
// read wait.
func TestGetRangeAsyncTogether(t *testing.T) {
	t.Parallel()
	db := open(t, fdbmodel.Config{})
	hundred(t, db, 100)
	c := transact(t, db, func(tr kv.Transaction) {
		var fs []kv.FutureRange
		for i := range 5 {
			r := kv.Range{Begin: key(i * 20), End: key(i*20 + 20)}
			fs = append(fs, kv.GetRangeAsync(tr, r, kv.RangeOptions{Limit: 1, Reverse: i%2 == 1}))
		}
		for i, f := range fs {
			rows, err := f.Get()
			require.NoError(t, err)
			require.Len(t, rows, 1)
			want := key(i * 20)
			if i%2 == 1 {
				want = key(i*20 + 19)
			}
			require.Equal(t, want, rows[0].Key)
		}
	})
	require.Equal(t, [3]int{1, 1, 0}, waits(c))
	require.Equal(t, 5, c.Batches)
	require.Equal(t, 4, c.Hidden)
}

// TestRangeFutureBatches: a range future's first batch is requested when
// it is issued, in the read's mode; Get requests each later one as the one
// before arrives, in the largest batches (want-all's 80,000 bytes; all the
// rows left for a limit): one wait each, one after another.
func TestRangeFutureBatches(t *testing.T) {
	t.Parallel()
	db := open(t, fdbmodel.Config{})
	hundred(t, db, 1000)
	for _, c := range []struct {
		opts    kv.RangeOptions
		rows    int
		batches int // 100-byte rows: 41 in the iterator mode's first batch, 800 in want-all's
	}{
		{kv.RangeOptions{}, 1000, 3},                              // 41, 800, 159
		{kv.RangeOptions{Limit: 100}, 100, 2},                     // 41, 59
		{kv.RangeOptions{Limit: 41}, 41, 1},                       // the first batch ends at the limit
		{kv.RangeOptions{Mode: kv.StreamingModeWantAll}, 1000, 2}, // 800, 200
		{kv.RangeOptions{Limit: 900, Mode: kv.StreamingModeWantAll, Reverse: true}, 900, 2},
	} {
		got := transact(t, db, func(tr kv.Transaction) {
			rows, err := kv.GetRangeAsync(tr, ks, c.opts).Get()
			require.NoError(t, err)
			require.Len(t, rows, c.rows)
		})
		require.Equal(t, [3]int{1, c.batches, 0}, waits(got), "%+v", c.opts)
		require.Equal(t, c.batches, got.Batches, "%+v", c.opts)
	}

	// Five such reads issued together: their first batches are one wait,
	// each one's later batches two more, one after another.
	c := transact(t, db, func(tr kv.Transaction) {
		var fs []kv.FutureRange
		for i := range 5 {
			fs = append(fs, kv.GetRangeAsync(tr.Snapshot(), kv.Range{Begin: key(i * 200), End: key(i*200 + 200)}, kv.RangeOptions{}))
		}
		for _, f := range fs {
			rows, err := f.Get()
			require.NoError(t, err)
			require.Len(t, rows, 200) // 41, 159: the second spends no budget
		}
	})
	require.Equal(t, [3]int{1, 1 + 5, 0}, waits(c))
	require.Equal(t, 10, c.Batches)
}

// TestRangeFutureBeforeWrite: a write into the range of a range future
// whose later batches are not in waits for them (they would see it), as
// the FoundationDB engine does; a write elsewhere does not.
func TestRangeFutureBeforeWrite(t *testing.T) {
	t.Parallel()
	db := open(t, fdbmodel.Config{})
	hundred(t, db, 1000)
	c := transact(t, db, func(tr kv.Transaction) {
		f := kv.GetRangeAsync(tr, kv.Range{Begin: key(0), End: key(100)}, kv.RangeOptions{})
		tr.Set([]byte("elsewhere"), nil)
		tr.Clear(key(50)) // waits for 41 rows, then 59
		rows, err := f.Get()
		require.NoError(t, err)
		require.Len(t, rows, 100, "as of the call")
	})
	require.Equal(t, [3]int{1, 2, 1}, waits(c))
}

// TestRangeFutureAtCommit: the commit waits for what is in flight; a
// serializable range future never waited for is resolved first (its read
// conflict is its result's), a snapshot one is not.
func TestRangeFutureAtCommit(t *testing.T) {
	t.Parallel()
	db := open(t, fdbmodel.Config{})
	hundred(t, db, 1000)
	c := transact(t, db, func(tr kv.Transaction) {
		kv.GetRangeAsync(tr, ks, kv.RangeOptions{})
		tr.Set([]byte("x"), nil)
	})
	require.Equal(t, [3]int{1, 3, 1}, waits(c), "41, 800, 159 rows, then the commit")
	c = transact(t, db, func(tr kv.Transaction) {
		kv.GetRangeAsync(tr.Snapshot(), ks, kv.RangeOptions{})
		kv.GetAsync(tr, key(1))
		tr.Set([]byte("x"), nil)
	})
	require.Equal(t, [3]int{1, 1, 1}, waits(c), "the first batch and the point read, in flight")
	require.Equal(t, 1, c.Batches)
}

// TestFutureOfEndedAttempt: a future of an attempt that is over waits for
// nothing, and fails as the FoundationDB engine's does.
func TestFutureOfEndedAttempt(t *testing.T) {
	t.Parallel()
	db := open(t, fdbmodel.Config{})
	hundred(t, db, 10)
	var col fdbmodel.Collector
	tr, err := db.CreateTransaction(fdbmodel.WithCollector(bg, &col))
	require.NoError(t, err)
	v := kv.GetAsync(tr, key(1))
	r := kv.GetRangeAsync(tr, ks, kv.RangeOptions{})
	tr.Cancel()
	_, err = v.Get()
	require.ErrorIs(t, err, kv.ErrTransactionCancelled)
	_, err = r.Get()
	require.ErrorIs(t, err, kv.ErrTransactionCancelled)
	require.Equal(t, [3]int{0, 0, 0}, waits(col.Counts()))
}
