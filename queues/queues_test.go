package queues_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/queues"
	"github.com/fdbqueue/fdbqueue/tuple"
)

var bg = context.Background()

// setup opens a private database and a queue in it, and checks the queue's
// invariants when the test ends.
func setup(t testing.TB, kind queues.Kind, resources ...string) (kv.Database, *queues.Queue) {
	t.Helper()
	db := embedded.Open("", embedded.Config{RetryLimit: -1})
	q := queues.New(tuple.Tuple{"q", t.Name()}.Pack(), kind, resources...)
	t.Cleanup(func() {
		require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error { return q.Check(tr) }))
		_ = db.Close()
	})
	return db, q
}

func push(t testing.TB, db kv.Database, q *queues.Queue, prio int64, val string, res ...int64) int64 {
	t.Helper()
	id := queues.NewID()
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		return q.Push(tr, queues.Item{ID: id, Priority: prio, Resources: res, Value: []byte(val)})
	}))
	return id
}

func pop(t testing.TB, db kv.Database, q *queues.Queue, order queues.Order) (string, bool) {
	t.Helper()
	var it queues.Item
	var ok bool
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		var err error
		it, ok, err = q.Pop(tr, order)
		return err
	}))
	return string(it.Value), ok
}

func popFit(t testing.TB, db kv.Database, q *queues.Queue, order queues.Order, limits ...int64) (string, bool) {
	t.Helper()
	var it queues.Item
	var ok bool
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		var err error
		it, ok, err = q.PopFit(tr, order, limits)
		return err
	}))
	return string(it.Value), ok
}

func count(t testing.TB, db kv.Database, q *queues.Queue) int64 {
	t.Helper()
	var n int64
	require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
		var err error
		n, err = q.Count(tr)
		return err
	}))
	return n
}

func TestFIFO(t *testing.T) {
	t.Parallel()
	db, q := setup(t, queues.FIFO)
	for _, v := range []string{"a", "b", "c"} {
		push(t, db, q, 0, v)
	}
	require.Equal(t, int64(3), count(t, db, q))
	v, ok := pop(t, db, q, queues.Min)
	require.True(t, ok)
	require.Equal(t, "a", v)
	push(t, db, q, 0, "d")
	for _, want := range []string{"b", "c", "d"} {
		v, ok := pop(t, db, q, queues.Max) // order does not matter for FIFO
		require.True(t, ok)
		require.Equal(t, want, v)
	}
	_, ok = pop(t, db, q, queues.Min)
	require.False(t, ok)
	require.Zero(t, count(t, db, q))
}

func TestPriorityOldestFirstBothWays(t *testing.T) {
	t.Parallel()
	db, q := setup(t, queues.Priority)
	push(t, db, q, 5, "5a")
	push(t, db, q, 1, "1a")
	push(t, db, q, 5, "5b")
	push(t, db, q, -3, "-3a")
	push(t, db, q, 1, "1b")
	push(t, db, q, 5, "5c")

	var peeked queues.Item
	require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
		var err error
		peeked, _, err = q.Peek(tr, queues.Max)
		return err
	}))
	require.Equal(t, "5a", string(peeked.Value), "peek_max: highest priority, oldest first")
	require.Equal(t, int64(5), peeked.Priority)

	for _, want := range []string{"5a", "5b"} {
		v, _ := pop(t, db, q, queues.Max)
		require.Equal(t, want, v)
	}
	for _, want := range []string{"-3a", "1a", "1b"} {
		v, _ := pop(t, db, q, queues.Min)
		require.Equal(t, want, v)
	}
	v, _ := pop(t, db, q, queues.Max)
	require.Equal(t, "5c", v)

	var order []string
	push(t, db, q, 2, "2a")
	push(t, db, q, 9, "9a")
	push(t, db, q, 2, "2b")
	require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
		order = nil
		return q.Scan(tr, queues.Max, func(it queues.Item) (bool, error) {
			order = append(order, string(it.Value))
			return true, nil
		})
	}))
	require.Equal(t, []string{"9a", "2a", "2b"}, order)
}

