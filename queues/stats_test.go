package queues_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/queues"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// stats reads the queue's statistics at the clock's time.
func stats(t testing.TB, db kv.Database, q *queues.Queue, now time.Time) queues.Stats {
	t.Helper()
	var s queues.Stats
	require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
		var err error
		s, err = q.Stats(tr, now)
		return err
	}))
	return s
}

// scanStats is what Stats must say, from a scan of every item at now.
func scanStats(t testing.TB, db kv.Database, q *queues.Queue, now time.Time) queues.Stats {
	t.Helper()
	asOf := now.Truncate(time.Second)
	if asOf.Before(now) {
		asOf = asOf.Add(time.Second)
	}
	var s queues.Stats
	require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
		s = queues.Stats{AsOf: asOf}
		oldest := int64(-1)
		return q.Scan(tr, queues.Min, func(it queues.Item) (bool, error) {
			s.Items++
			switch {
			case it.VisibleAt.After(asOf) && it.Held:
				s.Leased++
			case it.VisibleAt.After(asOf):
				s.Delayed++
			default:
				s.Visible++
				since := it.PushedAt
				if it.VisibleAt.After(since) {
					since = it.VisibleAt
				}
				if sec := since.Unix(); oldest < 0 || sec < oldest {
					oldest = sec
					s.VisibleSince = time.Unix(sec, 0)
				}
			}
			return true, nil
		})
	}))
	return s
}

// requireStats checks Stats against a scan at now.
func requireStats(t testing.TB, db kv.Database, q *queues.Queue, now time.Time, msg string) queues.Stats {
	t.Helper()
	got, want := stats(t, db, q, now), scanStats(t, db, q, now)
	require.False(t, got.Since.IsZero(), "%s: exact", msg)
	require.Equal(t, want.AsOf, got.AsOf, msg)
	require.Equal(t, [4]int64{want.Items, want.Visible, want.Delayed, want.Leased}, [4]int64{got.Items, got.Visible, got.Delayed, got.Leased},
		"%s: items, visible, delayed, leased", msg)
	require.True(t, want.VisibleSince.Equal(got.VisibleSince), "%s: visible since %v, the scan says %v", msg, got.VisibleSince, want.VisibleSince)
	return got
}

