package queues_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/queues"
)

var idsKey = []byte("next-row-id")

// fillAll draws n calls' worth of ids of size each from every handle in
// hs at once, and returns them all, each call's ids checked consecutive.
func fillAll(t *testing.T, hs []*queues.IDs, calls, size int) []int64 {
	t.Helper()
	var mu sync.Mutex
	var all []int64
	var wg sync.WaitGroup
	for _, h := range hs {
		for range 4 {
			wg.Go(func() {
				for range calls {
					ids := make([]int64, size)
					if err := h.Fill(context.Background(), ids); err != nil {
						t.Error(err)
						return
					}
					for i := 1; i < len(ids); i++ {
						if ids[i] != ids[i-1]+1 {
							t.Errorf("one call's ids are not consecutive: %v", ids)
							return
						}
					}
					mu.Lock()
					all = append(all, ids...)
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	return all
}

func requireUnique(t *testing.T, ids []int64) {
	t.Helper()
	s := slices.Clone(ids)
	slices.Sort(s)
	for i := 1; i < len(s); i++ {
		require.NotEqual(t, s[i-1], s[i], "id handed out twice")
	}
	require.Positive(t, s[0])
}

// TestIDsUniqueAcrossHandles: three handles on one database (three
// processes' executors), four goroutines each, hand out ids no two of
// which are equal, and small: the blocks they reserved, not more.
func TestIDsUniqueAcrossHandles(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	hs := []*queues.IDs{queues.NewIDs(db, idsKey), queues.NewIDs(db, idsKey), queues.NewIDs(db, idsKey)}
	all := fillAll(t, hs, 200, 37)
	require.Len(t, all, 3*4*200*37)
	requireUnique(t, all)
	// Each handle's blocks double from 1,024 to 65,536: the ids stay
	// within a few times what was drawn.
	require.Less(t, slices.Max(all), int64(4*len(all)))
}

// TestIDsAfterUnknownResults: every reservation's commit is applied and
// reported as commit_unknown_result (1021); the retry recognises its own
// reservation and takes that block, where a reservation made anew would
// fail again, forever; no id is handed out twice.
func TestIDsAfterUnknownResults(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{Faults: &embedded.Faults{UnknownApplied: 1}})
	defer db.Close()
	hs := []*queues.IDs{queues.NewIDs(db, idsKey), queues.NewIDs(db, idsKey)}
	all := fillAll(t, hs, 50, 100)
	require.Len(t, all, 2*4*50*100)
	requireUnique(t, all)
}

// TestIDsAfterReopen: a file database's counter is in its data: the ids
// a handle draws after the database is opened again are above every id
// drawn before.
func TestIDsAfterReopen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	open := func() kv.Database {
		db, err := embedded.OpenFile(dir, embedded.FileConfig{})
		require.NoError(t, err)
		return db
	}
	db := open()
	before := fillAll(t, []*queues.IDs{queues.NewIDs(db, idsKey)}, 10, 100)
	require.NoError(t, db.Close())
	db = open()
	defer db.Close()
	after := fillAll(t, []*queues.IDs{queues.NewIDs(db, idsKey)}, 10, 100)
	require.Greater(t, slices.Min(after), slices.Max(before))
}

// TestIDsPast: Past drops the block in hand and makes the next ids go
// above its floor, for every handle's next block; a floor below the
// counter changes nothing but the block.
func TestIDsPast(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	a, b := queues.NewIDs(db, idsKey), queues.NewIDs(db, idsKey)
	ids := make([]int64, 3)
	require.NoError(t, a.Fill(bg, ids))
	require.Equal(t, []int64{1, 2, 3}, ids)
	require.NoError(t, a.Past(bg, 1_000_000))
	require.NoError(t, a.Fill(bg, ids))
	require.Equal(t, []int64{1_000_001, 1_000_002, 1_000_003}, ids)
	require.NoError(t, b.Fill(bg, ids))
	require.Greater(t, ids[0], int64(1_000_003))
	require.NoError(t, a.Past(bg, 5))
	require.NoError(t, a.Fill(bg, ids))
	require.Greater(t, ids[0], int64(1_000_003))
}

// TestIDsCorruptCounter: a counter that is not what IDs writes fails the
// reservation with ErrCorrupt, saying what it found, and hands out
// nothing.
func TestIDsCorruptCounter(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		tr.Set(idsKey, []byte("12345678"))
		return nil
	}))
	err := queues.NewIDs(db, idsKey).Fill(bg, make([]int64, 1))
	require.ErrorIs(t, err, queues.ErrCorrupt)
	require.ErrorContains(t, err, "the id counter holds 8 bytes, not 16")
	for _, next := range []int64{0, -5, queues.MaxAssignedID + 1} {
		require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
			tr.Set(idsKey, binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, uint64(next)), 7))
			return nil
		}))
		err = queues.NewIDs(db, idsKey).Fill(bg, make([]int64, 1))
		require.ErrorIs(t, err, queues.ErrCorrupt, "%d", next)
		require.ErrorContains(t, err, fmt.Sprintf("the id counter holds %d, not an id from 1 to", next))
	}
}