func TestTaskQueueFit(t *testing.T) {
	t.Parallel()
	db, q := setup(t, queues.Priority, "cpu", "mem")
	push(t, db, q, 10, "big", 8, 64000)
	push(t, db, q, 10, "medium", 4, 8000)
	push(t, db, q, 5, "small-low", 1, 512)
	push(t, db, q, 10, "small", 1, 1000)
	push(t, db, q, 10, "small-newer", 1, 1000)

	v, ok := popFit(t, db, q, queues.Max, 2, 4096)
	require.True(t, ok)
	require.Equal(t, "small", v, "highest priority that fits, oldest first")
	v, _ = popFit(t, db, q, queues.Max, 2, 4096)
	require.Equal(t, "small-newer", v)
	v, _ = popFit(t, db, q, queues.Max, 2, 4096)
	require.Equal(t, "small-low", v, "a lower priority only once no higher one fits")
	_, ok = popFit(t, db, q, queues.Max, 2, 4096)
	require.False(t, ok)
	v, _ = popFit(t, db, q, queues.Min, 100, 100000)
	require.Equal(t, "big", v)
	require.Equal(t, int64(1), count(t, db, q))

	err := db.Transact(bg, func(tr kv.Transaction) error {
		_, _, err := q.PopFit(tr, queues.Max, []int64{1})
		return err
	})
	require.ErrorIs(t, err, queues.ErrInvalidItem)
	require.ErrorContains(t, err, "cpu")
}

// TestFitThroughIndex makes the fitting task invisible to the first scan, so
// the answer must come from the cell and shape index, including cells that
// straddle a limit.
func TestFitThroughIndex(t *testing.T) {
	t.Parallel()
	db, q := setup(t, queues.Priority, "cpu", "mem")
	// 200 tasks that do not fit limits (10, 1000): mem 1001..1100 shares
	// cells with 1000 (a straddling cell), and cpu 11..30 exceeds.
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		for i := 0; i < 200; i++ {
			var res []int64
			if i%2 == 0 {
				res = []int64{int64(1 + i%10), int64(1001 + i%100)}
			} else {
				res = []int64{int64(11 + i%20), int64(1 + i%1000)}
			}
			if err := q.Push(tr, queues.Item{ID: queues.NewID(), Priority: int64(i % 3), Resources: res, Value: []byte("no")}); err != nil {
				return err
			}
		}
		return nil
	}))
	push(t, db, q, 0, "fits-low", 10, 1000)
	push(t, db, q, 1, "fits-mid", 3, 999)
	push(t, db, q, 1, "fits-mid-newer", 2, 10)
	for _, want := range []string{"fits-mid", "fits-mid-newer", "fits-low"} {
		v, ok := popFit(t, db, q, queues.Max, 10, 1000)
		require.True(t, ok)
		require.Equal(t, want, v)
	}
	_, ok := popFit(t, db, q, queues.Max, 10, 1000)
	require.False(t, ok)
	_, ok = popFit(t, db, q, queues.Min, 0, 0)
	require.False(t, ok)
}

func TestRemoveMoveGet(t *testing.T) {
	t.Parallel()
	db, q := setup(t, queues.Priority, "cpu")
	a := push(t, db, q, 1, "a", 1)
	b := push(t, db, q, 1, "b", 2)
	push(t, db, q, 1, "c", 3)

	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		ok, err := q.Move(tr, b, 7)
		require.True(t, ok)
		return err
	}))
	v, _ := pop(t, db, q, queues.Max)
	require.Equal(t, "b", v)

	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		it, ok, err := q.Remove(tr, a)
		require.True(t, ok)
		require.Equal(t, "a", string(it.Value))
		_, ok, _ = q.Remove(tr, a)
		require.False(t, ok, "removing twice finds nothing")
		_, ok, _ = q.Get(tr, a)
		require.False(t, ok)
		return err
	}))
	require.Equal(t, int64(1), count(t, db, q))
}

