package queues_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/queues"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// fakeClock is an injected wall clock that tests move by hand.
type fakeClock struct {
	mu sync.Mutex // guards t
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Unix(1_800_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// setupClock is setup with the queue on an injected clock.
func setupClock(t testing.TB, kind queues.Kind, resources ...string) (kv.Database, *queues.Queue, *fakeClock) {
	t.Helper()
	db, q := setup(t, kind, resources...)
	c := newFakeClock()
	return db, q.WithOptions(queues.Options{Clock: c.Now}), c
}

func lease(t testing.TB, db kv.Database, q *queues.Queue, req queues.LeaseRequest) []queues.Item {
	t.Helper()
	var items []queues.Item
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		var err error
		items, err = q.Lease(tr, req)
		return err
	}))
	return items
}

func scanAll(t testing.TB, db kv.Database, q *queues.Queue, order queues.Order) []string {
	t.Helper()
	out := []string{}
	require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
		out = out[:0]
		return q.Scan(tr, order, func(it queues.Item) (bool, error) {
			out = append(out, string(it.Value))
			return true, nil
		})
	}))
	return out
}

// TestLeaseComesBackAtItsPlace: a leased item stays a row (Count, Get,
// Peek, Scan see it) but no pop takes it; when the lease ends it is served
// before the later pushes of its priority, with its attempts and token.
func TestLeaseComesBackAtItsPlace(t *testing.T) {
	t.Parallel()
	for _, kind := range []queues.Kind{queues.FIFO, queues.Priority} {
		t.Run(kind.String(), func(t *testing.T) {
			t.Parallel()
			db, q, clock := setupClock(t, kind)
			for _, v := range []string{"a", "b", "c"} {
				push(t, db, q, 1, v)
			}
			got := lease(t, db, q, queues.LeaseRequest{Order: queues.Min, N: 1, For: 30 * time.Second})
			require.Len(t, got, 1)
			a := got[0]
			require.Equal(t, "a", string(a.Value))
			require.Equal(t, int64(1), a.Attempts)
			require.NotZero(t, a.Lease)
			require.Equal(t, clock.Now().Add(30*time.Second), a.VisibleAt)

			require.Equal(t, int64(3), count(t, db, q), "a leased item is still a row")
			require.Equal(t, []string{"a", "b", "c"}, scanAll(t, db, q, queues.Min))
			require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
				it, ok, err := q.Get(tr, a.ID)
				require.True(t, ok)
				require.Equal(t, a, it)
				it, ok, err2 := q.Peek(tr, queues.Min)
				require.True(t, ok)
				require.Equal(t, "a", string(it.Value))
				require.NoError(t, err2)
				return err
			}))

			v, ok := pop(t, db, q, queues.Min)
			require.True(t, ok)
			require.Equal(t, "b", v, "no pop takes a leased item")
			push(t, db, q, 1, "d")
			clock.Advance(30*time.Second - 1)
			b := lease(t, db, q, queues.LeaseRequest{Order: queues.Min, N: 1, For: time.Minute})
			require.Equal(t, []string{"c"}, values(b))

			clock.Advance(1) // a's lease ends
			v, ok = pop(t, db, q, queues.Min)
			require.True(t, ok)
			require.Equal(t, "a", v, "back at its place: before d, pushed later")
			v, _ = pop(t, db, q, queues.Min)
			require.Equal(t, "d", v)
			_, ok = pop(t, db, q, queues.Min)
			require.False(t, ok, "c is still leased")
			require.Equal(t, int64(1), count(t, db, q))
		})
	}
}

