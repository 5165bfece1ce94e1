package queues_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
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
	return setupOn(t, embedded.Config{RetryLimit: -1}, kind, resources...)
}

// setupCells is setup, the queue's fit index with exact cells below below
// (Queue.WithExactCells).
func setupCells(t testing.TB, below int64, kind queues.Kind, resources ...string) (kv.Database, *queues.Queue) {
	t.Helper()
	return setupOnCells(t, embedded.Config{RetryLimit: -1}, below, kind, resources...)
}

// setupOn is setup on an engine configured by cfg.
func setupOn(t testing.TB, cfg embedded.Config, kind queues.Kind, resources ...string) (kv.Database, *queues.Queue) {
	t.Helper()
	return setupOnCells(t, cfg, queues.ExactCellsBelow, kind, resources...)
}

func setupOnCells(t testing.TB, cfg embedded.Config, below int64, kind queues.Kind, resources ...string) (kv.Database, *queues.Queue) {
	t.Helper()
	db := embedded.Open("", cfg)
	q, err := queues.New(tuple.Tuple{"q", t.Name()}.Pack(), kind, resources...).WithExactCells(below)
	require.NoError(t, err)
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

// TestNewIDConsecutiveAndUnique: ids are positive and never repeat, from
// any number of goroutines, and one goroutine's ids are consecutive but
// where a block ends, so that a batch's ids are neighbours in the index.
// The sequence is checked on a source of its own (other tests running in
// parallel take ids from NewID's); NewID itself, for positive unique ids.
func TestNewIDConsecutiveAndUnique(t *testing.T) {
	t.Parallel()
	for name, next := range map[string]func() int64{"NewID": queues.NewID, "source": queues.NewIDSource()} {
		const goroutines, each = 8, 20_000
		made := make([][]int64, goroutines)
		var wg sync.WaitGroup
		for g := range made {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each {
					made[g] = append(made[g], next())
				}
			}()
		}
		wg.Wait()
		seen := map[int64]bool{}
		for _, mine := range made {
			for _, id := range mine {
				require.Positive(t, id, name)
				require.False(t, seen[id], "%s: id %d made twice", name, id)
				seen[id] = true
			}
		}
	}
	next := queues.NewIDSource()
	var run []int64
	for range 1000 {
		run = append(run, next())
	}
	jumps := 0
	for i := 1; i < len(run); i++ {
		if run[i] != run[i-1]+1 {
			jumps++
		}
	}
	require.LessOrEqual(t, jumps, 1, "ids are consecutive but where a block ends: %v", run[:10])
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
	token := newToken()
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		q.ClearItems(tr)
		return q.RecordCount(tr, token, 2)
	}))
	require.Equal(t, int64(0), count(t, db, q))
	_, ok := popFit(t, db, q, queues.Max, 16)
	require.False(t, ok, "the fit index is empty too")

	pushIt() // the retry of the first push
	require.Equal(t, int64(0), count(t, db, q), "the marker survived the clear")
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		retry := token
		retry.Unsure = true // as a retry after commit_unknown_result
		n, ok, err := q.CountReceipt(tr, retry)
		require.True(t, ok)
		require.Equal(t, int64(2), n)
		retry.ID++
		_, ok, err = q.CountReceipt(tr, retry)
		require.False(t, ok)
		return err
	}))
	push(t, db, q, 5, "after", 3)
	v, ok := popFit(t, db, q, queues.Max, 16)
	require.True(t, ok)
	require.Equal(t, "after", v)
}

// TestPushAllRefusesDuplicateIDs: PushAll reads its ids and directory keys
// in one kv.GetMany, and still refuses an id already queued, pushed earlier
// in the transaction, or given twice in one call, in a plain transaction
// and in an Attempt, leaving nothing of the call behind.
func TestPushAllRefusesDuplicateIDs(t *testing.T) {
	t.Parallel()
	db, q := setup(t, queues.Priority, "cpu", "mem")
	queued := push(t, db, q, 1, "queued", 1, 1)
	item := func(id int64) queues.Item {
		return queues.Item{ID: id, Resources: []int64{2, 40}, Value: []byte("new")}
	}
	claims := queues.NewClaims()
	for _, attempt := range []bool{false, true} {
		for name, items := range map[string][]queues.Item{
			"queued":      {item(queues.NewID()), item(queued)},
			"given twice": {item(7), item(queues.NewID()), item(7)},
			// A run of consecutive ids is read as one range.
			"queued, in a run": {item(queued - 2), item(queued + 2), item(queued), item(queued - 1), item(queued + 1)},
		} {
			err := db.Transact(bg, func(tr kv.Transaction) error {
				if attempt {
					a := claims.Begin(tr)
					defer a.Release(false)
					tr = a
				}
				_, err := q.PushAll(tr, queues.Token{}, items)
				return err
			})
			require.ErrorIs(t, err, queues.ErrDuplicateID, name)
			if name != "given twice" {
				var dup *queues.DuplicateIDError
				require.ErrorAs(t, err, &dup, name)
				require.Equal(t, queued, dup.ID, "the error names the queued id: %s", name)
				require.ErrorContains(t, err, fmt.Sprint(queued), name)
			}
		}
		err := db.Transact(bg, func(tr kv.Transaction) error {
			if err := q.Push(tr, item(9)); err != nil {
				return err
			}
			_, err := q.PushAll(tr, queues.Token{}, []queues.Item{item(10), item(9)})
			return err
		})
		require.ErrorIs(t, err, queues.ErrDuplicateID, "pushed earlier in the transaction")
		var dup *queues.DuplicateIDError
		require.ErrorAs(t, err, &dup)
		require.Equal(t, int64(9), dup.ID)
		err = db.Transact(bg, func(tr kv.Transaction) error {
			if err := q.Push(tr, item(104)); err != nil {
				return err
			}
			_, err := q.PushAll(tr, queues.Token{}, []queues.Item{item(101), item(102), item(103), item(104), item(105), item(106)})
			return err
		})
		require.ErrorIs(t, err, queues.ErrDuplicateID, "pushed earlier in the transaction, in a run")
		require.ErrorContains(t, err, "id 104")
	}
	require.Equal(t, int64(1), count(t, db, q), "a refused call leaves nothing")
	// And a good call pushes every item, filed in the fit index.
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		_, err := q.PushAll(tr, queues.Token{}, []queues.Item{item(11), {ID: 12, Resources: []int64{3, 3}}})
		return err
	}))
	got, ok := popFit(t, db, q, queues.Min, 2, 40)
	require.True(t, ok)
	require.Equal(t, "new", got)
}

// TestConcurrentRunsOfOneIDConflict: two transactions that push the same
// run of consecutive ids at once (checked with one range read each) do not
// both land: one pushes them, the other meets ErrDuplicateID.
func TestConcurrentRunsOfOneIDConflict(t *testing.T) {
	t.Parallel()
	db, q := setup(t, queues.Priority, "cpu", "mem")
	for round := range 20 {
		first := int64(1000 + 100*round)
		items := make([]queues.Item, 10)
		for i := range items {
			items[i] = queues.Item{ID: first + int64(i), Resources: []int64{1, 1}, Value: []byte("v")}
		}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for g := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[g] = db.Transact(bg, func(tr kv.Transaction) error {
					_, err := q.PushAll(tr, queues.Token{}, items)
					return err
				})
			}()
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			if err == nil {
				ok++
			} else {
				require.ErrorIs(t, err, queues.ErrDuplicateID)
			}
		}
		require.Equal(t, 1, ok, "round %d: %v", round, errs)
	}
	require.Equal(t, int64(200), count(t, db, q))
}