func TestDuplicateAndInvalid(t *testing.T) {
	t.Parallel()
	db, q := setup(t, queues.Priority, "cpu")
	id := push(t, db, q, 1, "a", 1)
	// Pushing an id again is a retry of that push: it changes nothing.
	err := db.Transact(bg, func(tr kv.Transaction) error {
		return q.Push(tr, queues.Item{ID: id, Priority: 2, Resources: []int64{1}, Value: []byte("other")})
	})
	require.NoError(t, err)
	require.Equal(t, int64(1), count(t, db, q))
	var got queues.Item
	require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
		var err error
		got, _, err = q.Get(tr, id)
		return err
	}))
	require.Equal(t, "a", string(got.Value))
	require.Equal(t, int64(1), got.Priority)
	err = db.Transact(bg, func(tr kv.Transaction) error {
		return q.Push(tr, queues.Item{ID: 0, Resources: []int64{1}})
	})
	require.ErrorIs(t, err, queues.ErrInvalidItem)
	err = db.Transact(bg, func(tr kv.Transaction) error {
		return q.Push(tr, queues.Item{ID: 5, Resources: []int64{1, 2}})
	})
	require.ErrorIs(t, err, queues.ErrInvalidItem)

	fifo := queues.New(tuple.Tuple{"fifo", t.Name()}.Pack(), queues.FIFO)
	err = db.Transact(bg, func(tr kv.Transaction) error {
		_, err := fifo.Move(tr, 1, 2)
		return err
	})
	require.ErrorIs(t, err, queues.ErrInvalidItem)
}

// TestComposesInCallerTransaction: queue operations inside one transaction
// are all-or-nothing, and see each other.
func TestComposesInCallerTransaction(t *testing.T) {
	t.Parallel()
	db, q := setup(t, queues.Priority, "cpu")
	other := queues.New(tuple.Tuple{"other", t.Name()}.Pack(), queues.FIFO)
	push(t, db, q, 1, "task", 1)

	tr, err := db.CreateTransaction(bg)
	require.NoError(t, err)
	it, ok, err := q.PopFit(tr, queues.Max, []int64{1})
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, other.Push(tr, queues.Item{ID: queues.NewID(), Value: it.Value}))
	n, err := q.Count(tr)
	require.NoError(t, err)
	require.Zero(t, n, "the transaction sees its own pop")
	tr.Cancel()
	require.Equal(t, int64(1), count(t, db, q), "a cancelled transaction popped nothing")

	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		it, _, err := q.PopFit(tr, queues.Max, []int64{1})
		if err != nil {
			return err
		}
		return other.Push(tr, queues.Item{ID: queues.NewID(), Value: it.Value})
	}))
	require.Zero(t, count(t, db, q))
	require.Equal(t, int64(1), count(t, db, other))
	require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error { return other.Check(tr) }))
}

func TestPopN(t *testing.T) {
	t.Parallel()
	db, q := setup(t, queues.Priority)
	for i := 0; i < 10; i++ {
		push(t, db, q, int64(i%3), fmt.Sprint(i))
	}
	var got []string
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		got = nil
		items, err := q.PopN(tr, queues.Max, 5)
		for _, it := range items {
			got = append(got, string(it.Value))
		}
		return err
	}))
	require.Equal(t, []string{"2", "5", "8", "1", "4"}, got, "highest priority first, oldest first within one")
	require.Equal(t, int64(5), count(t, db, q))
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		items, err := q.PopN(tr, queues.Min, 100)
		require.Len(t, items, 5)
		return err
	}))
	require.Zero(t, count(t, db, q))
}

func TestClear(t *testing.T) {
	t.Parallel()
	db, q := setup(t, queues.Priority, "cpu")
	for i := 0; i < 10; i++ {
		push(t, db, q, int64(i), "x", int64(i))
	}
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		q.Clear(tr)
		return nil
	}))
	require.Zero(t, count(t, db, q))
	_, ok := pop(t, db, q, queues.Min)
	require.False(t, ok)
}

// model is the reference implementation: a slice, searched linearly.
type model struct {
	items []modelItem
	clock int
}

type modelItem struct {
	id, prio int64
	at       int
	res      []int64
	val      string
}

func (m *model) push(id, prio int64, res []int64, val string) {
	m.clock++
	m.items = append(m.items, modelItem{id: id, prio: prio, at: m.clock, res: res, val: val})
}