// TestIDsReservationErrorsAreNotTheStatements: a reservation whose
// commits all conflict gives up with its own loop's error, which its
// caller returns without the kv code: the caller's transaction neither
// conflicted nor may have committed.
func TestIDsReservationErrorsAreNotTheStatements(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{Faults: &embedded.Faults{Conflict: 1}, RetryLimit: 2})
	defer db.Close()
	err := queues.NewIDs(db, idsKey).Fill(bg, make([]int64, 1))
	require.Error(t, err)
	require.ErrorContains(t, err, "reserving row ids: ")
	require.False(t, kv.IsRetryable(err), "%v", err)
	require.False(t, kv.IsMaybeCommitted(err), "%v", err)
	ctx, cancel := context.WithCancel(bg)
	cancel()
	require.ErrorIs(t, queues.NewIDs(db, idsKey).Fill(ctx, make([]int64, 1)), context.Canceled)
}

// TestIDFloor: past an id found in a queue, the counter resumes above
// the queue's largest id below MaxAssignedID: above every id a restore
// gave, never up among the ids earlier versions drew.
func TestIDFloor(t *testing.T) {
	t.Parallel()
	db, q := setup(t, queues.FIFO)
	push := func(ids ...int64) {
		require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
			for _, id := range ids {
				if err := q.Push(tr, queues.Item{ID: id, Value: []byte("v")}); err != nil {
					return err
				}
			}
			return nil
		}))
	}
	floor := func(id int64) int64 {
		var f int64
		require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) (err error) {
			f, err = q.IDFloor(tr, id)
			return err
		}))
		return f
	}
	require.Equal(t, int64(9), floor(9), "an empty queue")
	push(5, 6, 7, 20)
	require.Equal(t, int64(20), floor(6))
	push(queues.MaxAssignedID, 1<<62+3)
	require.Equal(t, int64(20), floor(5))
	push(queues.MaxAssignedID - 1)
	require.Equal(t, int64(queues.MaxAssignedID-1), floor(5))
}

// TestIDsWaitGivesUp: a call waiting while another reserves a block gives
// up when its context ends, with the context's error.
func TestIDsWaitGivesUp(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	hold := make(chan struct{})
	slow := &holdingDB{Database: db, hold: hold, entered: make(chan struct{})}
	a := queues.NewIDs(slow, idsKey)
	first := make(chan error, 1)
	go func() { first <- a.Fill(bg, make([]int64, 1)) }()
	<-slow.entered
	ctx, cancel := context.WithTimeout(bg, 10*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, a.Fill(ctx, make([]int64, 1)), context.DeadlineExceeded)
	close(hold)
	require.NoError(t, <-first)
}

// holdingDB is a database whose first transaction waits for hold to
// close, once it has said so on entered.
type holdingDB struct {
	kv.Database
	hold    chan struct{}
	once    sync.Once
	entered chan struct{}
}

func (d *holdingDB) Transact(ctx context.Context, fn func(kv.Transaction) error) error {
	d.once.Do(func() {
		close(d.entered)
		<-d.hold
	})
	return d.Database.Transact(ctx, fn)
}
