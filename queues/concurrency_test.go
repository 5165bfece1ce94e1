package queues_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/queues"
)

// TestConcurrentExactlyOnce: 16 goroutines push and 16 pop one task queue
// (half by plain pop, half by fit pop); every item is popped exactly once.
func TestConcurrentExactlyOnce(t *testing.T) {
	t.Parallel()
	db, q := setup(t, queues.Priority, "cpu", "mem")
	const pushers, poppers, each = 16, 16, 150
	total := pushers * each
	popped := make([]atomic.Int32, total)
	var pushing sync.WaitGroup
	var remaining atomic.Int64
	remaining.Store(int64(total))
	errs := make(chan error, pushers+poppers)

	for p := 0; p < pushers; p++ {
		pushing.Add(1)
		go func() {
			defer pushing.Done()
			r := rand.New(rand.NewPCG(uint64(p), 7))
			for i := 0; i < each; i++ {
				n := p*each + i
				id := queues.NewID()
				it := queues.Item{ID: id, Priority: r.Int64N(4), Resources: []int64{r.Int64N(8), r.Int64N(64)}, Value: []byte(fmt.Sprint(n))}
				if err := db.Transact(bg, func(tr kv.Transaction) error { return q.Push(tr, it) }); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var popping sync.WaitGroup
	for c := 0; c < poppers; c++ {
		popping.Add(1)
		go func() {
			defer popping.Done()
			for remaining.Load() > 0 {
				var it queues.Item
				var ok bool
				err := db.Transact(bg, func(tr kv.Transaction) error {
					var err error
					if c%2 == 0 {
						it, ok, err = q.Pop(tr, queues.Order(c%4/2))
					} else {
						it, ok, err = q.PopFit(tr, queues.Max, []int64{7, 63})
					}
					return err
				})
				if err != nil {
					errs <- err
					return
				}
				if !ok {
					continue
				}
				var n int
				if _, err := fmt.Sscan(string(it.Value), &n); err != nil {
					errs <- err
					return
				}
				if popped[n].Add(1) != 1 {
					errs <- fmt.Errorf("item %d popped twice", n)
					return
				}
				remaining.Add(-1)
			}
		}()
	}
	pushing.Wait()
	popping.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for n := range popped {
		require.Equal(t, int32(1), popped[n].Load(), "item %d", n)
	}
	require.Zero(t, count(t, db, q))
}

// TestPushesDoNotConflict: pushes into the same queue, priority and cell,
// open at the same time, all commit.
func TestPushesDoNotConflict(t *testing.T) {
	t.Parallel()
	db, q := setup(t, queues.Priority, "cpu", "mem")
	push(t, db, q, 1, "existing", 2, 100) // the cell exists
	var trs []kv.Transaction
	for i := 0; i < 4; i++ {
		tr, err := db.CreateTransaction(bg)
		require.NoError(t, err)
		defer tr.Cancel()
		require.NoError(t, q.Push(tr, queues.Item{ID: queues.NewID(), Priority: 1, Resources: []int64{2, 100}, Value: []byte(fmt.Sprint(i))}))
		trs = append(trs, tr)
	}
	for _, tr := range trs {
		require.NoError(t, tr.Commit())
	}
	require.Equal(t, int64(5), count(t, db, q))
}

// TestFitPopConflictsWithBetterPush: a fit pop that read the queue before a
// better fitting task was committed must not commit its worse answer.
func TestFitPopConflictsWithBetterPush(t *testing.T) {
	t.Parallel()
	for _, viaIndex := range []bool{false, true} {
		db, q := setup(t, queues.Priority, "cpu", "mem")
		if viaIndex {
			// Enough non-fitting tasks up front that the pop uses the index.
			require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
				for i := 0; i < 300; i++ {
					if err := q.Push(tr, queues.Item{ID: queues.NewID(), Priority: 9, Resources: []int64{64, 1 << 20}}); err != nil {
						return err
					}
				}
				return nil
			}))
		}
		push(t, db, q, 1, "worse", 1, 100)
		popper, err := db.CreateTransaction(bg)
		require.NoError(t, err)
		it, ok, err := q.PopFit(popper, queues.Max, []int64{4, 1000})
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, "worse", string(it.Value))

		push(t, db, q, 5, "better", 3, 900) // another cell, higher priority
		require.ErrorIs(t, popper.Commit(), kv.ErrNotCommitted, "viaIndex=%v", viaIndex)
		v, ok := popFit(t, db, q, queues.Max, 4, 1000)
		require.True(t, ok)
		require.Equal(t, "better", v)
	}
}
