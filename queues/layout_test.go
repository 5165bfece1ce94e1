package queues_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/queues"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// TestKeyLayout reads back every key a queue wrote and checks it against the
// table in layout.go, row by row: the layout is a storage format that other
// tools (fdbcli, the tuple layers) read, so a change to it must be a change
// to this test and to that table.
func TestKeyLayout(t *testing.T) {
	t.Parallel()
	for _, kind := range []queues.Kind{queues.FIFO, queues.Priority} {
		t.Run(kind.String(), func(t *testing.T) {
			t.Parallel()
			db, q := setup(t, kind, "cpu", "mem")
			at := time.Unix(1_800_000_000, 0)
			q = q.WithOptions(queues.Options{Clock: func() time.Time { return at }, ReceiptTTL: time.Minute})
			expiry := at.Add(time.Minute).UnixNano()
			prefix := tuple.Tuple{"q", t.Name()}.Pack()
			const id, prio = 42, 5
			require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
				q.StartStats(tr)
				return q.Push(tr, queues.Item{ID: id, Priority: prio, Resources: []int64{3, 1000}, Value: []byte("v")})
			}))
			// A delayed item: invisible, filed by its due time.
			const delayed = 43
			due := at.Add(time.Hour)
			require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
				return q.Push(tr, queues.Item{ID: delayed, Priority: prio, Resources: []int64{3, 1000}, Value: []byte("d"), VisibleAt: due})
			}))
			popToken, countToken := queues.Token{ID: 7, At: at}, queues.Token{ID: 9, At: at}
			require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
				it, _, err := q.Get(tr, id)
				if err != nil {
					return err
				}
				if err := q.RecordReceipt(tr, popToken, []queues.Item{it}); err != nil {
					return err
				}
				return q.RecordCount(tr, countToken, 3)
			}))

			var keys []tuple.Tuple
			values := map[string][]byte{}
			require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
				it := tr.GetRange(q.Range(), kv.RangeOptions{})
				for it.Next() {
					e := it.KeyValue()
					k, err := tuple.Unpack(e.Key[len(prefix):])
					if err != nil {
						return err
					}
					keys = append(keys, k)
					values[fmt.Sprint(k)] = e.Value
				}
				return it.Err()
			}))
			value := func(k ...any) []byte {
				v, ok := values[fmt.Sprint(tuple.Tuple(k))]
				require.True(t, ok, "no key %v in %v", k, keys)
				return v
			}
			packInts := func(vs ...int64) []byte {
				var b []byte
				for _, v := range vs {
					b = tuple.AppendInt(b, v)
				}
				return b
			}

			// The item and its id index: FIFO keys leave the priority out,
			// and FIFO tasks go under priority 0 in the fit index.
			p := int64(prio)
			itemKey := []any{int64(0), p, int64(1), int64(id)}
			idValue := packInts(p, 1)
			if kind == queues.FIFO {
				p = 0
				itemKey = []any{int64(0), int64(1), int64(id)}
				idValue = packInts(1)
			}
			pushedAt := at.Unix()
			// An item's record: its resources and pushed_at as tuple
			// integers, then 0xfe and its value as it is.
			require.Equal(t, append(packInts(3, 1000, pushedAt), 0xfe, 'v'), value(itemKey...))
			require.Equal(t, idValue, value(int64(1), int64(id)))
			require.Equal(t, binary.LittleEndian.AppendUint64(nil, 2), value(int64(2)), "the count has both items")
			// cell (3, 960): 3 is exact; 1000 falls in [960, 1023].
			require.Equal(t, packInts(3, 1000), value(int64(3), int64(3), int64(960), p, int64(1), int64(id)))
			require.Empty(t, value(int64(4), int64(3), int64(960)))
			require.Empty(t, value(int64(5), int64(3), int64(1000), p, int64(1), int64(id)))
			require.Empty(t, value(int64(6), int64(3), int64(1000)))
			// The push marker, and the same by expiry.
			require.Empty(t, value(int64(7), int64(id)))
			require.Empty(t, value(int64(8), expiry, int64(id)))
			// The receipts, and the same by expiry.
			wantPrio := int64(prio)
			if kind == queues.FIFO {
				wantPrio = 0
			}
			require.Equal(t, append(tuple.Tuple{int64(id), wantPrio, tuple.Tuple{int64(3), int64(1000)}, int64(1)}.Pack(), 0xfe, 'v'),
				value(int64(14), expiry, popToken.ID), "a receipt of one part has the bare key; the item's seq ends its packed fields, 0xfe and the value follow")
			require.Equal(t, binary.LittleEndian.AppendUint64(nil, 3), value(int64(14), expiry, countToken.ID))
			// The push signal: the items ever pushed.
			require.Equal(t, binary.LittleEndian.AppendUint64(nil, 2), value(int64(11)))
			// The delayed item: under tag 13 with its visible_at, lease and
			// attempts; its id index ends with the due time; the due index;
			// no fit index entries.
			dueNanos := due.UnixNano()
			hiddenKey := []any{int64(13), p, int64(2), int64(delayed)}
			hiddenID := packInts(p, 2, dueNanos)
			if kind == queues.FIFO {
				hiddenKey = []any{int64(13), int64(2), int64(delayed)}
				hiddenID = packInts(2, dueNanos)
			}
			require.Equal(t, append(packInts(3, 1000, dueNanos, 0, 0, pushedAt, 0), 0xfe, 'd'), value(hiddenKey...))
			require.Equal(t, hiddenID, value(int64(1), int64(delayed)))
			require.Empty(t, value(int64(12), dueNanos, p, int64(2), int64(delayed)))
			require.Empty(t, value(int64(7), int64(delayed)))
			require.Empty(t, value(int64(8), expiry, int64(delayed)))
			// The statistics: the pushes counted, the visible item under
			// the second it became visible, the delayed one (kind 2) under
			// its due time in one-second and coarse buckets, and since when
			// they are exact.
			one := binary.LittleEndian.AppendUint64(nil, 1)
			require.Equal(t, binary.LittleEndian.AppendUint64(nil, 2), value(int64(17), int64(0), int64(queues.StatPushed)))
			require.Equal(t, one, value(int64(17), int64(2), at.Unix()))
			dueSecond := (dueNanos - 1) / int64(time.Second)
			require.Equal(t, one, value(int64(17), int64(1), int64(2), int64(0), dueSecond))
			require.Equal(t, one, value(int64(17), int64(1), int64(2), int64(1), dueSecond/1024))
			require.Equal(t, binary.LittleEndian.AppendUint64(nil, uint64(at.UnixNano())), value(int64(17), int64(3)))
			require.Len(t, keys, 22, "one key per row of the table (but the reserved tags and the migration's cursor): %v", keys)
		})
	}
}

