package queues_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/queues"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// fitLimits are limits that, on a queue filled by fillForFit, take every
// path of a fit pop: cells wholly inside, cells straddling a limit on mem
// (960..1023 around 1000) and on cpu (20..21 around 20), with more entries
// that do not fit than straddleBudget, and nothing at all.
var fitLimits = [][]int64{{4, 1000}, {20, 1000}, {3, 990}, {40, 5000}, {0, 0}}

// fillForFit fills q with tasks for a fit pop with fitLimits: blockers
// tasks that do not fit first in both orders (at the highest and the lowest
// priority), then a mix. With more blockers than scanBudget, the pop finds
// every task through the index; with fewer, its first step finds some in
// the mix before it turns to the index.
func fillForFit(t *testing.T, db kv.Database, q *queues.Queue, seed uint64, blockers int) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	var tasks []queues.Item
	add := func(n int, prio func() int64, cpu, mem func() int64) {
		for range n {
			tasks = append(tasks, queues.Item{Priority: prio(), Resources: []int64{cpu(), mem()}})
		}
	}
	between := func(lo, hi int64) func() int64 { return func() int64 { return lo + r.Int64N(hi-lo+1) } }
	add(150, between(0, 8), between(2, 2), between(1001, 1023)) // straddling mem, no fit
	add(60, between(0, 8), between(2, 2), between(960, 1000))   // straddling mem, fit
	add(100, between(0, 8), between(1, 4), between(1, 900))     // whole cells
	add(160, between(0, 8), between(20, 21), between(96, 103))  // straddling cpu
	add(40, between(0, 8), between(50, 60), between(1, 100))    // no fit
	// Straddling mem, and in a priority queue more than straddleBudget
	// that do not fit first, in both orders.
	add(70, between(8, 8), between(3, 3), between(1001, 1023))
	add(70, between(0, 0), between(3, 3), between(1001, 1023))
	add(10, between(1, 7), between(3, 3), between(960, 1000))
	r.Shuffle(len(tasks), func(i, j int) { tasks[i], tasks[j] = tasks[j], tasks[i] })
	// Up front in both orders, and first in a FIFO queue.
	var front []queues.Item
	for i := range 2 * blockers {
		front = append(front, queues.Item{Priority: []int64{9, -1}[i%2], Resources: []int64{100 + int64(i), 1}})
	}
	tasks = append(front, tasks...)
	for i := 0; i < len(tasks); i += 100 {
		require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
			for j := i; j < min(i+100, len(tasks)); j++ {
				it := tasks[j]
				it.ID, it.Value = int64(j+1), fmt.Append(nil, j+1)
				if err := q.Push(tr, it); err != nil {
					return err
				}
			}
			return nil
		}))
	}
}

func values(items []queues.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = string(it.Value)
	}
	return out
}

// TestPopFitNMatchesSinglePops: a multi-row fit pop returns exactly the
// items, in the same order, as that many single fit pops in one
// transaction, on both kinds of queue, in both orders, through every path
// of the index, also after earlier pops in the same transaction.
func TestPopFitNMatchesSinglePops(t *testing.T) {
	t.Parallel()
	// prePops: both transactions pop that many tasks first, so that the
	// pops compared walk over entries removed in the same transaction.
	pops := []struct{ n, prePops int }{{1, 0}, {7, 40}, {60, 0}, {300, 40}}
	for _, kind := range []queues.Kind{queues.FIFO, queues.Priority} {
		for _, blockers := range []int{150, 40} {
			t.Run(fmt.Sprintf("%s/blockers=%d", kind, blockers), func(t *testing.T) {
				t.Parallel()
				// The clock stands still: a transaction of hundreds of
				// pops outlives FoundationDB's 5 seconds under -race on a
				// loaded machine, and what is compared does not need time.
				at := time.Now()
				db, q := setupOn(t, embedded.Config{RetryLimit: -1, Clock: func() time.Time { return at }}, kind, "cpu", "mem")
				fillForFit(t, db, q, 1, blockers)
				for _, order := range []queues.Order{queues.Min, queues.Max} {
					for _, limits := range fitLimits {
						for _, p := range pops {
							want := popInTransaction(t, db, q, order, p.prePops, func(tr kv.Transaction) ([]queues.Item, error) {
								var items []queues.Item
								for range p.n {
									it, ok, err := q.PopFit(tr, order, limits)
									if err != nil || !ok {
										return items, err
									}
									items = append(items, it)
								}
								return items, nil
							})
							got := popInTransaction(t, db, q, order, p.prePops, func(tr kv.Transaction) ([]queues.Item, error) {
								return q.PopFitN(tr, order, limits, p.n)
							})
							require.Equal(t, want, got, "order %v limits %v %+v", order, limits, p)
						}
					}
				}
				// A committed multi-row pop leaves the indexes consistent
				// (setup checks them when the test ends).
				require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
					items, err := q.PopFitN(tr, queues.Max, []int64{20, 1000}, 100)
					require.Len(t, items, 100)
					return err
				}))
			})
		}
	}
}

