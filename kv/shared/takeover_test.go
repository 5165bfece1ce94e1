package shared_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/shared"
)

// TestAttemptAcrossOwnTakeOver: a client's transaction whose serving
// process is killed mid-attempt, and whose own process takes the database
// over: the attempt's later reads and its commit fail (connection_failed,
// retryable), never run against the new server as part of the old
// attempt (a read of the first server's snapshot, then of the new one's);
// its retry (OnError) runs on the connection this process keeps to
// itself, and commits. A watch committed before the kill is armed again
// on the new server: it does not fire for the take-over, and fires for a
// write.
func TestAttemptAcrossOwnTakeOver(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	child := shared.ServeInChild(t, dir)
	db := open(t, dir)
	require.False(t, db.Serving())
	put(t, db, "a", "1")
	put(t, db, "w", "x")
	ctx := context.Background()

	var w kv.Watch
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		w = tr.Watch([]byte("w"))
		return nil
	}))
	defer w.Cancel()

	tr, err := db.CreateTransaction(ctx)
	require.NoError(t, err)
	defer tr.Cancel()
	v, err := tr.Get([]byte("a"))
	require.NoError(t, err)
	require.Equal(t, "1", string(v))
	tr.Set([]byte("b"), []byte("old attempt"))
	// A transaction made before the kill that has sent nothing yet.
	idle, err := db.CreateTransaction(ctx)
	require.NoError(t, err)
	defer idle.Cancel()

	child.Kill(t)
	put(t, db, "a", "2") // takes the database over
	require.True(t, db.Serving())

	_, err = tr.Get([]byte("a"))
	require.ErrorIs(t, err, kv.ErrConnectionFailed, "a read of the old attempt after its server died: %v", err)
	require.True(t, kv.IsRetryable(err))
	require.False(t, kv.IsMaybeCommitted(err))
	err = tr.Commit()
	require.Error(t, err, "the old attempt must not commit on the new server")
	require.True(t, kv.IsRetryable(err), "%v", err)
	require.Empty(t, get(t, db, "b"), "nothing of the old attempt was applied")

	// The retry runs (on this process's connection to itself) and sees
	// the new server's data.
	require.NoError(t, tr.OnError(err))
	v, err = tr.Get([]byte("a"))
	require.NoError(t, err)
	require.Equal(t, "2", string(v))
	tr.Set([]byte("b"), []byte("retry"))
	require.NoError(t, tr.Commit())
	require.Equal(t, "retry", get(t, db, "b"))

	_, err = idle.Get([]byte("a"))
	if err == nil {
		// It may have begun on the new connection: then it must read
		// the new server's data.
		v, err = idle.Get([]byte("a"))
		require.NoError(t, err)
		require.Equal(t, "2", string(v))
	} else {
		require.True(t, kv.IsRetryable(err), "%v", err)
	}

	select {
	case <-w.Done():
		t.Fatalf("the watch fired for the take-over (err %v)", w.Err())
	case <-time.After(100 * time.Millisecond):
	}
	put(t, db, "w", "y")
	select {
	case <-w.Done():
		require.NoError(t, w.Err())
	case <-time.After(10 * time.Second):
		t.Fatal("the watch, armed again on the new server, did not fire for a write")
	}
}
