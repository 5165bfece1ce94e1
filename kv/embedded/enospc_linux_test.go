package embedded

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// TestFileDiskFullIsNotAConflict: a log write that fails with ENOSPC
// surfaces as itself, from the commit that hit it and from every commit
// after, and is never retryable: not as not_committed (1020), which a
// retry of the failed commit used to meet when it read its own write.
func TestFileDiskFullIsNotAConflict(t *testing.T) {
	t.Parallel()
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full:", err)
	}
	defer full.Close()
	ctx := context.Background()
	dir := t.TempDir()
	db, err := OpenFile(dir, FileConfig{})
	require.NoError(t, err)
	rmw := func(tr kv.Transaction) error { // as a queue push does: read, then write
		if _, err := tr.Get([]byte("k")); err != nil {
			return err
		}
		tr.Set([]byte("k"), []byte("v"))
		return nil
	}
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		tr.Set([]byte("before"), []byte("v"))
		return nil
	}))
	// A transaction that read k before the disk filled.
	other, err := db.CreateTransaction(ctx)
	require.NoError(t, err)
	_, err = other.Get([]byte("k"))
	require.NoError(t, err)

	// The disk fills: every write to the log segment now fails with ENOSPC.
	for _, fd := range segmentFds(db.s.log.seg) {
		require.NoError(t, syscall.Dup3(int(full.Fd()), fd, 0))
	}

	err = db.Transact(ctx, rmw)
	require.Error(t, err)
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.ErrorIs(t, err, ErrFailed)
	require.ErrorContains(t, err, "no space left on device")
	require.True(t, kv.IsMaybeCommitted(err), "the failed write may have reached the disk: %v", err)
	require.False(t, kv.IsRetryableNotCommitted(err))

	require.NoError(t, rmw(other))
	err = other.Commit()
	require.ErrorIs(t, err, syscall.ENOSPC, "a commit after the failure says why")
	require.NotEqual(t, 1020, kv.Code(err))
	require.False(t, kv.IsRetryable(err))

	err = db.Transact(ctx, rmw)
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.False(t, kv.IsRetryable(err))

	require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		v, err := tr.Get([]byte("before"))
		if err == nil && string(v) != "v" {
			err = errors.New("lost a commit made before the failure")
		}
		return err
	}), "reads go on")
	require.NoError(t, db.Close())

	db, err = OpenFile(dir, FileConfig{})
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.Transact(ctx, rmw), "a reopened database takes writes")
}