// popInTransaction pops prePops tasks (cpu 4 at most), then runs pop, in a
// transaction that it then cancels, and returns the values pop returned.
func popInTransaction(t *testing.T, db kv.Database, q *queues.Queue, order queues.Order, prePops int, pop func(kv.Transaction) ([]queues.Item, error)) []string {
	t.Helper()
	tr, err := db.CreateTransaction(bg)
	require.NoError(t, err)
	defer tr.Cancel()
	for range prePops {
		_, _, err := q.PopFit(tr, order, []int64{4, 1 << 20})
		require.NoError(t, err)
	}
	items, err := pop(tr)
	require.NoError(t, err)
	return values(items)
}

func TestPopFitNBadInput(t *testing.T) {
	t.Parallel()
	db, q := setup(t, queues.Priority, "cpu", "mem")
	push(t, db, q, 1, "a", 1, 1)
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		_, err := q.PopFitN(tr, queues.Max, []int64{1}, 5)
		require.ErrorIs(t, err, queues.ErrInvalidItem)
		require.ErrorContains(t, err, "cpu")
		for _, n := range []int{0, -1} {
			items, err := q.PopFitN(tr, queues.Max, []int64{1, 1}, n)
			require.NoError(t, err)
			require.Empty(t, items)
		}
		return nil
	}))
	require.Equal(t, int64(1), count(t, db, q))
}

// TestPopFitNConflictsWithBetterPush: a multi-row fit pop that read the
// queue before a task that it should have returned (better than the last
// it returned) was committed must not commit, wherever that task lands: a
// new cell, a cell wholly inside the limits, a straddling cell, a shape of
// a straddling cell past its budget, a new such shape; in both orders. A
// push that it should not have returned does not stop it.
func TestPopFitNConflictsWithBetterPush(t *testing.T) {
	t.Parallel()
	limits := []int64{4, 1000}
	cases := []struct {
		name     string
		prio     int64 // in Max order; Min order negates the priorities
		res      []int64
		conflict bool
	}{
		{"new cell", 5, []int64{3, 900}, true},
		{"whole cell", 5, []int64{1, 10}, true},
		{"straddling cell", 5, []int64{3, 970}, true},
		{"shape past the budget", 5, []int64{2, 1000}, true},
		{"new shape past the budget", 5, []int64{2, 970}, true},
		{"does not fit", 5, []int64{5, 10}, false},
		{"worse than the last returned", 0, []int64{1, 10}, false},
	}
	for _, order := range []queues.Order{queues.Min, queues.Max} {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/%s", []string{"min", "max"}[order], c.name), func(t *testing.T) {
				t.Parallel()
				prio := func(p int64) int64 {
					if order == queues.Min {
						return -p
					}
					return p
				}
				db, q := setup(t, queues.Priority, "cpu", "mem")
				require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
					// Enough tasks that do not fit up front that the pop
					// uses the index.
					for range 300 {
						if err := q.Push(tr, queues.Item{ID: queues.NewID(), Priority: prio(9), Resources: []int64{64, 1 << 20}}); err != nil {
							return err
						}
					}
					// A straddling cell, mem 960..1023, with more tasks that
					// do not fit than straddleBudget ahead of one that does;
					// another within its budget.
					for range 100 {
						if err := q.Push(tr, queues.Item{ID: queues.NewID(), Priority: prio(8), Resources: []int64{2, 1001}}); err != nil {
							return err
						}
					}
					if err := q.Push(tr, queues.Item{ID: queues.NewID(), Priority: prio(8), Resources: []int64{3, 1010}}); err != nil {
						return err
					}
					return q.Push(tr, queues.Item{ID: queues.NewID(), Priority: prio(2), Resources: []int64{2, 1000}, Value: []byte("straddling")})
				}))
				push(t, db, q, prio(3), "whole", 1, 10)
				push(t, db, q, prio(1), "worse", 1, 10)
				push(t, db, q, prio(0), "worst", 1, 10)

				popper, err := db.CreateTransaction(bg)
				require.NoError(t, err)
				items, err := q.PopFitN(popper, order, limits, 3)
				require.NoError(t, err)
				require.Equal(t, []string{"whole", "straddling", "worse"}, values(items))

				push(t, db, q, prio(c.prio), "pushed", c.res...)
				err = popper.Commit()
				if !c.conflict {
					require.NoError(t, err)
					return
				}
				require.ErrorIs(t, err, kv.ErrNotCommitted)
				require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
					items, err = q.PopFitN(tr, order, limits, 3)
					return err
				}))
				require.Equal(t, []string{"pushed", "whole", "straddling"}, values(items))
			})
		}
	}
}