func (m *model) best(kind queues.Kind, order queues.Order, limits []int64) int {
	bi := -1
	for i, it := range m.items {
		if limits != nil && !slices.EqualFunc(it.res, limits, func(r, l int64) bool { return r <= l }) {
			continue
		}
		if bi < 0 {
			bi = i
			continue
		}
		b := m.items[bi]
		if kind == queues.Priority && it.prio != b.prio {
			if (it.prio < b.prio) == (order == queues.Min) {
				bi = i
			}
			continue
		}
		if it.at < b.at {
			bi = i
		}
	}
	return bi
}

func (m *model) take(i int) modelItem {
	it := m.items[i]
	m.items = slices.Delete(m.items, i, i+1)
	return it
}

func (m *model) find(id int64) int {
	return slices.IndexFunc(m.items, func(it modelItem) bool { return it.id == id })
}

// resourceValue draws from ranges that exercise exact cells (below 16),
// straddling cells (around 100 and 1000) and large values.
func resourceValue(r *rand.Rand) int64 {
	switch r.IntN(4) {
	case 0:
		return r.Int64N(16)
	case 1:
		return 90 + r.Int64N(30)
	case 2:
		return 990 + r.Int64N(30)
	default:
		return r.Int64N(1 << 40)
	}
}

func TestModel(t *testing.T) {
	t.Parallel()
	shapes := []struct {
		name string
		kind queues.Kind
		res  []string
	}{
		{"fifo", queues.FIFO, nil},
		{"priority", queues.Priority, nil},
		{"task1", queues.Priority, []string{"cpu"}},
		{"task2", queues.Priority, []string{"cpu", "mem"}},
		{"task3", queues.Priority, []string{"cpu", "mem", "gpu"}},
		{"fifo-task2", queues.FIFO, []string{"cpu", "mem"}},
	}
	for _, sh := range shapes {
		for seed := uint64(1); seed <= 4; seed++ {
			t.Run(fmt.Sprintf("%s/seed%d", sh.name, seed), func(t *testing.T) {
				t.Parallel()
				runModel(t, sh.kind, sh.res, seed, 1500)
			})
		}
	}
}

func runModel(t *testing.T, kind queues.Kind, resNames []string, seed uint64, steps int) {
	db, q := setup(t, kind, resNames...)
	r := rand.New(rand.NewPCG(seed, 99))
	m := &model{}
	var ids []int64
	d := len(resNames)
	randRes := func() []int64 {
		if d == 0 {
			return nil
		}
		res := make([]int64, d)
		for i := range res {
			res[i] = resourceValue(r)
		}
		return res
	}
	orderOf := func() queues.Order { return queues.Order(r.IntN(2)) }
	for step := 0; step < steps; step++ {
		op := r.IntN(10)
		switch {
		case op < 4: // push, sometimes several in one transaction
			n := 1 + r.IntN(3)
			require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
				for i := 0; i < n; i++ {
					id := int64(step*10 + i + 1)
					prio := r.Int64N(5) - 2
					if kind == queues.FIFO {
						prio = 0
					}
					res := randRes()
					if err := q.Push(tr, queues.Item{ID: id, Priority: prio, Resources: res, Value: []byte(fmt.Sprint(id))}); err != nil {
						return err
					}
				}
				return nil
			}))
			// Replay into the model with the same draws: redo them.
			for i := 0; i < n; i++ {
				id := int64(step*10 + i + 1)
				var it queues.Item
				require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
					var err error
					it, _, err = q.Get(tr, id)
					return err
				}))
				m.push(id, it.Priority, it.Resources, string(it.Value))
				ids = append(ids, id)
			}
		case op < 6: // pop or peek in order
			order, peek := orderOf(), r.IntN(3) == 0
			var it queues.Item
			var ok bool
			require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
				var err error
				if peek {
					it, ok, err = q.Peek(tr, order)
				} else {
					it, ok, err = q.Pop(tr, order)
				}
				return err
			}))
			bi := m.best(kind, order, nil)
			require.Equal(t, bi >= 0, ok, "step %d", step)
			if ok {
				require.Equal(t, m.items[bi].val, string(it.Value), "step %d order %v", step, order)
				if !peek {
					m.take(bi)
				}
			}
		case op < 8 && d > 0: // fit pop or peek
			order, peek := orderOf(), r.IntN(3) == 0
			limits := randRes()
			var it queues.Item
			var ok bool
			require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
				var err error
				if peek {
					it, ok, err = q.PeekFit(tr, order, limits)
				} else {
					it, ok, err = q.PopFit(tr, order, limits)
				}
				return err
			}))
			bi := m.best(kind, order, limits)
			require.Equal(t, bi >= 0, ok, "step %d limits %v", step, limits)
			if ok {
				require.Equal(t, m.items[bi].val, string(it.Value), "step %d order %v limits %v", step, order, limits)
				if !peek {
					m.take(bi)
				}
			}
		case op == 8 && len(ids) > 0: // remove or move by id
			id := ids[r.IntN(len(ids))]
			mi := m.find(id)
			if kind == queues.Priority && r.IntN(2) == 0 {
				prio := r.Int64N(5) - 2
				var ok bool
				require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
					var err error
					ok, err = q.Move(tr, id, prio)
					return err
				}))
				require.Equal(t, mi >= 0, ok)
				if ok {
					it := m.take(mi)
					m.push(it.id, prio, it.res, it.val)
				}
			} else {
				var ok bool
				require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
					var err error
					_, ok, err = q.Remove(tr, id)
					return err
				}))
				require.Equal(t, mi >= 0, ok)
				if ok {
					m.take(mi)
				}
			}
		default:
			require.Equal(t, int64(len(m.items)), count(t, db, q))
		}
	}
	require.Equal(t, int64(len(m.items)), count(t, db, q))
}

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

