package embedded

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// TestFileIOErrorFailsCleanly: a log write that fails surfaces from the
// commit that hit it (as commit_unknown_result: it may be on disk), later
// commits fail at once, reads go on, and the database reopens consistent.
func TestFileIOErrorFailsCleanly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	db, err := OpenFile(dir, FileConfig{})
	require.NoError(t, err)
	set := func(k string) error {
		return db.Transact(ctx, func(tr kv.Transaction) error {
			tr.Set([]byte(k), []byte("v"))
			return nil
		})
	}
	require.NoError(t, set("before"))
	// The disk goes away: the segment's descriptors are closed (also
	// the one its direct writes take, where there is one).
	db.s.log.seg.sys.close()
	require.NoError(t, db.s.log.seg.f.Close())

	err = set("during")
	require.ErrorIs(t, err, ErrFailed)
	require.True(t, kv.IsMaybeCommitted(err) || errors.Is(err, ErrFailed), "got %v", err)
	err = set("after")
	require.ErrorIs(t, err, ErrFailed)
	require.ErrorContains(t, err, "reopen")

	var v []byte
	require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		v, err = tr.Get([]byte("before"))
		return err
	}), "reads go on")
	require.Equal(t, "v", string(v))
	_ = db.Close()

	db, err = OpenFile(dir, FileConfig{})
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		for _, k := range []string{"during", "after"} {
			if v, err := tr.Get([]byte(k)); err != nil || v != nil {
				return errors.New(k + " must not be there")
			}
		}
		v, err = tr.Get([]byte("before"))
		return err
	}))
	require.Equal(t, "v", string(v))
	require.NoError(t, set("reopened"))
}

// TestFileFsyncErrorHidesTheGroup: when the log's fsync fails, the
// group's commits fail as maybe committed, and no reader ever sees them:
// not a new key, not a new value of a key, not a key they delete, by a
// point read or a range read. A lone commit, and a group of stageMin
// writes or more, was staged in the tree while the fsync ran (and stays
// there, never readable).
func TestFileFsyncErrorHidesTheGroup(t *testing.T) {
	t.Parallel()
	for _, filler := range []int{0, stageMin} {
		t.Run(fmt.Sprint("filler=", filler), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir := t.TempDir()
			db, err := OpenFile(dir, FileConfig{})
			require.NoError(t, err)
			require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
				tr.Set([]byte("changed"), []byte("old"))
				tr.Set([]byte("deleted"), []byte("old"))
				return nil
			}))
			db.s.log.syncFault = func() error { return errors.New("injected fsync error") }
			err = db.Transact(ctx, func(tr kv.Transaction) error {
				tr.Set([]byte("changed"), []byte("new"))
				tr.Clear([]byte("deleted"))
				tr.Set([]byte("added"), []byte("new"))
				setFiller(tr, filler)
				return nil
			})
			require.ErrorIs(t, err, ErrFailed)
			require.True(t, kv.IsMaybeCommitted(err), "got %v", err)
			require.ErrorContains(t, err, "injected fsync error")
			require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
				for k, want := range map[string]string{"changed": "old", "deleted": "old", "added": ""} {
					v, err := tr.Get([]byte(k))
					require.NoError(t, err)
					require.Equal(t, want, string(v), "key %s", k)
				}
				kvs, err := kv.Collect(tr.GetRange(kv.Range{Begin: []byte("a"), End: []byte("z")}, kv.RangeOptions{}))
				require.NoError(t, err)
				require.Equal(t, []kv.KeyValue{{Key: []byte("changed"), Value: []byte("old")}, {Key: []byte("deleted"), Value: []byte("old")}}, kvs, "a range read sees the keys as they were")
				return nil
			}))
			_ = db.Close()

			// The write reached the file, and only the fsync failed: on
			// reopen the group may be there or not (commit_unknown_result).
			db, err = OpenFile(dir, FileConfig{})
			require.NoError(t, err)
			defer db.Close()
			require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
				v, err := tr.Get([]byte("changed"))
				require.Contains(t, []string{"old", "new"}, string(v))
				return err
			}))
		})
	}
}

// setFiller sets n keys after the others of these tests ("~0", "~1", ...).
func setFiller(tr kv.Transaction, n int) {
	for i := range n {
		tr.Set([]byte(fmt.Sprint("~", i)), nil)
	}
}

