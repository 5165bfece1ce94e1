package queues_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/queues"
	"github.com/fdbqueue/fdbqueue/tuple"
)

func popN(t testing.TB, db kv.Database, q *queues.Queue, order queues.Order, limits []int64, n int) []queues.Item {
	t.Helper()
	var items []queues.Item
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		var err error
		if limits != nil {
			items, err = q.PopFitN(tr, order, limits, n)
		} else {
			items, err = q.PopN(tr, order, n)
		}
		return err
	}))
	return items
}

func putBack(t testing.TB, db kv.Database, q *queues.Queue, token queues.Token, items []queues.Item) bool {
	t.Helper()
	var applied bool
	require.NoError(t, queues.Once(bg, db, token, func(tr kv.Transaction, tok queues.Token) error {
		var err error
		applied, err = q.PutBack(tr, tok, items)
		return err
	}))
	return applied
}

// TestPutBackAtItsPlace: items a pop removed and PutBack returned are
// where they were: ahead of the items pushed after them, behind those
// before them, with the same id, resources, value, visible_at, lease and
// attempts, in the fit index as before (Check, at cleanup), and counted.
func TestPutBackAtItsPlace(t *testing.T) {
	t.Parallel()
	for _, kind := range []queues.Kind{queues.FIFO, queues.Priority} {
		t.Run(kind.String(), func(t *testing.T) {
			t.Parallel()
			db, q, clock := setupClock(t, kind, "cpu")
			for i, v := range []string{"a", "b", "c", "d"} {
				push(t, db, q, 1, v, int64(1+i))
			}
			push(t, db, q, 0, "z", 1) // behind them in Max order (priority queues)
			// a, leased once and released: visible, with a lease and an attempt.
			a := lease(t, db, q, queues.LeaseRequest{Order: queues.Max, N: 1, For: time.Minute})[0]
			require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
				_, err := q.Release(tr, a.ID, a.Lease, 0)
				return err
			}))
			clock.Advance(time.Second)

			popped := popN(t, db, q, queues.Max, []int64{3}, 3)
			require.Equal(t, []string{"a", "b", "c"}, values(popped))
			require.Equal(t, int64(1), popped[0].Attempts)
			require.Equal(t, a.Lease, popped[0].Lease)
			push(t, db, q, 1, "e", 1) // after them
			require.Equal(t, int64(3), count(t, db, q))

			require.True(t, putBack(t, db, q, queues.Token{}, popped[1:]))
			require.True(t, putBack(t, db, q, queues.Token{}, popped[:1]))
			require.Equal(t, int64(6), count(t, db, q))
			want := []string{"a", "b", "c", "d", "e", "z"}
			if kind == queues.FIFO {
				want = []string{"a", "b", "c", "d", "z", "e"}
			}
			require.Equal(t, want, scanAll(t, db, q, queues.Max))
			require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
				for _, it := range popped {
					got, ok, err := q.Get(tr, it.ID)
					require.NoError(t, err)
					require.True(t, ok)
					require.Equal(t, it, got, "item %s as it was popped", it.Value)
				}
				return nil
			}))
			// The fit index has them back: a fit pop finds them in order.
			require.Equal(t, []string{"a", "b"}, values(popN(t, db, q, queues.Max, []int64{2}, 2)))
			require.Equal(t, []string{"c"}, values(popN(t, db, q, queues.Max, []int64{3}, 1)))
		})
	}
}

// TestPutBackOnce: a put-back with a token applies once, however often it
// runs; without a token an item already queued is ErrDuplicateID. An item
// without a seq goes back at the head of its priority.
func TestPutBackOnce(t *testing.T) {
	t.Parallel()
	db, q := setup(t, queues.Priority, "cpu")
	for _, v := range []string{"a", "b", "c"} {
		push(t, db, q, 1, v, 1)
	}
	popped := popN(t, db, q, queues.Min, nil, 2)
	token := newToken()
	require.True(t, putBack(t, db, q, token, popped[1:]))
	token.Unsure = true // as a retry after commit_unknown_result
	require.False(t, putBack(t, db, q, token, popped[1:]), "the token's receipt: applied already")
	require.Equal(t, int64(2), count(t, db, q))
	require.ErrorIs(t, db.Transact(bg, func(tr kv.Transaction) error {
		_, err := q.PutBack(tr, queues.Token{}, popped[1:])
		return err
	}), queues.ErrDuplicateID)

	noSeq := popped[0]
	noSeq.Seq = 0
	require.True(t, putBack(t, db, q, queues.Token{}, []queues.Item{noSeq}))
	require.Equal(t, []string{"a", "b", "c"}, scanAll(t, db, q, queues.Min))
}

