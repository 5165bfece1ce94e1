package queues_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/queues"
)

// claimCase is a queue holding a best row "a" and a next best "b", and a
// pop (or lease) that takes one row.
type claimCase struct {
	name  string
	kind  queues.Kind
	res   []string
	fill  func(t *testing.T, db kv.Database, q *queues.Queue)
	take1 func(tr kv.Transaction, q *queues.Queue) ([]queues.Item, error)
}

// misses pushes n rows of priority prio that fit no pop of the cases below
// ahead of the others, so that fit pops turn to the index.
func misses(t *testing.T, db kv.Database, q *queues.Queue, n int, prio int64) {
	t.Helper()
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		for range n {
			if err := q.Push(tr, queues.Item{ID: queues.NewID(), Priority: prio, Resources: []int64{64, 1 << 20}, Value: []byte("miss")}); err != nil {
				return err
			}
		}
		return nil
	}))
}

func one(it queues.Item, ok bool, err error) ([]queues.Item, error) {
	if !ok {
		return nil, err
	}
	return []queues.Item{it}, err
}

func claimCases() []claimCase {
	ab := func(res ...[]int64) func(*testing.T, kv.Database, *queues.Queue) {
		return func(t *testing.T, db kv.Database, q *queues.Queue) {
			push(t, db, q, 5, "a", res[0]...)
			push(t, db, q, 5, "b", res[1]...)
			push(t, db, q, 1, "c", res[1]...)
		}
	}
	withMisses := func(prio int64, fill func(*testing.T, kv.Database, *queues.Queue)) func(*testing.T, kv.Database, *queues.Queue) {
		return func(t *testing.T, db kv.Database, q *queues.Queue) {
			misses(t, db, q, 300, prio)
			fill(t, db, q)
		}
	}
	popFit := func(order queues.Order, limits ...int64) func(kv.Transaction, *queues.Queue) ([]queues.Item, error) {
		return func(tr kv.Transaction, q *queues.Queue) ([]queues.Item, error) {
			return one(q.PopFit(tr, order, limits))
		}
	}
	// a and b in cells of their own: a's cell holds only a claimed row,
	// which must not count as empty.
	apart := ab([]int64{1, 1}, []int64{2, 2})
	return []claimCase{
		{name: "pop fifo", kind: queues.FIFO, fill: ab(nil, nil),
			take1: func(tr kv.Transaction, q *queues.Queue) ([]queues.Item, error) { return one(q.Pop(tr, queues.Min)) }},
		{name: "pop max", kind: queues.Priority, fill: ab(nil, nil),
			take1: func(tr kv.Transaction, q *queues.Queue) ([]queues.Item, error) { return one(q.Pop(tr, queues.Max)) }},
		{name: "popN", kind: queues.Priority, fill: ab(nil, nil),
			take1: func(tr kv.Transaction, q *queues.Queue) ([]queues.Item, error) { return q.PopN(tr, queues.Max, 1) }},
		{name: "fit scan", kind: queues.Priority, res: []string{"cpu", "mem"}, fill: apart, take1: popFit(queues.Max, 4, 4)},
		{name: "fit index max", kind: queues.Priority, res: []string{"cpu", "mem"}, fill: withMisses(9, apart), take1: popFit(queues.Max, 4, 4)},
		{name: "fit index min", kind: queues.Priority, res: []string{"cpu", "mem"}, fill: withMisses(0, apart), take1: popFit(queues.Max, 4, 4)},
		{name: "fit index same cell", kind: queues.Priority, res: []string{"cpu", "mem"}, fill: withMisses(9, ab([]int64{1, 1}, []int64{1, 1})), take1: popFit(queues.Max, 4, 4)},
		// cpu 16 and 17 share a cell, which a limit of 16 straddles.
		{name: "fit straddling", kind: queues.Priority, res: []string{"cpu", "mem"}, fill: withMisses(9, ab([]int64{16, 1}, []int64{16, 1})), take1: popFit(queues.Max, 16, 4)},
		// mem 1024 and 1025 share a cell, which a limit of 1024 straddles
		// at its lower bound: the cell is resolved through its corner's
		// shape, whose claimed head must not hide the next row.
		{name: "fit straddling corner", kind: queues.Priority, res: []string{"cpu", "mem"}, fill: withMisses(9, ab([]int64{1, 1024}, []int64{1, 1024})), take1: popFit(queues.Max, 4, 1024)},
		{name: "fit straddling corner beside", kind: queues.Priority, res: []string{"cpu", "mem"}, fill: withMisses(9, func(t *testing.T, db kv.Database, q *queues.Queue) {
			push(t, db, q, 6, "too big", 1, 1025)
			ab([]int64{1, 1024}, []int64{1, 1024})(t, db, q)
		}), take1: popFit(queues.Max, 4, 1024)},
		{name: "fitN index", kind: queues.Priority, res: []string{"cpu", "mem"}, fill: withMisses(9, apart),
			take1: func(tr kv.Transaction, q *queues.Queue) ([]queues.Item, error) {
				return q.PopFitN(tr, queues.Max, []int64{4, 4}, 1)
			}},
		{name: "lease", kind: queues.Priority, fill: ab(nil, nil),
			take1: func(tr kv.Transaction, q *queues.Queue) ([]queues.Item, error) {
				return q.Lease(tr, queues.LeaseRequest{Order: queues.Max, N: 1, For: time.Hour})
			}},
		{name: "lease fit index", kind: queues.Priority, res: []string{"cpu", "mem"}, fill: withMisses(9, apart),
			take1: func(tr kv.Transaction, q *queues.Queue) ([]queues.Item, error) {
				return q.Lease(tr, queues.LeaseRequest{Order: queues.Max, Limits: []int64{4, 4}, N: 1, For: time.Hour})
			}},
	}
}