// TestFileGroupReadableOnceDurable: while a group's fsync runs, its writes
// are in the tree but no reader sees them, not even one that starts
// during the fsync; once it returns they are readable, and the commit
// returns.
func TestFileGroupReadableOnceDurable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := OpenFile(t.TempDir(), FileConfig{})
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		tr.Set([]byte("changed"), []byte("old"))
		tr.Set([]byte("deleted"), []byte("old"))
		return nil
	}))
	syncing, free := holdFirstFsync(db)
	defer free() // before db.Close, which waits for the log's writer
	committed := make(chan error, 1)
	go func() {
		committed <- db.Transact(ctx, func(tr kv.Transaction) error {
			tr.Set([]byte("changed"), []byte("new"))
			tr.Clear([]byte("deleted"))
			tr.Set([]byte("added"), []byte("new"))
			setFiller(tr, stageMin) // a group this large is staged
			return nil
		})
	}()
	<-syncing
	staged := func() bool {
		db.s.mu.RLock()
		defer db.s.mu.RUnlock()
		_, ok := db.s.tree.Get(probe(new([]byte), []byte("added")))
		return ok
	}
	require.Eventually(t, staged, 10*time.Second, time.Millisecond, "the group is staged while its fsync runs")
	var seen []kv.KeyValue
	require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		seen, err = kv.Collect(tr.GetRange(kv.Range{Begin: []byte("a"), End: []byte("z")}, kv.RangeOptions{}))
		return err
	}))
	require.Equal(t, []kv.KeyValue{{Key: []byte("changed"), Value: []byte("old")}, {Key: []byte("deleted"), Value: []byte("old")}}, seen, "during the fsync")
	select {
	case err := <-committed:
		t.Fatalf("the commit returned before its fsync: %v", err)
	default:
	}
	free()
	require.NoError(t, <-committed)
	require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		seen, err = kv.Collect(tr.GetRange(kv.Range{Begin: []byte("a"), End: []byte("z")}, kv.RangeOptions{}))
		return err
	}))
	require.Equal(t, []kv.KeyValue{{Key: []byte("added"), Value: []byte("new")}, {Key: []byte("changed"), Value: []byte("new")}}, seen, "after it")
}

// TestFileGroupOfManyStagedUnseen: a group of several large commits is
// staged a commit at a time, letting readers in between (wal.commitGroup);
// none of those readers, nor one during the fsync, sees any of the
// group's writes, and all of them are readable once the fsync returns.
func TestFileGroupOfManyStagedUnseen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := OpenFile(t.TempDir(), FileConfig{})
	require.NoError(t, err)
	defer db.Close()
	// The first group's fsync holds the pen until release1, while the
	// others queue; the second's until release2.
	syncing1, release1 := make(chan struct{}), make(chan struct{})
	syncing2, release2 := make(chan struct{}), make(chan struct{})
	var once1, once2 sync.Once
	free := func() {
		once1.Do(func() { close(release1) })
		once2.Do(func() { close(release2) })
	}
	defer free() // before db.Close, which waits for the log's writer
	var syncs int
	db.s.log.syncFault = func() error {
		syncs++ // the pen's holder alone calls it
		switch syncs {
		case 1:
			close(syncing1)
			<-release1
		case 2:
			close(syncing2)
			<-release2
		}
		return nil
	}
	const others = 3
	large := func(name string) func(kv.Transaction) error {
		return func(tr kv.Transaction) error {
			for i := range stageMin {
				tr.Set([]byte(fmt.Sprintf("%s/%03d", name, i)), []byte(name))
			}
			return nil
		}
	}
	committed := make(chan error, others+1)
	go func() { committed <- db.Transact(ctx, large("a")) }()
	<-syncing1
	for i := range others {
		go func() { committed <- db.Transact(ctx, large(fmt.Sprint("b", i))) }()
	}
	queued := func() bool {
		db.s.log.mu.Lock()
		defer db.s.log.mu.Unlock()
		return len(db.s.log.queue) == others
	}
	require.Eventually(t, queued, 10*time.Second, time.Millisecond, "the other commits queue for the log")
	count := func() int {
		n := 0
		require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
			kvs, err := kv.Collect(tr.GetRange(kv.Range{Begin: []byte("b"), End: []byte("c")}, kv.RangeOptions{}))
			n = len(kvs)
			return err
		}))
		return n
	}
	// Readers run while the next group is staged and while it syncs.
	stop := make(chan struct{})
	readerSaw := make(chan int, 1)
	go func() {
		most := 0
		for {
			select {
			case <-stop:
				readerSaw <- most
				return
			default:
				most = max(most, count())
			}
		}
	}()
	once1.Do(func() { close(release1) })
	require.NoError(t, <-committed)
	<-syncing2
	staged := func() bool {
		db.s.mu.RLock()
		defer db.s.mu.RUnlock()
		for i := range others {
			if _, ok := db.s.tree.Get(probe(new([]byte), []byte(fmt.Sprintf("b%d/%03d", i, stageMin-1)))); !ok {
				return false
			}
		}
		return true
	}
	require.Eventually(t, staged, 10*time.Second, time.Millisecond, "the group is staged while its fsync runs")
	require.Zero(t, count(), "during the fsync")
	close(stop)
	require.Zero(t, <-readerSaw, "while the group was staged")
	once2.Do(func() { close(release2) })
	for range others {
		require.NoError(t, <-committed)
	}
	require.Equal(t, others*stageMin, count(), "after the fsync")
}

