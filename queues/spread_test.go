package queues_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/queues"
	"github.com/fdbqueue/fdbqueue/tuple"
)

func TestSpreadPopStaysInBestPriority(t *testing.T) {
	t.Parallel()
	db, q := setup(t, queues.Priority, "cpu")
	for i := 0; i < 30; i++ {
		push(t, db, q, int64(i%3), fmt.Sprint(i), int64(i%2))
	}
	// Priority 2 holds items 2, 5, 8, ...: a spread pop (k=4) takes one of
	// the first four, never an item of a lower priority.
	for round := 0; round < 10; round++ {
		var it queues.Item
		var ok bool
		require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
			var err error
			it, ok, err = q.PopSpread(tr, queues.Max, 4)
			return err
		}))
		require.True(t, ok)
		require.Equal(t, int64(2), it.Priority, "round %d", round)
	}
	// A fit spread pop takes the best fitting priority: priority 1 holds
	// cpu 0 and cpu 1 items; limits cpu <= 0.
	for round := 0; round < 5; round++ {
		var it queues.Item
		require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
			var err error
			it, _, err = q.PopFitSpread(tr, queues.Max, []int64{0}, 4)
			return err
		}))
		require.Equal(t, int64(1), it.Priority)
		require.Equal(t, []int64{0}, it.Resources)
	}
}

// TestSpreadPopsExactlyOnce: 32 consumers spread-pop while 4 producers
// push; every item is taken exactly once, on memory and on file.
func TestSpreadPopsExactlyOnce(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{"memory", "file"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			var db kv.Database
			if engine == "memory" {
				db = embedded.Open("", embedded.Config{RetryLimit: -1})
			} else {
				fdb, err := embedded.OpenFile(t.TempDir(), embedded.FileConfig{Config: embedded.Config{RetryLimit: -1}})
				require.NoError(t, err)
				db = fdb
			}
			defer db.Close()
			q := queues.New(tuple.Tuple{"spread"}.Pack(), queues.Priority, "cpu")
			const producers, each, consumers = 4, 100, 32
			var remaining atomic.Int64
			remaining.Store(producers * each)
			var seen sync.Map
			var wg sync.WaitGroup
			errs := make(chan error, producers+consumers)
			for p := 0; p < producers; p++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < each; i++ {
						it := queues.Item{ID: queues.NewID(), Priority: int64(i % 3), Resources: []int64{int64(i % 2)}, Value: []byte(fmt.Sprint(p, "-", i))}
						if err := db.Transact(bg, func(tr kv.Transaction) error { return q.Push(tr, it) }); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			for c := 0; c < consumers; c++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for remaining.Load() > 0 {
						var it queues.Item
						var ok bool
						err := db.Transact(bg, func(tr kv.Transaction) error {
							var err error
							if c%2 == 0 {
								it, ok, err = q.PopSpread(tr, queues.Max, 8)
							} else {
								it, ok, err = q.PopFitSpread(tr, queues.Max, []int64{1}, 8)
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
						if _, dup := seen.LoadOrStore(string(it.Value), true); dup {
							errs <- fmt.Errorf("%s popped twice", it.Value)
							return
						}
						remaining.Add(-1)
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error { return q.Check(tr) }))
			require.Zero(t, count(t, db, q))
		})
	}
}