func TestCheckFindsCorruption(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	q := queues.New(tuple.Tuple{"c"}.Pack(), queues.Priority, "cpu")
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		return q.Push(tr, queues.Item{ID: 1, Priority: 1, Resources: []int64{3}, Value: []byte("x")})
	}))
	// Remove the item behind the queue's back: its index entries dangle.
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		tr.ClearRange(kv.PrefixRange(append(tuple.Tuple{"c"}.Pack(), tuple.AppendInt(nil, 0)...)))
		return nil
	}))
	err := db.ReadTransact(bg, func(tr kv.ReadTransaction) error { return q.Check(tr) })
	require.True(t, errors.Is(err, queues.ErrCorrupt), "got %v", err)
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

// TestClearItemsKeepsMarkers: emptying a queue removes items, indexes and
// the count, and keeps push markers and receipts, so that a push retried
// after commit_unknown_result across the clear is not applied twice; a
// count receipt returns what a delete recorded.
func TestClearItemsKeepsMarkers(t *testing.T) {
	t.Parallel()
	db, q := setup(t, queues.Priority, "cpu")
	item := queues.Item{ID: queues.NewID(), Priority: 3, Resources: []int64{2}, Value: []byte("once")}
	pushIt := func() {
		require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error { return q.Push(tr, item) }))
	}
	pushIt()
	push(t, db, q, 1, "other", 1)
	require.Equal(t, int64(2), count(t, db, q))
	token := queues.NewID()
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		q.ClearItems(tr)
		return q.RecordCount(tr, token, 2)
	}))
	require.Equal(t, int64(0), count(t, db, q))
	_, ok := popFit(t, db, q, queues.Max, 16)
	require.False(t, ok, "the fit index is empty too")

	pushIt() // the retry of the first push
	require.Equal(t, int64(0), count(t, db, q), "the marker survived the clear")
	require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
		n, ok, err := q.CountReceipt(tr, token)
		require.True(t, ok)
		require.Equal(t, int64(2), n)
		_, ok, err = q.CountReceipt(tr, token+1)
		require.False(t, ok)
		return err
	}))
	push(t, db, q, 5, "after", 3)
	v, ok := popFit(t, db, q, queues.Max, 16)
	require.True(t, ok)
	require.Equal(t, "after", v)
}
