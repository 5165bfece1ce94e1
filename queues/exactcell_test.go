package queues_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/queues"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// keysUnder returns the keys of q under tag, unpacked after q's prefix.
func keysUnder(t *testing.T, db kv.Database, q *queues.Queue, prefix []byte, tag int64) []tuple.Tuple {
	t.Helper()
	var keys []tuple.Tuple
	require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
		it := tr.GetRange(kv.PrefixRange(append(append([]byte(nil), prefix...), tuple.Tuple{tag}.Pack()...)), kv.RangeOptions{})
		for it.Next() {
			k, err := tuple.Unpack(it.KeyValue().Key[len(prefix):])
			if err != nil {
				return err
			}
			keys = append(keys, k)
		}
		return it.Err()
	}))
	return keys
}

// TestExactCellsHaveNoShapeIndex: a task whose every resource is below
// the queue's exact bound (32, or 16 for a queue of versions before
// 2026-11-27) is alone in its cell's shape, so the shape index does not
// file it (a cell of one shape never straddles a limit, and the shape
// index serves only straddling cells); a task with a quantised resource
// is filed.
func TestExactCellsHaveNoShapeIndex(t *testing.T) {
	t.Parallel()
	for _, below := range []int64{queues.ExactCellsBelow, queues.LegacyExactCellsBelow} {
		t.Run(fmt.Sprint("below=", below), func(t *testing.T) {
			t.Parallel()
			db, q := setupCells(t, below, queues.Priority, "cpu", "mem")
			require.Equal(t, below, q.ExactCells())
			prefix := tuple.Tuple{"q", t.Name()}.Pack()
			require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
				_, err := q.PushAll(tr, queues.Token{}, []queues.Item{
					{ID: 1, Priority: 1, Resources: []int64{3, below - 1}, Value: []byte("exact")},
					{ID: 2, Priority: 1, Resources: []int64{3, below}, Value: []byte("quantised")},
					{ID: 3, Priority: 0, Resources: []int64{3, below + 1}, Value: []byte("quantised too")},
				})
				return err
			}))
			require.Len(t, keysUnder(t, db, q, prefix, 3), 3, "all are in the cell index")
			// The exact cell's entry holds nothing; the others their
			// resources, for the scans of cells that straddle a limit.
			require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
				kvs, err := kv.Collect(tr.GetRange(kv.PrefixRange(append(append([]byte(nil), prefix...), tuple.Tuple{int64(3)}.Pack()...)), kv.RangeOptions{}))
				require.Len(t, kvs, 3)
				require.Empty(t, kvs[0].Value)
				require.Equal(t, tuple.Tuple{int64(3), below + 1}.Pack(), kvs[1].Value, "priority 0 first in the cell")
				require.Equal(t, tuple.Tuple{int64(3), below}.Pack(), kvs[2].Value)
				return err
			}))
			require.Equal(t, []tuple.Tuple{{int64(4), int64(3), below - 1}, {int64(4), int64(3), below}}, keysUnder(t, db, q, prefix, 4),
				"below and below+1 share a cell")
			require.Equal(t, []tuple.Tuple{
				{int64(5), int64(3), below, int64(1), int64(2), int64(2)},
				{int64(5), int64(3), below + 1, int64(0), int64(1), int64(3)},
			}, keysUnder(t, db, q, prefix, 5))
			require.Equal(t, []tuple.Tuple{{int64(6), int64(3), below}, {int64(6), int64(3), below + 1}}, keysUnder(t, db, q, prefix, 6))
			require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error { return q.Check(tr) }))

			// More than a fit pop reads in queue order before its index,
			// none of which fits, first in Min order.
			require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
				sediment := make([]queues.Item, 200)
				for i := range sediment {
					sediment[i] = queues.Item{ID: int64(100 + i), Priority: -1, Resources: []int64{3, 1 << 20}, Value: []byte("sediment")}
				}
				_, err := q.PushAll(tr, queues.Token{}, sediment)
				return err
			}))

			// A limit at below straddles the quantised cell: the index pops
			// the exact task, then the one at below, and not the one above
			// them in queue order. Then that one, by fit.
			for _, c := range []struct {
				limit int64
				want  string
			}{{below, "exact"}, {below, "quantised"}, {below, ""}, {below + 1, "quantised too"}} {
				require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
					it, ok, err := q.PopFit(tr, queues.Min, []int64{8, c.limit})
					require.Equal(t, c.want != "", ok)
					require.Equal(t, c.want, string(it.Value))
					return err
				}))
			}
		})
	}
}

// TestWithExactCellsRefusesOtherBounds: a queue's exact bound is 32 or 16;
// another would quantise into cells no version files under.
func TestWithExactCellsRefusesOtherBounds(t *testing.T) {
	t.Parallel()
	q := queues.New(tuple.Tuple{"q", t.Name()}.Pack(), queues.Priority, "cpu")
	require.Equal(t, int64(queues.ExactCellsBelow), q.ExactCells())
	for _, below := range []int64{0, 8, 24, 33, 64} {
		_, err := q.WithExactCells(below)
		require.ErrorContains(t, err, fmt.Sprintf("exact cells below %d (accepted: 32, or 16", below))
	}
}

// TestShapeEntriesOfExactCellsFromEarlierVersions: versions before
// exact cells filed every task under its shape, and versions before
// 2026-11-27 wrote an exact cell's entry with the task's resources. Such a
// queue still checks, pops its tasks, and a pop clears the old shape entry
// with the task.
func TestShapeEntriesOfExactCellsFromEarlierVersions(t *testing.T) {
	t.Parallel()
	db, q := setup(t, queues.Priority, "cpu", "mem")
	prefix := tuple.Tuple{"q", t.Name()}.Pack()
	key := func(vs ...int64) []byte {
		tup := make(tuple.Tuple, len(vs))
		for i, v := range vs {
			tup[i] = v
		}
		return append(append([]byte(nil), prefix...), tup.Pack()...)
	}
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		if err := q.Push(tr, queues.Item{ID: 7, Priority: 2, Resources: []int64{4, 8}, Value: []byte("old")}); err != nil {
			return err
		}
		// What the earlier version wrote besides: (5, res, prio, seq, id) and (6, res),
		// and in the cell's entry the resources.
		tr.Set(key(5, 4, 8, 2, 1, 7), nil)
		tr.Set(key(6, 4, 8), nil)
		tr.Set(key(3, 4, 8, 2, 1, 7), tuple.Tuple{int64(4), int64(8)}.Pack())
		return nil
	}))
	require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error { return q.Check(tr) }))
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		it, ok, err := q.PopFit(tr, queues.Min, []int64{4, 8})
		require.True(t, ok)
		require.Equal(t, "old", string(it.Value))
		return err
	}))
	require.Empty(t, keysUnder(t, db, q, prefix, 5), "the pop cleared the old shape entry")
}