// TestLeaseAckExtendRelease: only the holder of the current lease acks,
// extends or releases; a lease lost to another consumer fails them all.
func TestLeaseAckExtendRelease(t *testing.T) {
	t.Parallel()
	db, q, clock := setupClock(t, queues.Priority, "cpu")
	push(t, db, q, 1, "x", 2)
	push(t, db, q, 2, "y", 2)
	x := lease(t, db, q, queues.LeaseRequest{Order: queues.Min, Limits: []int64{4}, N: 1, For: 10 * time.Second})[0]
	do := func(f func(tr kv.Transaction) (bool, error)) bool {
		var ok bool
		require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
			var err error
			ok, err = f(tr)
			return err
		}))
		return ok
	}
	// A heartbeat keeps it invisible past the first lease's end.
	require.True(t, do(func(tr kv.Transaction) (bool, error) { return q.Extend(tr, x.ID, x.Lease, time.Minute) }))
	require.False(t, do(func(tr kv.Transaction) (bool, error) { return q.Extend(tr, x.ID, x.Lease+1, time.Minute) }))
	clock.Advance(30 * time.Second)
	y := lease(t, db, q, queues.LeaseRequest{Order: queues.Min, Limits: []int64{4}, N: 5, For: 10 * time.Second})
	require.Equal(t, []string{"y"}, values(y), "x's lease was extended")

	// Release now: x is visible again, keeps its token and attempts.
	require.True(t, do(func(tr kv.Transaction) (bool, error) { return q.Release(tr, x.ID, x.Lease, 0) }))
	again := lease(t, db, q, queues.LeaseRequest{Order: queues.Min, Limits: []int64{4}, N: 1, For: 10 * time.Second})[0]
	require.Equal(t, x.ID, again.ID)
	require.Equal(t, int64(2), again.Attempts)
	require.NotEqual(t, x.Lease, again.Lease)
	// The first holder lost it.
	require.False(t, do(func(tr kv.Transaction) (bool, error) { return q.Ack(tr, x.ID, x.Lease) }))
	require.False(t, do(func(tr kv.Transaction) (bool, error) { return q.Release(tr, x.ID, x.Lease, 0) }))
	require.True(t, do(func(tr kv.Transaction) (bool, error) { return q.Ack(tr, x.ID, again.Lease) }))
	require.False(t, do(func(tr kv.Transaction) (bool, error) { return q.Ack(tr, x.ID, again.Lease) }), "acked once")
	require.Equal(t, int64(1), count(t, db, q))

	// Release with a delay: invisible until then.
	require.True(t, do(func(tr kv.Transaction) (bool, error) { return q.Release(tr, y[0].ID, y[0].Lease, 5*time.Second) }))
	_, ok := popFit(t, db, q, queues.Min, 4)
	require.False(t, ok)
	clock.Advance(5 * time.Second)
	v, ok := popFit(t, db, q, queues.Min, 4)
	require.True(t, ok)
	require.Equal(t, "y", v)
}

// TestDelayedPush: an item pushed with a visible_at in the future is a row
// that no pop takes before then, and comes back at its place.
func TestDelayedPush(t *testing.T) {
	t.Parallel()
	db, q, clock := setupClock(t, queues.Priority, "cpu", "mem")
	id := queues.NewID()
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		return q.Push(tr, queues.Item{ID: id, Priority: 1, Resources: []int64{1, 1}, Value: []byte("later"), VisibleAt: clock.Now().Add(time.Hour)})
	}))
	push(t, db, q, 1, "now", 1, 1)
	require.Equal(t, []string{"later", "now"}, scanAll(t, db, q, queues.Min))
	v, ok := popFit(t, db, q, queues.Min, 2, 2)
	require.True(t, ok)
	require.Equal(t, "now", v)
	_, ok = popFit(t, db, q, queues.Min, 2, 2)
	require.False(t, ok)
	require.Equal(t, int64(1), count(t, db, q))
	push(t, db, q, 1, "after", 1, 1)
	clock.Advance(time.Hour)
	v, _ = popFit(t, db, q, queues.Min, 2, 2)
	require.Equal(t, "later", v, "pushed before 'after'")
}

// TestLeaseMaxAttempts: an item leased MaxAttempts times is handed to Dead
// and removed, and the lease goes on to the next item.
func TestLeaseMaxAttempts(t *testing.T) {
	t.Parallel()
	db, q, clock := setupClock(t, queues.FIFO, "cpu")
	push(t, db, q, 0, "poison", 1)
	push(t, db, q, 0, "fine", 1)
	var dead []queues.Item
	req := queues.LeaseRequest{Order: queues.Min, Limits: []int64{1}, N: 1, For: time.Second, MaxAttempts: 2,
		Dead: func(it queues.Item) error { dead = append(dead, it); return nil }}
	for i := 0; i < 2; i++ {
		got := lease(t, db, q, req)
		require.Equal(t, []string{"poison"}, values(got))
		clock.Advance(time.Second)
	}
	dead = nil
	got := lease(t, db, q, req)
	require.Equal(t, []string{"fine"}, values(got))
	require.Len(t, dead, 1)
	require.Equal(t, "poison", string(dead[0].Value))
	require.Equal(t, int64(2), dead[0].Attempts)
	require.Equal(t, int64(1), count(t, db, q))
}

