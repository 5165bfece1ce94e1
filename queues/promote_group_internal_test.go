package queues

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// TestGroupPromotesWhatFallsDueBetweenItsPops: the pops of one attempt
// (a combined group) read the due index once, and answer its next reads
// from the Attempt's memory (promotion). A delayed item whose delay ends
// between two of them is still promoted by the next, and popped first, as
// a pop in an attempt of its own would: what is remembered is the index's
// first key, which each pop compares with its own clock, not a verdict.
// And a group that promoted it does not promote it again.
func TestGroupPromotesWhatFallsDueBetweenItsPops(t *testing.T) {
	t.Parallel()
	for _, kind := range []Kind{Priority, FIFO} {
		for _, fit := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/fit=%v", kind, fit), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				db, q, now := clockedQueue(t, "duegroup", kind, "cpu")
				var items []Item
				for i := range 20 {
					items = append(items, Item{ID: int64(i + 1), Priority: 5, Resources: []int64{1}})
				}
				// Delayed, and better than the others (first in FIFO order
				// too, once due: it keeps its place).
				items = append([]Item{{ID: 100, Priority: 1, Resources: []int64{1}, VisibleAt: now.Add(time.Second)}}, items...)
				require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
					_, err := q.PushAll(tr, Token{}, items)
					return err
				}))
				claims := NewClaims()
				tr, err := db.CreateTransaction(ctx)
				require.NoError(t, err)
				defer tr.Cancel()
				a := claims.Begin(tr)
				a.Several()
				pop := func() int64 {
					var it Item
					var ok bool
					var err error
					if fit {
						it, ok, err = q.PopFit(a, Min, []int64{4})
					} else {
						it, ok, err = q.Pop(a, Min)
					}
					require.NoError(t, err)
					require.True(t, ok)
					return it.ID
				}
				var ids []int64
				for range 3 {
					ids = append(ids, pop())
				}
				require.NotContains(t, ids, int64(100), "popped before its delay ended")
				*now = now.Add(2 * time.Second)
				require.Equal(t, int64(100), pop(), "the item whose delay ended between two pops of the group")
				ids = append(ids, 100)
				for range 3 {
					ids = append(ids, pop())
				}
				err = tr.Commit()
				a.Release(err == nil)
				require.NoError(t, err)
				require.Len(t, ids, 7)
				seen := map[int64]bool{}
				for _, id := range ids {
					require.False(t, seen[id], "id %d popped twice in %v", id, ids)
					seen[id] = true
				}
				require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error { return q.Check(tr) }))
			})
		}
	}
}
