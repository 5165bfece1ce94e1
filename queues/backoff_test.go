package queues_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/queues"
)

// TestLeaseBackoff: a lease with a Backoff hides each item until its
// lease's end plus the item's backoff (given its new attempts), so that an
// item whose lease ends unacked comes back after it; the wake signal
// follows the soonest of them.
func TestLeaseBackoff(t *testing.T) {
	t.Parallel()
	db, q, clock := setupClock(t, queues.FIFO)
	push(t, db, q, 0, "a")
	push(t, db, q, 0, "b")
	backoff := func(it queues.Item) time.Duration { return time.Duration(it.Attempts) * 10 * time.Second }
	start := clock.Now()
	got := lease(t, db, q, queues.LeaseRequest{N: 1, For: time.Minute, Backoff: backoff})
	require.Equal(t, []string{"a"}, values(got))
	require.True(t, start.Add(70*time.Second).Equal(got[0].VisibleAt), "lease end + backoff(1)")

	clock.Advance(61 * time.Second) // the lease ended, its backoff did not
	got = lease(t, db, q, queues.LeaseRequest{N: 2, For: time.Minute, Backoff: backoff})
	require.Equal(t, []string{"b"}, values(got))
	clock.Advance(9 * time.Second)
	got = lease(t, db, q, queues.LeaseRequest{N: 2, For: time.Minute, Backoff: backoff})
	require.Equal(t, []string{"a"}, values(got), "back once the backoff ended")
	require.Equal(t, int64(2), got[0].Attempts)
	require.True(t, clock.Now().Add(80*time.Second).Equal(got[0].VisibleAt), "lease end + backoff(2)")

	// A backoff that would end after the last time an item can stay
	// hidden is refused, as such a lease is.
	clock.Advance(time.Hour)
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		_, err := q.Lease(tr, queues.LeaseRequest{N: 1, For: queues.MaxVisibleAt.Sub(clock.Now()) - 2*time.Hour, Backoff: func(queues.Item) time.Duration { return 1000 * time.Hour }})
		require.ErrorIs(t, err, queues.ErrInvalidItem)
		require.ErrorContains(t, err, "a lease and its backoff")
		return nil
	}))
}

// TestSetVisibleWith: one read of the item; f decides the time and value,
// or leaves the item alone; a value rewritten in place keeps the item's
// place and visibility.
func TestSetVisibleWith(t *testing.T) {
	t.Parallel()
	db, q, clock := setupClock(t, queues.Priority)
	push(t, db, q, 1, "a")
	push(t, db, q, 1, "b")
	a := lease(t, db, q, queues.LeaseRequest{N: 1, For: time.Minute})[0]
	set := func(id int64, f func(queues.Item) (time.Time, []byte, bool, error)) bool {
		var ok bool
		require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
			var err error
			ok, err = q.SetVisibleWith(tr, id, f)
			return err
		}))
		return ok
	}
	require.False(t, set(a.ID, func(it queues.Item) (time.Time, []byte, bool, error) {
		return time.Time{}, nil, it.Lease == a.Lease+1, nil
	}), "declined")
	require.False(t, set(queues.NewID(), func(queues.Item) (time.Time, []byte, bool, error) {
		t.Fatal("no item: f is not called")
		return time.Time{}, nil, false, nil
	}))
	// The value only, at the same time: still leased.
	require.True(t, set(a.ID, func(it queues.Item) (time.Time, []byte, bool, error) {
		return it.VisibleAt, []byte("a2"), true, nil
	}))
	require.Equal(t, []string{"b"}, values(lease(t, db, q, queues.LeaseRequest{N: 2, For: time.Minute})))
	// Visible now: back at its place, with its new value.
	require.True(t, set(a.ID, func(queues.Item) (time.Time, []byte, bool, error) { return clock.Now(), nil, true, nil }))
	require.Equal(t, []string{"a2", "b"}, scanAll(t, db, q, queues.Min))
	// A time no item can have is refused.
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		_, err := q.SetVisibleWith(tr, a.ID, func(queues.Item) (time.Time, []byte, bool, error) {
			return queues.MaxVisibleAt.Add(1), nil, true, nil
		})
		require.ErrorIs(t, err, queues.ErrInvalidItem)
		return nil
	}))
}
