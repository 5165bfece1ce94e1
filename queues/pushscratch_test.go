package queues_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/queues"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// TestPushesAtOnceKeepTheirItems: a push's scratch (its key buffer, its
// seqs' reads and their bounds, its ids) goes back to a pool when the push
// is done, for the next. Pushes of several priorities and resources into
// queues of their own, at once, with pushes refused half-way (a duplicate
// id, found after the seqs' reads were issued) between them, store each
// item as given, and pop in order: priority, then the order pushed. Under
// -race, a scratch used by two pushes at once is a race.
func TestPushesAtOnceKeepTheirItems(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	const pushers, rounds, batch = 4, 15, 24
	qs := make([]*queues.Queue, pushers)
	pushed := make([][]queues.Item, pushers) // in push order
	var wg sync.WaitGroup
	for p := range pushers {
		qs[p] = queues.New(tuple.Tuple{"scratch", p}.Pack(), queues.Priority, "cpu", "mem")
		wg.Go(func() {
			q := qs[p]
			for r := range rounds {
				items := make([]queues.Item, batch)
				for i := range items {
					n := r*batch + i
					items[i] = queues.Item{
						ID:        queues.NewID(),
						Priority:  int64(n % 5),
						Resources: []int64{int64(1 + n%4), int64(512 * (1 + (n+p)%8))},
						Value:     fmt.Appendf(nil, "p%d/n%d/%s", p, n, make([]byte, n%40)),
					}
				}
				if err := db.Transact(bg, func(tr kv.Transaction) error {
					_, err := q.PushAll(tr, queues.Token{ID: queues.NewID(), At: time.Now()}, items)
					return err
				}); err != nil {
					t.Error(err)
					return
				}
				pushed[p] = append(pushed[p], items...)
				// The same ids again: refused, nothing written.
				err := db.Transact(bg, func(tr kv.Transaction) error {
					_, err := q.PushAll(tr, queues.Token{ID: queues.NewID(), At: time.Now()}, items[batch/2:])
					return err
				})
				if !errors.Is(err, queues.ErrDuplicateID) {
					t.Errorf("pusher %d round %d: %v, not ErrDuplicateID", p, r, err)
					return
				}
			}
		})
	}
	wg.Wait()
	for p, q := range qs {
		require.Equal(t, int64(rounds*batch), count(t, db, q), "pusher %d", p)
		require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
			for _, want := range pushed[p] {
				got, ok, err := q.Get(tr, want.ID)
				require.NoError(t, err)
				require.True(t, ok, "id %d", want.ID)
				require.Equal(t, want.Priority, got.Priority)
				require.Equal(t, want.Resources, got.Resources)
				require.Equal(t, string(want.Value), string(got.Value))
			}
			return q.Check(tr)
		}))
		// Popped by priority, highest first, then in the order pushed.
		want := slices.Clone(pushed[p])
		slices.SortStableFunc(want, func(a, b queues.Item) int { return int(b.Priority - a.Priority) })
		for i, w := range want {
			v, ok := pop(t, db, q, queues.Max)
			require.True(t, ok)
			require.Equal(t, string(w.Value), v, "pusher %d, pop %d", p, i)
		}
	}
}