// TestClaimedRowIsPassedOver: two pops open at once in attempts of one
// Claims: the first takes the best row a and claims it, so the second takes
// the next, b, and both commit, whether the first commits or fails (the
// SKIP LOCKED relaxation); once the first failed, a is popped next.
// Without claims the second would take a too and conflict.
func TestClaimedRowIsPassedOver(t *testing.T) {
	t.Parallel()
	for _, c := range claimCases() {
		for _, firstCommits := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/first commits %v", c.name, firstCommits), func(t *testing.T) {
				t.Parallel()
				db, q := setup(t, c.kind, c.res...)
				c.fill(t, db, q)
				claims := queues.NewClaims()
				begin := func() *queues.Attempt {
					tr, err := db.CreateTransaction(bg)
					require.NoError(t, err)
					t.Cleanup(tr.Cancel)
					return claims.Begin(tr)
				}
				first, second := begin(), begin()
				got, err := c.take1(first, q)
				require.NoError(t, err)
				require.Equal(t, []string{"a"}, values(got))
				require.Equal(t, 1, claims.Held())

				got, err = c.take1(second, q)
				require.NoError(t, err)
				require.Equal(t, []string{"b"}, values(got), "the second pop passes over the claimed row")
				if firstCommits {
					require.NoError(t, first.Commit())
				} else {
					first.Cancel()
				}
				first.Release(firstCommits)
				require.NoError(t, second.Commit(), "passing over a claimed row adds no conflict on it")
				second.Release(true)
				require.Zero(t, claims.Held())

				var next []queues.Item
				require.NoError(t, claims.Transact(bg, db, func(tr kv.Transaction) (err error) {
					next, err = c.take1(tr, q)
					return err
				}))
				want := "c"
				if !firstCommits {
					want = "a"
				}
				require.Equal(t, []string{want}, values(next))
				require.Zero(t, claims.Held(), "Transact releases its claims")
			})
		}
	}
}

// TestClaimsOfOtherProcessesAreNotSeen: pops that share no Claims (two
// processes) take the same best row, and one of them conflicts: claims are
// only a hint, exactly-once comes from the read conflicts.
func TestClaimsOfOtherProcessesAreNotSeen(t *testing.T) {
	t.Parallel()
	for _, c := range claimCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db, q := setup(t, c.kind, c.res...)
			c.fill(t, db, q)
			var attempts []*queues.Attempt
			for range 2 {
				tr, err := db.CreateTransaction(bg)
				require.NoError(t, err)
				t.Cleanup(tr.Cancel)
				a := queues.NewClaims().Begin(tr)
				got, err := c.take1(a, q)
				require.NoError(t, err)
				require.Equal(t, []string{"a"}, values(got))
				attempts = append(attempts, a)
			}
			require.NoError(t, attempts[0].Commit())
			require.ErrorIs(t, attempts[1].Commit(), kv.ErrNotCommitted)
		})
	}
}

// TestClaimedRowStillConflictsWithPush: a pop that passed over a claimed
// row still conflicts with a push of a better row than the one it took.
func TestClaimedRowStillConflictsWithPush(t *testing.T) {
	t.Parallel()
	for _, c := range claimCases() {
		if c.kind == queues.FIFO {
			continue // a push goes to the tail: no better row
		}
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db, q := setup(t, c.kind, c.res...)
			c.fill(t, db, q)
			claims := queues.NewClaims()
			var attempts []*queues.Attempt
			for range 2 {
				tr, err := db.CreateTransaction(bg)
				require.NoError(t, err)
				t.Cleanup(tr.Cancel)
				attempts = append(attempts, claims.Begin(tr))
			}
			_, err := c.take1(attempts[0], q)
			require.NoError(t, err)
			got, err := c.take1(attempts[1], q)
			require.NoError(t, err)
			require.Equal(t, []string{"b"}, values(got))
			var res []int64
			if len(c.res) > 0 {
				res = []int64{1, 1}
			}
			push(t, db, q, 7, "better", res...)
			require.ErrorIs(t, attempts[1].Commit(), kv.ErrNotCommitted)
		})
	}
}

