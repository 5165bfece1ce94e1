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