// TestStatsLifecycle walks one item through each state and counter.
func TestStatsLifecycle(t *testing.T) {
	t.Parallel()
	db, q, clock := setupClock(t, queues.FIFO)
	start := clock.Now()
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error { q.StartStats(tr); return nil }))
	push(t, db, q, 0, "a")
	clock.Advance(1500 * time.Millisecond)
	push(t, db, q, 0, "b")
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		return q.Push(tr, queues.Item{ID: queues.NewID(), Value: []byte("later"), VisibleAt: clock.Now().Add(10 * time.Second)})
	}))
	s := requireStats(t, db, q, clock.Now(), "pushed")
	require.Equal(t, [4]int64{3, 2, 1, 0}, [4]int64{s.Items, s.Visible, s.Delayed, s.Leased})
	require.Equal(t, start.Unix(), s.VisibleSince.Unix(), "a waits since its push")
	require.Equal(t, int64(3), s.Counter(queues.StatPushed))

	a := lease(t, db, q, queues.LeaseRequest{N: 1, For: 30 * time.Second})[0]
	require.Equal(t, "a", string(a.Value))
	require.True(t, a.Held)
	s = requireStats(t, db, q, clock.Now(), "a leased")
	require.Equal(t, [3]int64{1, 1, 1}, [3]int64{s.Visible, s.Delayed, s.Leased})
	require.Equal(t, start.Add(1500*time.Millisecond).Unix(), s.VisibleSince.Unix(), "b is the oldest visible now")
	require.Equal(t, int64(1), s.Counter(queues.StatLeased))

	// The delay ends: "later" is visible, without a write, since its due
	// time; then the lease ends, and a is visible since its end.
	clock.Advance(11 * time.Second)
	s = requireStats(t, db, q, clock.Now(), "later due")
	require.Equal(t, [3]int64{2, 0, 1}, [3]int64{s.Visible, s.Delayed, s.Leased})
	clock.Advance(30 * time.Second)
	s = requireStats(t, db, q, clock.Now(), "lease ended")
	require.Equal(t, [3]int64{3, 0, 0}, [3]int64{s.Visible, s.Delayed, s.Leased})
	require.Zero(t, s.Counter(queues.StatExpired), "counted when a pop takes it back, not before")

	// A pop moves both back (a's lease expired), and takes a, the oldest.
	v, ok := pop(t, db, q, queues.Min)
	require.True(t, ok)
	require.Equal(t, "a", v)
	s = requireStats(t, db, q, clock.Now(), "popped")
	require.Equal(t, int64(1), s.Counter(queues.StatExpired))
	require.Equal(t, int64(2), s.Visible)

	// A lease acked by its holder, one released at once, one extended.
	items := lease(t, db, q, queues.LeaseRequest{N: 2, For: time.Minute})
	require.Len(t, items, 2)
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		ok, err := q.Extend(tr, items[0].ID, items[0].Lease, 2*time.Hour)
		require.True(t, ok)
		return err
	}))
	s = requireStats(t, db, q, clock.Now(), "extended")
	require.Equal(t, [3]int64{0, 0, 2}, [3]int64{s.Visible, s.Delayed, s.Leased}, "still leased")
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		ok, err := q.Release(tr, items[1].ID, items[1].Lease, 0)
		require.True(t, ok)
		return err
	}))
	s = requireStats(t, db, q, clock.Now(), "released")
	require.Equal(t, int64(1), s.Counter(queues.StatReleased))
	require.Equal(t, [3]int64{1, 0, 1}, [3]int64{s.Visible, s.Delayed, s.Leased})
	// A release with a delay ends the lease too: the item is delayed.
	again := lease(t, db, q, queues.LeaseRequest{N: 1, For: time.Minute})[0]
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		_, err := q.Release(tr, again.ID, again.Lease, time.Hour)
		return err
	}))
	s = requireStats(t, db, q, clock.Now(), "released later")
	require.Equal(t, int64(2), s.Counter(queues.StatReleased))
	require.Equal(t, [3]int64{0, 1, 1}, [3]int64{s.Visible, s.Delayed, s.Leased})
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		ok, err := q.Ack(tr, items[0].ID, items[0].Lease)
		require.True(t, ok)
		return err
	}))
	s = requireStats(t, db, q, clock.Now(), "acked")
	require.Equal(t, [4]int64{1, 0, 1, 0}, [4]int64{s.Items, s.Visible, s.Delayed, s.Leased})
	require.True(t, s.VisibleSince.IsZero(), "nothing visible")
}

// TestStatsDueBuckets: items due across coarse buckets (dueLevel seconds)
// are counted as leased or delayed until the second they are due, read at
// every second around their due times.
func TestStatsDueBuckets(t *testing.T) {
	t.Parallel()
	db, q, clock := setupClock(t, queues.Priority)
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error { q.StartStats(tr); return nil }))
	base := clock.Now()
	var dues []time.Duration
	for i, d := range []time.Duration{time.Second, 1023 * time.Second, 1024 * time.Second, 1025 * time.Second, 3 * time.Hour, 3*time.Hour + 500*time.Millisecond, 30 * 24 * time.Hour} {
		require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
			return q.Push(tr, queues.Item{ID: queues.NewID(), Priority: int64(i), Value: []byte("d"), VisibleAt: base.Add(d)})
		}))
		dues = append(dues, d)
	}
	for range 3 {
		lease(t, db, q, queues.LeaseRequest{N: 1, Order: queues.Max, For: 1024 * time.Second})
		push(t, db, q, 9, "v")
	}
	for _, d := range dues {
		for _, off := range []time.Duration{-time.Second, -time.Millisecond, 0, time.Millisecond, time.Second} {
			at := base.Add(d + off)
			requireStats(t, db, q, at, fmt.Sprintf("at %v%+v", d, off))
		}
	}
}

// TestStatsRandom runs random operations on a queue, on a clock that
// moves, and checks after each that the statistics say what a scan says,
// that every bucket counts its items (Check), that the counters balance
// the items, and that every lease ends once: acked, released, expired, or
// still held.
func TestStatsRandom(t *testing.T) {
	t.Parallel()
	for _, kind := range []queues.Kind{queues.FIFO, queues.Priority} {
		for seed := uint64(1); seed <= 4; seed++ {
			t.Run(fmt.Sprintf("%v/%d", kind, seed), func(t *testing.T) {
				t.Parallel()
				statsWalk(t, kind, seed, 400)
			})
		}
	}
}