// TestClaimReleasedAfterFailedAttempt: the claims of an attempt that
// failed are dropped, so a later pop takes the row.
func TestClaimReleasedAfterFailedAttempt(t *testing.T) {
	t.Parallel()
	db, q := setup(t, queues.Priority)
	push(t, db, q, 1, "a")
	claims := queues.NewClaims()
	boom := fmt.Errorf("the caller's error")
	err := claims.Transact(bg, db, func(tr kv.Transaction) error {
		_, _, err := q.Pop(tr, queues.Min)
		require.NoError(t, err)
		require.Equal(t, 1, claims.Held())
		return boom
	})
	require.ErrorIs(t, err, boom)
	require.Zero(t, claims.Held())
	var it queues.Item
	var ok bool
	require.NoError(t, claims.Transact(bg, db, func(tr kv.Transaction) (err error) {
		it, ok, err = q.Pop(tr, queues.Min)
		return err
	}))
	require.True(t, ok)
	require.Equal(t, "a", string(it.Value))
}

// TestReadPastRowDoesNotConflict: a fit pop in an Attempt that read past
// a row that did not fit it does not conflict with the pop (of this
// process or another) that takes that row, nor with pops of the rows after
// what it took; it still conflicts with a pop of the row it took, and with
// a push of a better fitting row into what it read.
func TestReadPastRowDoesNotConflict(t *testing.T) {
	t.Parallel()
	for _, viaIndex := range []bool{false, true} {
		for _, sameProcess := range []bool{false, true} {
			t.Run(fmt.Sprintf("index %v/same process %v", viaIndex, sameProcess), func(t *testing.T) {
				t.Parallel()
				db, q := setup(t, queues.Priority, "cpu", "mem")
				if viaIndex {
					misses(t, db, q, 300, 9)
				}
				push(t, db, q, 5, "big", 8, 8)
				push(t, db, q, 5, "small", 1, 1)
				push(t, db, q, 5, "small2", 1, 1)
				push(t, db, q, 1, "later", 8, 8)
				small, big := queues.NewClaims(), queues.NewClaims()
				if sameProcess {
					big = small
				}
				begin := func(c *queues.Claims) *queues.Attempt {
					tr, err := db.CreateTransaction(bg)
					require.NoError(t, err)
					t.Cleanup(tr.Cancel)
					return c.Begin(tr)
				}
				a, b, c := begin(small), begin(big), begin(big)
				it, ok, err := q.PopFit(a, queues.Max, []int64{1, 1})
				require.NoError(t, err)
				require.True(t, ok)
				require.Equal(t, "small", string(it.Value))
				it, ok, err = q.PopFit(b, queues.Max, []int64{8, 8})
				require.NoError(t, err)
				require.True(t, ok)
				require.Equal(t, "big", string(it.Value))
				require.NoError(t, b.Commit(), "the pop that takes the row a read past")
				b.Release(true)
				// A third pop takes every row it can: in another process
				// than the first, small too, and one of the two conflicts.
				_, err = q.PopN(c, queues.Max, 1000)
				require.NoError(t, err)
				require.NoError(t, c.Commit(), "rows read and not taken leave no read conflict")
				c.Release(true)
				if sameProcess {
					require.NoError(t, a.Commit(), "rows read and not taken leave no read conflict")
				} else {
					require.ErrorIs(t, a.Commit(), kv.ErrNotCommitted, "two pops took small")
				}
				a.Release(sameProcess)
			})
		}
	}
	// A better fitting push where the pop read conflicts.
	db, q := setup(t, queues.Priority, "cpu", "mem")
	push(t, db, q, 5, "big", 8, 8)
	push(t, db, q, 5, "small", 1, 1)
	tr, err := db.CreateTransaction(bg)
	require.NoError(t, err)
	defer tr.Cancel()
	a := queues.NewClaims().Begin(tr)
	_, _, err = q.PopFit(a, queues.Max, []int64{1, 1})
	require.NoError(t, err)
	push(t, db, q, 6, "better", 1, 1)
	require.ErrorIs(t, a.Commit(), kv.ErrNotCommitted)
	a.Release(false)
}
