package queues_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/queues"
)

// PushSome pushes the items its keep says, once the reads are in: only
// those count and are indexed; its receipt says which went in, and a retry
// after commit_unknown_result returns that without calling keep. An error
// from keep writes nothing.
func TestPushSome(t *testing.T) {
	t.Parallel()
	db, q := setup(t, queues.Priority, "cpu")
	items := []queues.Item{
		{ID: queues.NewID(), Priority: 1, Resources: []int64{1}, Value: []byte("a")},
		{ID: queues.NewID(), Priority: 1, Resources: []int64{100}, Value: []byte("skipped")},
		{ID: queues.NewID(), Priority: 2, Resources: []int64{3}, Value: []byte("c")},
	}
	keep := []bool{true, false, true}
	token := queues.Token{ID: queues.NewID(), At: time.Now()}
	calls := 0
	// pushSome runs PushSome under tok, keep counting its calls.
	pushSome := func(tok queues.Token) (pushed []bool, applied bool) {
		t.Helper()
		require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
			var err error
			pushed, applied, err = q.PushSome(tr, tok, items, func() ([]bool, error) {
				calls++
				return keep, nil
			})
			return err
		}))
		return pushed, applied
	}
	pushed, applied := pushSome(token)
	require.True(t, applied)
	require.Equal(t, keep, pushed)
	require.Equal(t, 1, calls)

	// A retry after commit_unknown_result finds the receipt.
	retry := token
	retry.Unsure = true
	pushed, applied = pushSome(retry)
	require.False(t, applied)
	require.Equal(t, keep, pushed)
	require.Equal(t, 1, calls, "keep is not called when the receipt is found")

	require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
		n, err := q.Count(tr)
		require.Equal(t, int64(2), n)
		return err
	}))
	// The item skipped is not there.
	_, ok := popFit(t, db, q, queues.Min, 100)
	require.True(t, ok)
	_, ok = popFit(t, db, q, queues.Min, 100)
	require.True(t, ok)
	_, ok = popFit(t, db, q, queues.Min, 100)
	require.False(t, ok)

	// keep's error ends the push: nothing written.
	boom := errors.New("boom")
	err := db.Transact(bg, func(tr kv.Transaction) error {
		_, _, err := q.PushSome(tr, queues.Token{}, items[:1], func() ([]bool, error) { return nil, boom })
		return err
	})
	require.ErrorIs(t, err, boom)
	_, ok = pop(t, db, q, queues.Min)
	require.False(t, ok)
}
