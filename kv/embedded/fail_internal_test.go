package embedded

import (
	"context"
	"errors"
	"fmt"
	"sync"
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
	require.NoError(t, db.s.log.seg.f.Close()) // the disk goes away

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
// point read or a range read. A group of stageMin writes or more was
// staged in the tree while the fsync ran (and stays there, never
// readable); a smaller one never got there.
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
	syncing, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	defer free() // before db.Close, which waits for the log's writer
	db.s.log.syncFault = func() error {
		close(syncing)
		<-release
		return nil
	}
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
