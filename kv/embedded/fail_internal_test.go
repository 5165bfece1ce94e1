package embedded

import (
	"context"
	"errors"
	"testing"

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

// TestFileFsyncErrorHidesTheGroup: when the log's fsync fails (the write
// before it did not), the group's commits fail as maybe committed, and no
// reader sees them: not a new key, not a new value of a key, not a key
// they delete, by a point read or a range read. (Installing a group while
// its fsync runs, at versions readers do not read yet, was tried, and
// failed this test by losing a deleted key from range reads; it gained
// nothing measurable either.)
func TestFileFsyncErrorHidesTheGroup(t *testing.T) {
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
	check := func(db *DB) {
		t.Helper()
		require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
			for k, want := range map[string]string{"changed": "old", "deleted": "old", "added": ""} {
				v, err := tr.Get([]byte(k))
				require.NoError(t, err)
				require.Equal(t, want, string(v), "key %s", k)
			}
			kvs, err := kv.Collect(tr.GetRange(kv.Range{Begin: []byte("a"), End: []byte("z")}, kv.RangeOptions{}))
			require.NoError(t, err)
			require.Len(t, kvs, 2, "a range read sees the keys as they were")
			return nil
		}))
	}
	db.s.log.syncFault = func() error { return errors.New("injected fsync error") }
	err = db.Transact(ctx, func(tr kv.Transaction) error {
		tr.Set([]byte("changed"), []byte("new"))
		tr.Clear([]byte("deleted"))
		tr.Set([]byte("added"), []byte("new"))
		return nil
	})
	require.ErrorIs(t, err, ErrFailed)
	require.True(t, kv.IsMaybeCommitted(err), "got %v", err)
	require.ErrorContains(t, err, "injected fsync error")
	check(db)
	_ = db.Close()

	// The write reached the file, and only the fsync failed: on reopen
	// the group may be there or not (commit_unknown_result); here the
	// page cache kept it.
	db, err = OpenFile(dir, FileConfig{})
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		v, err := tr.Get([]byte("changed"))
		require.Contains(t, []string{"old", "new"}, string(v))
		return err
	}))
}
