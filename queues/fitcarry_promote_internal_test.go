package queues

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// TestCarriedReadsSeePromotedItems: a fit pop first promotes the items
// whose delay ended (writes, through the Attempt, before its first pick),
// then picks. An attempt that takes over the reads the group before it
// carried must not answer its pick from reads those writes changed: the
// promoted item, of the best priority and fitting, is the one to pop, as
// it is with nothing carried.
func TestCarriedReadsSeePromotedItems(t *testing.T) {
	t.Parallel()
	for _, kind := range []Kind{Priority, FIFO} {
		for _, carry := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/carry=%v", kind, carry), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				db, q, now := clockedQueue(t, "promoted", kind, "cpu", "mem")
				var items []Item
				for i := range 300 { // first in queue order, fitting no limits
					items = append(items, Item{ID: int64(2000 + i), Priority: 1, Resources: []int64{100, 1 << 30}})
				}
				for i := range 600 {
					items = append(items, Item{ID: int64(i + 1), Priority: 5 + int64(i%7), Resources: []int64{1 + int64(i*7%13), 1 + int64(i*11%97)}})
				}
				// Delayed: better than all that fit, found through the fit
				// index's cell heads (not among the first items in queue
				// order, which fit no limits), fits any limits.
				items = append([]Item{{ID: 1000, Priority: 3, Resources: []int64{1, 1}, VisibleAt: now.Add(time.Second)}}, items...)
				require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
					_, err := q.PushAll(tr, Token{}, items)
					return err
				}))
				claims := NewClaims()
				group := func(pops int) []int64 {
					tr, err := db.CreateTransaction(ctx)
					require.NoError(t, err)
					defer tr.Cancel()
					var in kv.Transaction = tr
					if !carry {
						in = struct{ kv.Transaction }{tr} // hides CommittedAlone
					}
					a := claims.Begin(in)
					a.Several()
					var ids []int64
					for i := range pops {
						it, ok, err := q.PopFit(a, Min, [][]int64{{10, 100}, {5, 50}, {13, 97}}[i%3])
						require.NoError(t, err)
						require.True(t, ok)
						ids = append(ids, it.ID)
					}
					err = tr.Commit()
					a.Release(err == nil)
					require.NoError(t, err)
					return ids
				}
				first := group(3)
				require.NotContains(t, first, int64(1000), "popped before its delay ended")
				*now = now.Add(2 * time.Second)
				second := group(3)
				if carry {
					require.Positive(t, claims.adopted.Load()+claims.refused.Load(), "nothing was carried to the second group")
				}
				require.Equal(t, int64(1000), second[0], "the promoted item comes first (took %v)", second)
				require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error { return q.Check(tr) }))
			})
		}
	}
}