func statsWalk(t *testing.T, kind queues.Kind, seed uint64, steps int) {
	db, q, clock := setupClock(t, kind, "cpu")
	dead := queues.New(tuple.Tuple{"dead", t.Name()}.Pack(), queues.FIFO, "cpu").WithOptions(queues.Options{Clock: clock.Now})
	r := rand.New(rand.NewPCG(seed, 7))
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error { q.StartStats(tr); return nil }))
	var ids []int64
	// The lease ends the statistics do not see: an ack, or a removal, of
	// an item still held.
	heldEnds, balanced := int64(0), true
	pick := func() (queues.Item, bool) {
		if len(ids) == 0 {
			return queues.Item{}, false
		}
		var it queues.Item
		var ok bool
		require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
			var err error
			it, ok, err = q.Get(tr, ids[r.IntN(len(ids))])
			return err
		}))
		return it, ok
	}
	tx := func(fn func(tr kv.Transaction) error) {
		require.NoError(t, db.Transact(bg, fn))
	}
	for step := range steps {
		op := r.IntN(12)
		switch op {
		case 0, 1: // push, some delayed
			it := queues.Item{ID: queues.NewID(), Priority: r.Int64N(3), Resources: []int64{r.Int64N(4)}, Value: []byte("v")}
			if r.IntN(3) == 0 {
				it.VisibleAt = clock.Now().Add(time.Duration(r.Int64N(3000)) * time.Second)
			}
			tx(func(tr kv.Transaction) error { return q.Push(tr, it) })
			ids = append(ids, it.ID)
		case 2: // pop some, and put some of them back
			var items []queues.Item
			tx(func(tr kv.Transaction) error {
				var err error
				if items, err = q.PopN(tr, queues.Order(r.IntN(2)), 1+r.IntN(3)); err != nil {
					return err
				}
				q.AddStat(tr, queues.StatPopped, int64(len(items)))
				return nil
			})
			if len(items) > 0 && r.IntN(3) == 0 {
				tx(func(tr kv.Transaction) error { _, err := q.PutBack(tr, queues.Token{}, items[:1]); return err })
			}
		case 3: // a fit pop
			tx(func(tr kv.Transaction) error {
				_, ok, err := q.PopFit(tr, queues.Min, []int64{r.Int64N(4)})
				if ok {
					q.AddStat(tr, queues.StatPopped, 1)
				}
				return err
			})
		case 4, 5: // leases, some dying
			tx(func(tr kv.Transaction) error {
				_, err := q.Lease(tr, queues.LeaseRequest{Order: queues.Order(r.IntN(2)), N: 1 + r.IntN(2), For: time.Duration(1+r.Int64N(2000)) * time.Second,
					MaxAttempts: 3, Dead: func(it queues.Item) error {
						_, err := dead.PushAll(tr, queues.Token{}, []queues.Item{{ID: it.ID, Resources: it.Resources, Value: it.Value}})
						return err
					}})
				return err
			})
		case 6: // an ack by the holder
			if it, ok := pick(); ok && it.Lease != 0 {
				tx(func(tr kv.Transaction) error {
					cur, _, err := q.Get(tr, it.ID)
					if err != nil {
						return err
					}
					ok, err := q.Ack(tr, it.ID, it.Lease)
					if ok {
						q.AddStat(tr, queues.StatAcked, 1)
						if cur.Held {
							heldEnds++ // no retry: the database runs no faults
						}
					}
					return err
				})
			}
		case 7: // a heartbeat or a release
			if it, ok := pick(); ok && it.Lease != 0 {
				tx(func(tr kv.Transaction) error {
					var err error
					if r.IntN(2) == 0 {
						_, err = q.Extend(tr, it.ID, it.Lease, time.Duration(1+r.Int64N(2000))*time.Second)
					} else {
						_, err = q.Release(tr, it.ID, it.Lease, time.Duration(r.Int64N(3))*time.Minute)
					}
					return err
				})
			}
		case 8: // a visible time set by id, past or future
			if it, ok := pick(); ok {
				at := clock.Now().Add(time.Duration(r.Int64N(4000)-1000) * time.Second)
				tx(func(tr kv.Transaction) error { _, err := q.SetVisibleAt(tr, it.ID, at); return err })
			}
		case 9: // a removal, or a move to another priority
			if it, ok := pick(); ok {
				tx(func(tr kv.Transaction) error {
					if kind == queues.Priority && r.IntN(2) == 0 {
						_, err := q.Move(tr, it.ID, r.Int64N(3))
						return err
					}
					cur, ok, err := q.Remove(tr, it.ID)
					if ok {
						q.AddStat(tr, queues.StatDeleted, 1)
						if cur.Held {
							heldEnds++
						}
					}
					return err
				})
			}
		case 10: // a lease by id
			if it, ok := pick(); ok {
				tx(func(tr kv.Transaction) error {
					_, err := q.Lease(tr, queues.LeaseRequest{IDs: []int64{it.ID}, For: time.Minute})
					return err
				})
			}
		case 11: // empty the queue, now and then
			if r.IntN(20) == 0 {
				tx(func(tr kv.Transaction) error {
					n, err := q.Count(tr)
					q.ClearItems(tr)
					q.AddStat(tr, queues.StatDeleted, n)
					return err
				})
				balanced = false // from here on, the leases' balance is not kept
			}
		}
		clock.Advance(time.Duration(r.Int64N(60_000)) * time.Millisecond)
		msg := fmt.Sprintf("step %d (op %d)", step, op)
		s := requireStats(t, db, q, clock.Now(), msg)
		require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error { return q.Check(tr) }), msg)
		c := s.Counter
		require.Equal(t, s.Items, c(queues.StatPushed)+c(queues.StatReturned)-c(queues.StatPopped)-c(queues.StatAcked)-c(queues.StatDeleted)-c(queues.StatDeadLettered),
			"%s: the counters balance the items", msg)
		if balanced {
			held := int64(0)
			require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
				return q.Scan(tr, queues.Min, func(it queues.Item) (bool, error) {
					if it.Held {
						held++
					}
					return true, nil
				})
			}))
			require.Equal(t, c(queues.StatLeased), c(queues.StatReleased)+c(queues.StatExpired)+heldEnds+held,
				"%s: each lease ended once, or is held", msg)
		}
		ds := stats(t, db, dead, clock.Now())
		require.Equal(t, c(queues.StatDeadLettered), ds.Counter(queues.StatPushed), msg)
	}
}