// TestLeaseBadInput: a lease needs a positive duration, limits that match
// the queue, and a token.
func TestLeaseBadInput(t *testing.T) {
	t.Parallel()
	db, q, _ := setupClock(t, queues.Priority, "cpu")
	push(t, db, q, 1, "x", 1)
	for _, req := range []queues.LeaseRequest{
		{N: 1, For: 0},
		{N: 1, For: -time.Second},
		{N: 1, For: time.Second, Limits: []int64{1, 2}},
	} {
		err := db.Transact(bg, func(tr kv.Transaction) error { _, err := q.Lease(tr, req); return err })
		require.ErrorIs(t, err, queues.ErrInvalidItem, "%+v", req)
	}
	err := db.Transact(bg, func(tr kv.Transaction) error { _, err := q.Ack(tr, 1, 0); return err })
	require.ErrorIs(t, err, queues.ErrInvalidItem)
	err = db.Transact(bg, func(tr kv.Transaction) error { _, err := q.Extend(tr, 1, 1, 0); return err })
	require.ErrorIs(t, err, queues.ErrInvalidItem)
	require.Equal(t, int64(1), count(t, db, q))
}

// TestLeaseEndsByMaxVisibleAt: a lease, an extension, a release or a push
// that would hide an item past MaxVisibleAt (where int64 nanoseconds end)
// is refused: it would otherwise wrap to a time in the past and show the
// item at once.
func TestLeaseEndsByMaxVisibleAt(t *testing.T) {
	t.Parallel()
	db, q, clock := setupClock(t, queues.Priority)
	id := push(t, db, q, 1, "x")
	far := queues.MaxVisibleAt.Sub(clock.Now()) + 1
	err := db.Transact(bg, func(tr kv.Transaction) error {
		_, err := q.Lease(tr, queues.LeaseRequest{N: 1, For: far})
		return err
	})
	require.ErrorIs(t, err, queues.ErrInvalidItem)
	require.ErrorContains(t, err, "after 2262-04-11T23:47:16.854775807Z")

	it := lease(t, db, q, queues.LeaseRequest{N: 1, For: far - 1})[0]
	require.True(t, it.VisibleAt.Equal(queues.MaxVisibleAt))
	require.Empty(t, lease(t, db, q, queues.LeaseRequest{N: 1, For: time.Second}), "the lease hides the item")
	for _, f := range []func(tr kv.Transaction) (bool, error){
		func(tr kv.Transaction) (bool, error) { return q.Extend(tr, id, it.Lease, far) },
		func(tr kv.Transaction) (bool, error) { return q.Release(tr, id, it.Lease, far) },
		func(tr kv.Transaction) (bool, error) { return q.SetVisibleAt(tr, id, queues.MaxVisibleAt.Add(1)) },
		func(tr kv.Transaction) (bool, error) { return q.SetVisibleAt(tr, id, time.Unix(0, 0)) },
		func(tr kv.Transaction) (bool, error) {
			return true, q.Push(tr, queues.Item{ID: queues.NewID(), Priority: 1, VisibleAt: queues.MaxVisibleAt.Add(1)})
		},
	} {
		err := db.Transact(bg, func(tr kv.Transaction) error { _, err := f(tr); return err })
		require.ErrorIs(t, err, queues.ErrInvalidItem)
	}
	require.Empty(t, lease(t, db, q, queues.LeaseRequest{N: 1, For: time.Second}), "the lease still hides the item")
	require.Equal(t, int64(1), count(t, db, q))
}