// TestPopFitNExactlyOnce: multi-row fit pops running at once, through the
// index, while tasks are pushed, pop every fitting task exactly once.
func TestPopFitNExactlyOnce(t *testing.T) {
	t.Parallel()
	db, q := setup(t, queues.Priority, "cpu", "mem")
	limits := []int64{4, 1000}
	const blockers, prefilled, pushers, each, poppers = 200, 600, 4, 100, 8
	pushTasks := func(from, n int, seed uint64) error {
		r := rand.New(rand.NewPCG(seed, 5))
		for i := from; i < from+n; i += 50 {
			err := db.Transact(bg, func(tr kv.Transaction) error {
				for j := i; j < min(i+50, from+n); j++ {
					// cpu 1..4 and mem 900..1000: whole and straddling cells.
					it := queues.Item{ID: int64(j + 1), Priority: r.Int64N(8), Resources: []int64{1 + r.Int64N(4), 900 + r.Int64N(101)}, Value: fmt.Append(nil, j)}
					if err := q.Push(tr, it); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	}
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		for range blockers {
			if err := q.Push(tr, queues.Item{ID: queues.NewID(), Priority: 9, Resources: []int64{5, 1}}); err != nil {
				return err
			}
		}
		return nil
	}))
	require.NoError(t, pushTasks(0, prefilled, 0))

	total := prefilled + pushers*each
	popped := make([]atomic.Int32, total)
	var left atomic.Int64
	left.Store(int64(total))
	var wg sync.WaitGroup
	errs := make(chan error, pushers+poppers)
	for p := range pushers {
		wg.Go(func() { errs <- pushTasks(prefilled+p*each, each, uint64(p+1)) })
	}
	popTasks := func(c int) error {
		for left.Load() > 0 {
			var items []queues.Item
			err := db.Transact(bg, func(tr kv.Transaction) error {
				var err error
				items, err = q.PopFitN(tr, []queues.Order{queues.Min, queues.Max}[c%2], limits, 1+c)
				return err
			})
			if err != nil {
				return err
			}
			for _, it := range items {
				var n int
				if _, err := fmt.Sscan(string(it.Value), &n); err != nil {
					return err
				}
				if popped[n].Add(1) != 1 {
					return fmt.Errorf("task %d popped twice", n)
				}
				left.Add(-1)
			}
		}
		return nil
	}
	for c := range poppers {
		wg.Go(func() { errs <- popTasks(c) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, int64(blockers), count(t, db, q))
}

// TestPopFitNWithinTransactionLimit: popping 10,000 tasks in one
// transaction, through the index, finishes well within the 5-second
// transaction limit when every engine operation (a read, a batch of a
// range read) is charged 100µs on the engine's clock: it takes a number of
// operations linear in the rows popped. n single fit pops each read from
// the head of every cell again, past the entries the earlier ones removed,
// and pass the limit (transaction_too_old) long before the end.
func TestPopFitNWithinTransactionLimit(t *testing.T) {
	t.Parallel()
	const tick = 100 * time.Microsecond
	var ops atomic.Int64
	start := time.Now()
	clock := func() time.Time { return start.Add(time.Duration(ops.Add(1)) * tick) }
	db := embedded.Open("", embedded.Config{Clock: clock})
	defer db.Close()
	q := queues.New(tuple.Tuple{"limit"}.Pack(), queues.Priority, "cpu", "mem")
	const n = 10_000
	r := rand.New(rand.NewPCG(3, 3))
	for i := 0; i < 2*n+scanBudgetPlus; i += 100 {
		require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
			for j := i; j < min(i+100, 2*n+scanBudgetPlus); j++ {
				it := queues.Item{ID: int64(j + 1), Priority: r.Int64N(9), Resources: []int64{1 + r.Int64N(8), 1 + r.Int64N(32)}}
				if j < scanBudgetPlus {
					it.Priority, it.Resources = 9, []int64{9, 1} // up front, and too big
				}
				if err := q.Push(tr, it); err != nil {
					return err
				}
			}
			return nil
		}))
	}
	tr, err := db.CreateTransaction(bg)
	require.NoError(t, err)
	defer tr.Cancel()
	before := ops.Load()
	items, err := q.PopFitN(tr, queues.Max, []int64{6, 24}, n)
	require.NoError(t, err)
	require.Len(t, items, n)
	require.NoError(t, tr.Commit())
	t.Logf("%d engine operations for %d rows", ops.Load()-before, n)
}

// scanBudgetPlus tasks that do not fit, ahead of the rest, send a fit pop
// to the index.
const scanBudgetPlus = 200
