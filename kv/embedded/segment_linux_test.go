package embedded

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// TestFileLoneCommitWritesSynced: a lone client's commit writes and syncs
// its record in one call (pwritev2 with RWF_DSYNC), which makes only its
// own bytes durable; so the commit whose record does not fit in the
// segment's reserved space, which reserves another chunk of zeros first,
// writes and syncs the whole file instead, and the commits after it take
// the one call again. Every commit is there after a reopen.
func TestFileLoneCommitWritesSynced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	db, err := OpenFile(dir, FileConfig{})
	require.NoError(t, err)
	seg := db.s.log.seg
	if seg.sys.noDsync {
		t.Skip("no pwritev2 with RWF_DSYNC here")
	}
	set := func(k string, vals, size int) {
		require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
			for i := range vals {
				tr.Set(fmt.Appendf(nil, "%s/%d", k, i), make([]byte, size))
			}
			return nil
		}))
	}
	for i := range 5 {
		set(fmt.Sprint("small", i), 1, 10)
	}
	if seg.sys.noDsync {
		t.Skip("this file system refuses RWF_DSYNC")
	}
	require.Equal(t, 5, seg.sys.dsyncs, "a lone commit's write and sync are one call")

	// A record larger than what is left of the chunk: another is reserved.
	alloc := seg.alloc
	set("large", 20, kv.MaxValueSize-100)
	require.Greater(t, seg.alloc, alloc, "a chunk was reserved")
	require.Equal(t, 5, seg.sys.dsyncs, "the commit that reserved a chunk syncs the whole file")

	set("after", 1, 10)
	require.Equal(t, 6, seg.sys.dsyncs, "the chunk's zeros are durable: one call again")
	require.NoError(t, db.Close())

	db, err = OpenFile(dir, FileConfig{})
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		kvs, err := kv.Collect(tr.GetRange(kv.Range{Begin: []byte("a"), End: []byte("z")}, kv.RangeOptions{}))
		require.NoError(t, err)
		require.Len(t, kvs, 5+20+1)
		return nil
	}))
}

// TestFileWriteSyncedErrorFailsTheLog: an error from the lone commit's
// pwritev2 other than "no RWF_DSYNC here" (ESPIPE here: the segment's
// descriptor is made a pipe's) fails the log as an fsync error does: the
// commit is maybe committed and never readable, the write is not tried
// again the other way (after an error from a write that syncs, a retried
// write and fdatasync may succeed with the data lost), every commit after
// fails, and the database reopens.
func TestFileWriteSyncedErrorFailsTheLog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	db, err := OpenFile(dir, FileConfig{})
	require.NoError(t, err)
	set := func(db *DB, k string) error {
		return db.Transact(ctx, func(tr kv.Transaction) error {
			tr.Set([]byte(k), []byte("v"))
			return nil
		})
	}
	require.NoError(t, set(db, "before"))
	seg := db.s.log.seg
	if seg.sys.noDsync {
		t.Skip("no pwritev2 with RWF_DSYNC here")
	}
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	require.NoError(t, syscall.Dup3(int(w.Fd()), seg.sys.fd, 0))

	err = set(db, "lost")
	require.ErrorIs(t, err, ErrFailed)
	require.ErrorIs(t, err, syscall.ESPIPE)
	require.ErrorContains(t, err, "pwritev2", "the error is the synced write's, not a retry's")
	require.True(t, kv.IsMaybeCommitted(err), "got %v", err)
	require.False(t, seg.sys.noDsync)
	require.ErrorIs(t, set(db, "after"), ErrFailed)
	require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		kvs, err := kv.Collect(tr.GetRange(kv.Range{Begin: []byte("a"), End: []byte("z")}, kv.RangeOptions{}))
		require.NoError(t, err)
		require.Equal(t, []kv.KeyValue{{Key: []byte("before"), Value: []byte("v")}}, kvs)
		return nil
	}))
	_ = db.Close()

	db, err = OpenFile(dir, FileConfig{})
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, set(db, "reopened"))
}
