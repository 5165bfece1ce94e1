package queues_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/queues"
)

// TestPushAllSeqsAfterOwnInvisiblePush: a push of several priorities, in
// the transaction that pushed an invisible item before it, takes seqs
// after that item's in its priority: the item comes back before them. The
// push reads whether the queue holds any invisible item through its own
// writes too.
func TestPushAllSeqsAfterOwnInvisiblePush(t *testing.T) {
	t.Parallel()
	db, q, c := setupClock(t, queues.Priority)
	later := c.Now().Add(time.Hour)
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		if err := q.Push(tr, queues.Item{ID: queues.NewID(), Priority: 3, VisibleAt: later}); err != nil {
			return err
		}
		var items []queues.Item
		for p := range int64(4) {
			items = append(items, queues.Item{ID: queues.NewID(), Priority: p})
		}
		_, err := q.PushAll(tr, queues.Token{}, items)
		return err
	}))
	got := seqsByPriority(t, db, q)
	require.Equal(t, map[int64][]int64{0: {1}, 1: {1}, 2: {1}, 3: {1, 2}}, got)
}

// seqsByPriority returns the seqs of q's items, visible or not, by
// priority, in Min order.
func seqsByPriority(t *testing.T, db kv.Database, q *queues.Queue) map[int64][]int64 {
	t.Helper()
	got := map[int64][]int64{}
	require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
		return q.Scan(tr, queues.Min, func(it queues.Item) (bool, error) {
			got[it.Priority] = append(got[it.Priority], it.Seq)
			return true, nil
		})
	}))
	return got
}
