package queues_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/queues"
)

// A statement's independent reads go out together (one round trip on
// FoundationDB), some of them before it knows it needs them: a push's id
// and directory checks. Those are snapshot reads, with their read
// conflicts added once they turn out to be the reads the statement made.
// These tests pin that: a read that was not needed conflicts with nothing,
// and one that was conflicts as it did when made serializably.

// begin starts a transaction that the test commits or cancels.
func begin(t *testing.T, db kv.Database) kv.Transaction {
	t.Helper()
	tr, err := db.CreateTransaction(bg)
	require.NoError(t, err)
	t.Cleanup(tr.Cancel)
	return tr
}

// TestPushAllDuplicateRunReadsNoFurther: a push's id checks go out
// together, through the snapshot; their read conflicts are those of the
// checks made in turn: a run of ids that holds a queued one ends them, so
// the push does not conflict on the ids and directories it would have
// checked after.
func TestPushAllDuplicateRunReadsNoFurther(t *testing.T) {
	t.Parallel()
	db, q := setup(t, queues.Priority, "cpu")
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		_, err := q.PushAll(tr, queues.Token{}, []queues.Item{{ID: 2, Resources: []int64{1}}})
		return err
	}))

	pusher := begin(t, db)
	run := []queues.Item{{ID: 1, Resources: []int64{1}}, {ID: 2, Resources: []int64{1}}, {ID: 3, Resources: []int64{1}}, {ID: 4, Resources: []int64{1}}}
	lone := queues.Item{ID: 100, Resources: []int64{100}}
	_, err := q.PushAll(pusher, queues.Token{}, append(run, lone))
	var dup *queues.DuplicateIDError
	require.ErrorAs(t, err, &dup)
	require.Equal(t, int64(2), dup.ID)
	// The lone id and its cell, created by another push meanwhile.
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		_, err := q.PushAll(tr, queues.Token{}, []queues.Item{lone})
		return err
	}))
	pusher.Set([]byte("unrelated"), nil) // so that the commit checks its reads
	require.NoError(t, pusher.Commit())
}

// TestPushAllLoneDuplicateConflicts: a push whose run of ids is new reads
// its lone ids and directories, and conflicts on them as before.
func TestPushAllLoneDuplicateConflicts(t *testing.T) {
	t.Parallel()
	db, q := setup(t, queues.Priority, "cpu")
	pusher := begin(t, db)
	items := []queues.Item{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}, {ID: 100, Resources: []int64{100}}}
	for i := range items[:4] {
		items[i].Resources = []int64{1}
	}
	_, err := q.PushAll(pusher, queues.Token{}, items)
	require.NoError(t, err)
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		_, err := q.PushAll(tr, queues.Token{}, []queues.Item{{ID: 100, Resources: []int64{100}}})
		return err
	}))
	require.ErrorIs(t, pusher.Commit(), kv.ErrNotCommitted)
}

// TestPushAllSeqsOfManyPriorities: a push reads each priority's seq once,
// with those of every other priority, and counts on from there, past the
// invisible items too; past a few priorities it finds them by a map.
func TestPushAllSeqsOfManyPriorities(t *testing.T) {
	t.Parallel()
	db, q, c := setupClock(t, queues.Priority)
	later := c.Now().Add(time.Hour)
	const prios = 12
	for round := range 3 {
		var items []queues.Item
		for i := range 2 * prios {
			p := int64(i % prios)
			it := queues.Item{ID: queues.NewID(), Priority: p, Value: []byte(fmt.Sprint(round, i))}
			if round == 0 && p == 5 && i >= prios {
				it.VisibleAt = later // invisible, with the priority's last seq
			}
			items = append(items, it)
		}
		require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
			_, err := q.PushAll(tr, queues.Token{}, items)
			return err
		}))
	}
	got := map[int64][]int64{}
	require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
		return q.Scan(tr, queues.Min, func(it queues.Item) (bool, error) {
			got[it.Priority] = append(got[it.Priority], it.Seq)
			return true, nil
		})
	}))
	for p := range int64(prios) {
		require.Equal(t, []int64{1, 2, 3, 4, 5, 6}, got[p], "priority %d", p)
	}
}