// TestPutBackExactlyOnceUnderFaults: pops that keep receipts, and
// put-backs of some of their items, under commits that fail with
// not_committed and commit_unknown_result (applied or not) and are run
// again: every item is taken once in the end, none lost, none twice, and
// in queue order, as the items put back (from a pop's receipt, when its
// first attempt was applied) are at their places again.
func TestPutBackExactlyOnceUnderFaults(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{Faults: &embedded.Faults{Seed: 9, Conflict: 0.1, UnknownApplied: 0.25, UnknownNotApplied: 0.1}})
	t.Cleanup(func() { _ = db.Close() })
	q := queues.New(tuple.Tuple{"q", t.Name()}.Pack(), queues.Priority, "cpu")
	const total = 150
	var want []string // queue order: Max priority first, then pushes' order
	for prio := 2; prio >= 0; prio-- {
		for i := prio; i < total; i += 3 {
			want = append(want, fmt.Sprint(i))
		}
	}
	// Ids run against push order, so that an item put back at a place
	// other than its own (ordered by id there) comes out of order.
	base := queues.NewID()
	for i := range total {
		it := queues.Item{ID: base + total - int64(i), Priority: int64(i % 3), Resources: []int64{int64(i % 4)}, Value: []byte(fmt.Sprint(i))}
		require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error { return q.Push(tr, it) }))
	}
	var taken []string
	for round := 0; len(taken) < total; round++ {
		var got []queues.Item
		require.NoError(t, queues.Once(bg, db, newToken(), func(tr kv.Transaction, token queues.Token) error {
			if items, ok, err := q.Receipt(tr, token); err != nil || ok {
				got = items
				return err
			}
			items, err := q.PopFitN(tr, queues.Max, []int64{3}, 3)
			if err != nil {
				return err
			}
			got = items
			return q.RecordReceipt(tr, token, items)
		}))
		require.NotEmpty(t, got, "round %d: %d taken", round, len(taken))
		// Every other round keeps the first item and puts the others back.
		keep := got
		if round%2 == 0 {
			keep = got[:1]
			putBack(t, db, q, newToken(), got[1:])
		}
		taken = append(taken, values(keep)...)
	}
	require.Equal(t, want, taken, "each item taken once, in queue order")
	require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
		n, err := q.Count(tr)
		require.Zero(t, n, "items put back twice")
		return errors.Join(err, q.Check(tr))
	}))
}

// TestSettlePop: a pop given up after a commit of unknown outcome is
// settled: if it was applied, its items go back to their places, once; if
// not, an attempt of it still in flight (it read the receipt before the
// settling) conflicts rather than landing later. Either way it took
// nothing.
func TestSettlePop(t *testing.T) {
	t.Parallel()
	db, q := setup(t, queues.Priority, "cpu")
	for _, v := range []string{"a", "b", "c"} {
		push(t, db, q, 1, v, 1)
	}
	settle := func(token, putBack queues.Token) bool {
		var applied bool
		require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
			var err error
			applied, err = q.SettlePop(tr, token, putBack)
			return err
		}))
		return applied
	}
	popWithReceipt := func(tr kv.Transaction, token queues.Token) error {
		if _, done, err := q.Receipt(tr, token); err != nil || done {
			return err
		}
		items, err := q.PopN(tr, queues.Min, 2)
		if err != nil {
			return err
		}
		return q.RecordReceipt(tr, token, items)
	}

	// Applied: the items go back, once.
	token, putBack := newToken(), newToken()
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error { return popWithReceipt(tr, token) }))
	require.Equal(t, []string{"c"}, scanAll(t, db, q, queues.Min))
	require.True(t, settle(token, putBack))
	putBack.Unsure = true // run again, as after commit_unknown_result
	require.True(t, settle(token, putBack), "run again: applied, and put back already")
	require.Equal(t, []string{"a", "b", "c"}, scanAll(t, db, q, queues.Min))

	// Not applied: an attempt in flight conflicts; a retry finds the pop
	// settled, and takes nothing.
	token = newToken()
	inFlight, err := db.CreateTransaction(bg)
	require.NoError(t, err)
	defer inFlight.Cancel()
	require.NoError(t, popWithReceipt(inFlight, token))
	require.False(t, settle(token, newToken()))
	require.True(t, kv.IsRetryableNotCommitted(inFlight.Commit()), "the attempt in flight conflicts, though it read no receipt")
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		retry := token
		retry.Unsure = true
		items, done, err := q.Receipt(tr, retry)
		require.True(t, done)
		require.Empty(t, items)
		return err
	}))
	require.False(t, settle(token, newToken()))
	require.Equal(t, []string{"a", "b", "c"}, scanAll(t, db, q, queues.Min))
}

// newToken makes an operation's token, as exec does before its first
// attempt.
func newToken() queues.Token { return queues.Token{ID: queues.NewID(), At: time.Now()} }