// TestLeaseSignal: a release that makes an item visible, and a lease that
// ends sooner than every other, wake the consumers waiting on the queue;
// a lease ending after another does not.
func TestLeaseSignal(t *testing.T) {
	t.Parallel()
	db, q, _ := setupClock(t, queues.FIFO)
	push(t, db, q, 0, "a")
	push(t, db, q, 0, "b")
	signal := func() []byte {
		var v []byte
		prefix := tuple.Tuple{"q", t.Name()}.Pack()
		require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
			var err error
			v, err = tr.Get(append(prefix, tuple.Tuple{int64(11)}.Pack()...))
			return err
		}))
		return v
	}
	s0 := signal()
	a := lease(t, db, q, queues.LeaseRequest{N: 1, For: time.Minute})[0]
	s1 := signal()
	require.NotEqual(t, s0, s1, "the first lease is the earliest due")
	lease(t, db, q, queues.LeaseRequest{N: 1, For: 2 * time.Minute})
	require.Equal(t, s1, signal(), "a later lease wakes no one")
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		_, err := q.Release(tr, a.ID, a.Lease, 0)
		return err
	}))
	require.NotEqual(t, s1, signal(), "a release wakes the waiters")
	require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
		_, ok, err := q.NextDue(tr)
		require.True(t, ok, "b is leased")
		return err
	}))
}

// TestLeaseExactlyOnceUnderFaults: autocommit leases retried after
// commit_unknown_result and conflicts, with a receipt per operation (as
// exec makes them), return what the committed attempt leased: every item
// is leased exactly once, and the tokens returned are the stored ones.
func TestLeaseExactlyOnceUnderFaults(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{Faults: &embedded.Faults{Seed: 5, Conflict: 0.1, UnknownApplied: 0.2, UnknownNotApplied: 0.1}})
	t.Cleanup(func() { _ = db.Close() })
	clock := newFakeClock()
	q := queues.New(tuple.Tuple{"q", t.Name()}.Pack(), queues.Priority, "cpu").WithOptions(queues.Options{Clock: clock.Now})
	const total = 120
	for i := 0; i < total; i++ {
		it := queues.Item{ID: queues.NewID(), Priority: int64(i % 3), Resources: []int64{int64(i % 4)}, Value: []byte(fmt.Sprint(i))}
		require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error { return q.Push(tr, it) }))
	}
	leased := map[string]queues.Item{}
	for len(leased) < total {
		var got []queues.Item
		require.NoError(t, queues.Once(bg, db, queues.Token{ID: queues.NewID(), At: clock.Now()}, func(tr kv.Transaction, token queues.Token) error {
			if items, ok, err := q.Receipt(tr, token); err != nil || ok {
				got = items
				return err
			}
			items, err := q.Lease(tr, queues.LeaseRequest{Order: queues.Min, Limits: []int64{3}, N: 3, For: time.Hour})
			if err != nil {
				return err
			}
			got = items
			return q.RecordReceipt(tr, token, items)
		}))
		require.NotEmpty(t, got)
		for _, it := range got {
			_, dup := leased[string(it.Value)]
			require.False(t, dup, "item %s leased twice", it.Value)
			leased[string(it.Value)] = it
		}
	}
	require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
		for v, it := range leased {
			stored, ok, err := q.Get(tr, it.ID)
			require.NoError(t, err)
			require.True(t, ok, v)
			require.Equal(t, int64(1), stored.Attempts, v)
			require.Equal(t, it.Lease, stored.Lease, "the receipt has the committed token of %s", v)
			require.Equal(t, it.VisibleAt, stored.VisibleAt)
		}
		return q.Check(tr)
	}))
	// Every ack commits once, whatever the faults.
	for _, it := range leased {
		var ok bool
		require.NoError(t, queues.Once(bg, db, queues.Token{ID: queues.NewID(), At: clock.Now()}, func(tr kv.Transaction, token queues.Token) error {
			if n, found, err := q.CountReceipt(tr, token); err != nil || found {
				ok = n == 1
				return err
			}
			var err error
			if ok, err = q.Ack(tr, it.ID, it.Lease); err != nil || !ok {
				return err
			}
			return q.RecordCount(tr, token, 1)
		}))
		require.True(t, ok)
	}
	require.Zero(t, count(t, db, q))
}