// TestReceiptsFromEarlierVersions: a push marker in the form earlier
// versions wrote (its value the expiry) still answers a retry; receipts
// earlier versions kept under tags 9 and 10 are cleared along with the
// expired ones (a retry straddling the upgrade is the one that could have
// used them).
func TestReceiptsFromEarlierVersions(t *testing.T) {
	t.Parallel()
	db, q := setup(t, queues.Priority, "cpu")
	prefix := tuple.Tuple{"q", t.Name()}.Pack()
	key := func(k ...any) []byte { return append(append([]byte{}, prefix...), tuple.Tuple(k).Pack()...) }
	const id, token = 42, 7
	item := queues.Item{ID: 99, Priority: 1, Resources: []int64{2}, Value: []byte("v")}
	old := [][]byte{key(int64(9), int64(token), int64(0)), key(int64(10), int64(5), int64(token))}
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		tr.Set(key(int64(7), int64(id)), binary.BigEndian.AppendUint64(nil, uint64(time.Now().Add(time.Hour).UnixNano())))
		tr.Set(old[0], tuple.Tuple{item.ID, item.Priority, tuple.Tuple{int64(2)}, item.Value}.Pack())
		tr.Set(old[1], nil)
		return nil
	}))
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		return q.Push(tr, queues.Item{ID: id, Priority: 1, Resources: []int64{1}})
	}))
	require.Zero(t, count(t, db, q), "the marker says the push was applied")
	// A receipt recorded under a token that cleans up (one in eight).
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		return q.RecordCount(tr, queues.Token{ID: 8 * 1001, At: time.Now()}, 0)
	}))
	require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
		for _, k := range old {
			v, err := tr.Get(k)
			require.NoError(t, err)
			require.Nil(t, v, "cleared: %x", k)
		}
		return nil
	}))
}

// TestPrefixRange: the ranges a pop or push reads under a key (built in
// one allocation) are kv.PrefixRange's, also where a packed integer ends
// in 0xff bytes.
func TestPrefixRange(t *testing.T) {
	t.Parallel()
	for _, prefix := range [][]byte{tuple.Tuple{"q"}.Pack(), {0xfe}, tuple.Tuple{int64(255)}.Pack()} {
		q := queues.New(prefix, queues.Priority)
		for tag := range 15 {
			for _, vs := range [][]int64{nil, {0}, {1}, {-1}, {255}, {65535}, {math.MaxInt64}, {math.MinInt64}, {255, 255}} {
				want := kv.PrefixRange(q.KeyOf(tag, vs...))
				got := q.PrefixRangeOf(tag, vs...)
				require.Equal(t, want, got, "prefix %x, tag %d, %v", prefix, tag, vs)
			}
		}
		// A lease reads the due index (tag 12) up to where tag 13 begins.
		require.Equal(t, kv.PrefixRange(q.KeyOf(12)).End, q.KeyOf(13))
	}
}