// TestMigrateStats: a queue an earlier version wrote (items without
// pushed_at, no counts) has inexact statistics until MigrateStats, in
// batches, stamps and counts every item, while pushes, pops, leases and
// releases go on around it, and two migrations run at once; then a scan
// agrees with them.
func TestMigrateStats(t *testing.T) {
	t.Parallel()
	for _, kind := range []queues.Kind{queues.FIFO, queues.Priority} {
		t.Run(kind.String(), func(t *testing.T) {
			t.Parallel()
			db, q, clock := setupClock(t, kind)
			for i := range 60 {
				it := queues.Item{ID: queues.NewID(), Priority: int64(i % 3), Value: []byte("old")}
				if i%4 == 0 {
					it.VisibleAt = clock.Now().Add(time.Duration(i) * time.Minute)
				}
				require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error { return q.Push(tr, it) }))
			}
			lease(t, db, q, queues.LeaseRequest{N: 10, For: time.Hour})
			require.NoError(t, db.Transact(bg, q.Downgrade))
			s := stats(t, db, q, clock.Now())
			require.True(t, s.Since.IsZero(), "not exact")
			require.Equal(t, int64(60), s.Items)
			require.True(t, s.VisibleSince.IsZero())

			migrate := func() {
				for {
					var done bool
					require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
						var err error
						done, err = q.MigrateStats(tr, 7)
						return err
					}))
					if done {
						return
					}
				}
			}
			var wg sync.WaitGroup
			wg.Go(migrate)
			wg.Go(migrate)
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(kind), 1))
				for range 40 {
					switch r.IntN(4) {
					case 0:
						push(t, db, q, r.Int64N(3), "new")
					case 1:
						pop(t, db, q, queues.Min)
					case 2:
						lease(t, db, q, queues.LeaseRequest{N: 2, Order: queues.Max, For: time.Minute})
					case 3:
						clock.Advance(5 * time.Minute) // some delays and leases end
					}
				}
			})
			wg.Wait()
			require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error { return q.Check(tr) }))
			requireStats(t, db, q, clock.Now(), "migrated")
			require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
				return q.Scan(tr, queues.Min, func(it queues.Item) (bool, error) {
					require.False(t, it.PushedAt.IsZero(), "item %d stamped", it.ID)
					return true, nil
				})
			}))
			for _, d := range []time.Duration{time.Minute, time.Hour, 24 * time.Hour} {
				requireStats(t, db, q, clock.Now().Add(d), fmt.Sprintf("migrated, %v later", d))
			}
		})
	}
}