// TestMassExpiry: more leases end at once than a pop promotes
// (promoteBatch); the pops that follow promote the rest, and every item is
// served once.
func TestMassExpiry(t *testing.T) {
	t.Parallel()
	db, q, clock := setupClock(t, queues.FIFO)
	const n = 150
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		for i := 0; i < n; i++ {
			if err := q.Push(tr, queues.Item{ID: int64(i + 1), Value: []byte(fmt.Sprint(i))}); err != nil {
				return err
			}
		}
		return nil
	}))
	require.Len(t, lease(t, db, q, queues.LeaseRequest{N: n, For: time.Second}), n)
	clock.Advance(time.Second)
	seen := map[string]bool{}
	for {
		v, ok := pop(t, db, q, queues.Min)
		if !ok {
			break
		}
		require.False(t, seen[v])
		seen[v] = true
	}
	require.Len(t, seen, n)
}

// TestConcurrentLeaseAck: workers lease, and most ack; a fifth of the
// leases are dropped as by a crashed worker, and come back when their lease
// ends (workers that find nothing move the clock on). Every item is acked
// exactly once.
func TestConcurrentLeaseAck(t *testing.T) {
	t.Parallel()
	db, q, clock := setupClock(t, queues.Priority, "cpu")
	const workers, total = 8, 400
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		for i := 0; i < total; i++ {
			if err := q.Push(tr, queues.Item{ID: int64(i + 1), Priority: int64(i % 5), Resources: []int64{int64(i % 3)}, Value: []byte(fmt.Sprint(i))}); err != nil {
				return err
			}
		}
		return nil
	}))
	var mu sync.Mutex // guards acked
	acked := map[int64]int{}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				var got []queues.Item
				if err := db.Transact(bg, func(tr kv.Transaction) error {
					var err error
					limits := []int64(nil)
					if w%2 == 1 {
						limits = []int64{2}
					}
					got, err = q.Lease(tr, queues.LeaseRequest{Order: queues.Order(w % 2), Limits: limits, N: 1 + w%3, For: time.Minute})
					return err
				}); err != nil {
					errs <- err
					return
				}
				if len(got) == 0 {
					var left int64
					if err := db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
						var err error
						left, err = q.Count(tr)
						return err
					}); err != nil {
						errs <- err
						return
					}
					if left == 0 {
						return
					}
					clock.Advance(time.Minute) // crashed workers' leases end
					continue
				}
				for i, it := range got {
					if (n+i)%5 == 0 {
						continue // crashed: never acked
					}
					var ok bool
					if err := db.Transact(bg, func(tr kv.Transaction) error {
						var err error
						ok, err = q.Ack(tr, it.ID, it.Lease)
						return err
					}); err != nil {
						errs <- err
						return
					}
					if ok {
						mu.Lock()
						acked[it.ID]++
						mu.Unlock()
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, acked, total)
	for id, n := range acked {
		require.Equal(t, 1, n, "item %d", id)
	}
}

// TestLeaseIDs: a lease of chosen items takes those that are queued and
// visible, in the order given, and skips the others.
func TestLeaseIDs(t *testing.T) {
	t.Parallel()
	db, q, clock := setupClock(t, queues.Priority)
	ids := make([]int64, 3)
	for i, v := range []string{"a", "b", "c"} {
		ids[i] = push(t, db, q, 1, v)
	}
	got := lease(t, db, q, queues.LeaseRequest{IDs: []int64{ids[1]}, For: time.Minute})
	require.Equal(t, []string{"b"}, values(got))
	require.Equal(t, int64(1), got[0].Attempts)
	got = lease(t, db, q, queues.LeaseRequest{IDs: []int64{ids[2], ids[1], 12345, ids[0]}, For: time.Minute})
	require.Equal(t, []string{"c", "a"}, values(got), "b is leased, 12345 is not queued")
	clock.Advance(time.Minute)
	got = lease(t, db, q, queues.LeaseRequest{IDs: []int64{ids[1]}, For: time.Minute})
	require.Equal(t, []string{"b"}, values(got), "due again")
	require.Equal(t, int64(2), got[0].Attempts)
	require.Equal(t, int64(3), count(t, db, q))
}
