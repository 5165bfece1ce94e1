package queues_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/queues"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// A statement's independent reads go out together (one round trip on
// FoundationDB), some of them before it knows it needs them: a pop's head
// before promote's answer, a Max-order pop's remembered priority, a push's
// id and directory checks. Those are snapshot reads, with their read
// conflicts added once they turn out to be the reads the statement made.
// These tests pin that: a read that was not needed conflicts with nothing,
// and one that was conflicts as it did when made serializably.

// twin returns another Queue value on q's keys (setup's), which shares no
// remembered state with q.
func twin(t *testing.T, kind queues.Kind, resources ...string) *queues.Queue {
	return queues.New(tuple.Tuple{"q", t.Name()}.Pack(), kind, resources...)
}

// begin starts a transaction that the test commits or cancels.
func begin(t *testing.T, db kv.Database) kv.Transaction {
	t.Helper()
	tr, err := db.CreateTransaction(bg)
	require.NoError(t, err)
	t.Cleanup(tr.Cancel)
	return tr
}

// TestPopWrongGuessConflictsWithNothing: a Max-order pop reads the first
// key of the highest priority it found last time together with the last
// key; when the highest priority has changed, that read was not one the
// pop needed, and a push into that priority does not conflict with it.
func TestPopWrongGuessConflictsWithNothing(t *testing.T) {
	t.Parallel()
	db, q := setup(t, queues.Priority)
	push(t, db, q, 3, "three")
	v, ok := pop(t, db, q, queues.Max) // q remembers priority 3
	require.True(t, ok)
	require.Equal(t, "three", v)
	push(t, db, q, 9, "nine")

	popper := begin(t, db)
	it, ok, err := q.Pop(popper, queues.Max) // guesses 3: wrong
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "nine", string(it.Value))
	push(t, db, twin(t, queues.Priority), 3, "another three")
	require.NoError(t, popper.Commit())

	v, ok = pop(t, db, q, queues.Max) // guesses 9: wrong again
	require.True(t, ok)
	require.Equal(t, "another three", v)
}

// TestPopRightGuessConflicts: when the remembered priority is the highest,
// the pop's reads are the ones it made without a guess, and conflict as
// they did: with a pop of the same head, and with a push of a higher
// priority.
func TestPopRightGuessConflicts(t *testing.T) {
	t.Parallel()
	for _, other := range []string{"pop", "push"} {
		t.Run(other, func(t *testing.T) {
			t.Parallel()
			db, q := setup(t, queues.Priority)
			push(t, db, q, 9, "nine")
			push(t, db, q, 9, "nine again")
			v, _ := pop(t, db, q, queues.Max) // q remembers priority 9
			require.Equal(t, "nine", v)

			popper := begin(t, db)
			it, ok, err := q.Pop(popper, queues.Max) // guesses 9: right
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, "nine again", string(it.Value))
			if other == "pop" {
				v, _ = pop(t, db, twin(t, queues.Priority), queues.Max)
				require.Equal(t, "nine again", v)
			} else {
				push(t, db, q, 10, "ten")
			}
			require.ErrorIs(t, popper.Commit(), kv.ErrNotCommitted)
		})
	}
}

// TestPopAheadOfPromote: a pop reads the head while promote's read of the
// due index is in flight; when promote then moves an item that comes
// first, the pop reads the head again and takes that one, and the first
// head it read was not a read it made: removing it conflicts with nothing.
func TestPopAheadOfPromote(t *testing.T) {
	t.Parallel()
	for _, kind := range []queues.Kind{queues.FIFO, queues.Priority} {
		t.Run(kind.String(), func(t *testing.T) {
			t.Parallel()
			db, q, c := setupClock(t, kind)
			push(t, db, q, 5, "a")
			b := push(t, db, q, 5, "b")
			leased := lease(t, db, q, queues.LeaseRequest{Order: queues.Max, N: 1, For: time.Minute})
			require.Len(t, leased, 1)
			require.Equal(t, "a", string(leased[0].Value))
			c.Advance(2 * time.Minute) // a is due: it comes back before b

			// Min order: in Max order the read of the highest priority
			// (the last key, b's) conflicts with b's removal anyway.
			popper := begin(t, db)
			it, ok, err := q.Pop(popper, queues.Min)
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, "a", string(it.Value))
			require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
				_, ok, err := q.Remove(tr, b)
				require.True(t, ok)
				return err
			}))
			require.NoError(t, popper.Commit())
			require.Zero(t, count(t, db, q))
		})
	}
}

// TestLeaseAheadOfPromote is TestPopAheadOfPromote for a lease, which also
// learns the earliest due time left (for the push signal) from the same
// round.
func TestLeaseAheadOfPromote(t *testing.T) {
	t.Parallel()
	db, q, c := setupClock(t, queues.FIFO)
	push(t, db, q, 0, "a")
	push(t, db, q, 0, "b")
	push(t, db, q, 0, "c")
	require.Len(t, lease(t, db, q, queues.LeaseRequest{N: 1, For: time.Minute}), 1)      // a
	require.Len(t, lease(t, db, q, queues.LeaseRequest{N: 1, For: 10 * time.Minute}), 1) // b
	c.Advance(2 * time.Minute)                                                           // a is due, b is not

	got := lease(t, db, q, queues.LeaseRequest{N: 1, For: 20 * time.Minute})
	require.Len(t, got, 1)
	require.Equal(t, "a", string(got[0].Value))
	// b, due in 8 minutes, is the earliest due time left: a lease that ends
	// sooner wakes the waiting consumers, one that ends later (the one
	// above, of a) did not.
	signal := func() []byte {
		var v []byte
		require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
			var err error
			v, err = tr.Get(append(tuple.Tuple{"q", t.Name()}.Pack(), tuple.Tuple{int64(11)}.Pack()...))
			return err
		}))
		return v
	}
	s0 := signal()
	require.Len(t, lease(t, db, q, queues.LeaseRequest{N: 1, For: 20 * time.Minute}), 1) // c, after b
	require.Equal(t, s0, signal())
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		_, err := q.SetVisibleAt(tr, got[0].ID, time.Time{})
		return err
	}))
	s1 := signal()
	require.NotEqual(t, s0, s1)
	got = lease(t, db, q, queues.LeaseRequest{N: 1, For: time.Minute}) // a again, before b
	require.Equal(t, "a", string(got[0].Value))
	require.NotEqual(t, s1, signal())
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
// invisible items too; past a few priorities it finds them by a map. (Its
// ids go down: items with consecutive ids would make a run, whose seqs
// follow its own rule: see TestRunSeqs.)
func TestPushAllSeqsOfManyPriorities(t *testing.T) {
	t.Parallel()
	db, q, c := setupClock(t, queues.Priority)
	later := c.Now().Add(time.Hour)
	const prios = 12
	for round := range 3 {
		var items []queues.Item
		for i := range 2 * prios {
			p := int64(i % prios)
			it := queues.Item{ID: int64(1000*(round+1) - i), Priority: p, Value: []byte(fmt.Sprint(round, i))}
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
	got := seqsByPriority(t, db, q)
	for p := range int64(prios) {
		require.Equal(t, []int64{1, 2, 3, 4, 5, 6}, got[p], "priority %d", p)
	}
}
