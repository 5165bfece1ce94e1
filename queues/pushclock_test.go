package queues_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/queues"
)

// A PushAll reads the clock once for all its items: on a clock that
// moves a second at each reading, they still share one pushed_at.
func TestPushAllReadsTheClockOnce(t *testing.T) {
	t.Parallel()
	db, q := setup(t, queues.Priority, "cpu", "mem")
	base := time.Unix(1_800_000_000, 0)
	var ticks atomic.Int64
	clock := func() time.Time { return base.Add(time.Duration(ticks.Add(1)) * time.Second) }
	q = q.WithOptions(queues.Options{Clock: clock, ReceiptTTL: time.Minute})
	items := make([]queues.Item, 4)
	for i := range items {
		items[i] = queues.Item{ID: int64(100 + i), Priority: 1, Resources: []int64{1, 1}, Value: []byte("v")}
	}
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		_, err := q.PushAll(tr, queues.Token{}, items)
		return err
	}))
	var pushedAt []time.Time
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		pushedAt = pushedAt[:0]
		for _, it := range items {
			got, ok, err := q.Get(tr, it.ID)
			require.NoError(t, err)
			require.True(t, ok)
			pushedAt = append(pushedAt, got.PushedAt)
		}
		return nil
	}))
	for _, at := range pushedAt[1:] {
		require.True(t, at.Equal(pushedAt[0]), "pushed_at %v and %v", pushedAt[0], at)
	}
}