// TestFileStagedInOrder: under concurrent commits a commit is staged as it
// settles, unless a commit before it waits for the log's writer to stage
// it: then it waits too, as versions are staged in order. Two blind writes
// to one key, a lone client's and then one under concurrent commits, queue
// behind a group whose fsync is held; once both are durable the key holds
// the second's value (staged first, it would be the first's).
func TestFileStagedInOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := OpenFile(t.TempDir(), FileConfig{})
	require.NoError(t, err)
	defer db.Close()
	syncing, free := holdFirstFsync(db)
	defer free() // before db.Close, which waits for the log's writer
	set := func(val string, filler int) func(kv.Transaction) error {
		return func(tr kv.Transaction) error {
			tr.Set([]byte("k"), []byte(val))
			setFiller(tr, filler)
			return nil
		}
	}
	first := make(chan error, 1)
	go func() { first <- db.Transact(ctx, set("first", 0)) }()
	<-syncing
	later := make(chan error, 2)
	go func() { later <- db.Transact(ctx, set("lone", 0)) }()
	require.Eventually(t, queuedForLog(db, 1), 10*time.Second, time.Millisecond, "the lone client's commit queues")
	db.s.log.lastGroup.Store(2) // as after a group of two concurrent commits
	go func() { later <- db.Transact(ctx, set("concurrent", 0)) }()
	require.Eventually(t, queuedForLog(db, 2), 10*time.Second, time.Millisecond, "the next commit queues")
	free()
	require.NoError(t, <-first)
	require.NoError(t, <-later)
	require.NoError(t, <-later)
	var v []byte
	require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		v, err = tr.Get([]byte("k"))
		return err
	}))
	require.Equal(t, "concurrent", string(v))
}

// TestFileConcurrentLargeCommitStagedAsItSettles: under concurrent commits
// (the last group had several), a large commit is staged as it settles,
// before the log's writer takes it; no reader sees it until it is durable.
func TestFileConcurrentLargeCommitStagedAsItSettles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := OpenFile(t.TempDir(), FileConfig{})
	require.NoError(t, err)
	defer db.Close()
	w := db.s.log
	syncing, free := holdFirstFsync(db)
	defer free()         // before db.Close, which waits for the log's writer
	w.lastGroup.Store(2) // as after a group of two concurrent commits
	first := make(chan error, 1)
	go func() {
		first <- db.Transact(ctx, func(tr kv.Transaction) error {
			tr.Set([]byte("first"), nil)
			return nil
		})
	}()
	<-syncing
	large := make(chan error, 1)
	go func() {
		large <- db.Transact(ctx, func(tr kv.Transaction) error {
			tr.Set([]byte("large"), []byte("v"))
			setFiller(tr, stageMin)
			return nil
		})
	}()
	require.Eventually(t, queuedForLog(db, 1), 10*time.Second, time.Millisecond, "the large commit queues")
	db.s.mu.RLock()
	_, staged := db.s.tree.Get(probe(new([]byte), []byte("large")))
	db.s.mu.RUnlock()
	require.True(t, staged, "staged as it settled, while queued")
	get := func() string {
		var v []byte
		require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
			v, err = tr.Get([]byte("large"))
			return err
		}))
		return string(v)
	}
	require.Empty(t, get(), "not readable before its fsync")
	free()
	require.NoError(t, <-first)
	require.NoError(t, <-large)
	require.Equal(t, "v", get())
}

// holdFirstFsync makes the log's first fsync from now on wait until free
// is called; syncing is closed once it waits.
func holdFirstFsync(db *DB) (syncing <-chan struct{}, free func()) {
	started, release := make(chan struct{}), make(chan struct{})
	var syncs atomic.Int64
	db.s.log.syncFault = func() error {
		if syncs.Add(1) == 1 {
			close(started)
			<-release
		}
		return nil
	}
	return started, sync.OnceFunc(func() { close(release) })
}

// queuedForLog reports whether n commits wait in the log's queue.
func queuedForLog(db *DB, n int) func() bool {
	return func() bool {
		db.s.log.mu.Lock()
		defer db.s.log.mu.Unlock()
		return len(db.s.log.queue) == n
	}
}
