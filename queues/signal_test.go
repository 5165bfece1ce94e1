package queues_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/queues"
)

// armed runs fn (an empty pop, say) and WatchSignal in one transaction and
// commits it: what a waiting consumer does.
func armed(t *testing.T, db kv.Database, q *queues.Queue, fn func(tr kv.Transaction) error) kv.Watch {
	t.Helper()
	var w kv.Watch
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		if fn != nil {
			if err := fn(tr); err != nil {
				return err
			}
		}
		var err error
		w, err = q.WatchSignal(tr)
		return err
	}))
	t.Cleanup(w.Cancel)
	return w
}

// fired reports whether w fired. The embedded engine fires a watch inside
// the commit that changes its key, so once Transact returned it has fired
// or it will not.
func fired(t *testing.T, w kv.Watch) bool {
	t.Helper()
	select {
	case <-w.Done():
		require.NoError(t, w.Err())
		return true
	default:
		return false
	}
}

// TestWatchSignal: a push fires the watch of a consumer that found nothing;
// a pop, a DELETE (ClearItems) and a transaction that writes nothing to the
// queue do not; dropping the queue (Clear) does, also when nothing was ever
// pushed to it.
func TestWatchSignal(t *testing.T) {
	t.Parallel()
	for _, kind := range []queues.Kind{queues.FIFO, queues.Priority} {
		t.Run(kind.String(), func(t *testing.T) {
			t.Parallel()
			db, q := setup(t, kind, "cpu")
			emptyPop := func(tr kv.Transaction) error {
				_, found, err := q.Pop(tr, queues.Min)
				require.False(t, found)
				return err
			}

			// Never pushed to: dropping the queue still ends the wait.
			w := armed(t, db, q, emptyPop)
			require.False(t, fired(t, w))
			require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error { q.Clear(tr); return nil }))
			require.True(t, fired(t, w), "Clear of a queue never pushed to")

			w = armed(t, db, q, emptyPop)
			push(t, db, q, 1, "a", 1)
			require.True(t, fired(t, w), "a push")

			// A pop, ClearItems and Push's own markers leave it alone.
			w = armed(t, db, q, nil)
			_, ok := pop(t, db, q, queues.Min)
			require.True(t, ok)
			push(t, db, q, 1, "b", 1)
			require.True(t, fired(t, w))
			w = armed(t, db, q, nil)
			_, ok = pop(t, db, q, queues.Min)
			require.True(t, ok)
			require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error { q.ClearItems(tr); return nil }))
			require.False(t, fired(t, w), "a pop or a DELETE is no push")

			// PushAll: one operation, one wake-up; an empty PushAll none.
			require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
				_, err := q.PushAll(tr, queues.Token{}, nil)
				return err
			}))
			require.False(t, fired(t, w), "an empty PushAll")
			require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
				_, err := q.PushAll(tr, queues.Token{ID: 7, At: time.Now()}, []queues.Item{{ID: queues.NewID(), Resources: []int64{1}}, {ID: queues.NewID(), Resources: []int64{2}}})
				return err
			}))
			require.True(t, fired(t, w), "PushAll")

			// Dropped after pushes.
			w = armed(t, db, q, nil)
			require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error { q.Clear(tr); return nil }))
			require.True(t, fired(t, w), "Clear")
		})
	}
}

// TestWatchSignalNoGap: a push that commits after the empty pop read the
// queue, but before the pop's transaction commits and arms the watch, fires
// the watch at once: nothing slips between finding nothing and waiting.
func TestWatchSignalNoGap(t *testing.T) {
	t.Parallel()
	db, q := setup(t, queues.FIFO)
	tr, err := db.CreateTransaction(bg)
	require.NoError(t, err)
	defer tr.Cancel()
	_, found, err := q.Pop(tr, queues.Min)
	require.NoError(t, err)
	require.False(t, found)
	w, err := q.WatchSignal(tr)
	require.NoError(t, err)
	push(t, db, q, 0, "in between")
	// The empty pop wrote the signal key (the queue never had one): its
	// commit conflicts with the push, and its watch fails with the
	// commit's error; a retry finds the item. Once the key exists, the
	// empty pop writes nothing and commits, and its watch fires.
	err = tr.Commit()
	require.ErrorIs(t, err, kv.ErrNotCommitted)
	require.ErrorIs(t, w.Wait(bg), kv.ErrNotCommitted)

	_, ok := pop(t, db, q, queues.Min)
	require.True(t, ok)
	tr2, err := db.CreateTransaction(bg)
	require.NoError(t, err)
	defer tr2.Cancel()
	_, found, err = q.Pop(tr2, queues.Min)
	require.NoError(t, err)
	require.False(t, found)
	w, err = q.WatchSignal(tr2)
	require.NoError(t, err)
	push(t, db, q, 0, "in between again")
	require.NoError(t, tr2.Commit(), "an empty pop writes nothing: it commits")
	require.True(t, fired(t, w), "the push after its read version fires it at once")
	w.Cancel()
}
