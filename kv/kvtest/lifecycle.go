package kvtest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// The contract of a transaction's life: Transact's retries, cancellation
// by the context, use after commit or cancel; and the errors' codes and
// classes.

func testTransactRetries(t *testing.T, in Instance) {
	set(t, in.DB, "k", "0")
	runs := 0
	interfere := true
	err := in.DB.Transact(bg, func(tr kv.Transaction) error {
		runs++
		v, err := tr.Get([]byte("k"))
		if err != nil {
			return err
		}
		if interfere {
			interfere = false
			set(t, in.DB, "k", "1")
		}
		tr.Set([]byte("k"), append(v, '+'))
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 2, runs, "a conflict re-runs the function")
	require.Equal(t, "1+", string(get(t, in.DB, "k")))

	// A non-retryable error from the function stops at once.
	boom := errors.New("boom")
	runs = 0
	err = in.DB.Transact(bg, func(tr kv.Transaction) error {
		runs++
		tr.Set([]byte("k"), []byte("never"))
		return boom
	})
	require.ErrorIs(t, err, boom)
	require.Equal(t, 1, runs)
	require.Equal(t, "1+", string(get(t, in.DB, "k")))

	// A retryable error every time ends at the retry limit.
	runs = 0
	err = in.DB.Transact(bg, func(tr kv.Transaction) error {
		runs++
		return kv.ErrNotCommitted
	})
	require.ErrorIs(t, err, kv.ErrNotCommitted)
	require.Greater(t, runs, 1)
}

func testContextCancellation(t *testing.T, in Instance) {
	ctx, cancel := context.WithCancel(bg)
	tr, err := in.DB.CreateTransaction(ctx)
	require.NoError(t, err)
	defer tr.Cancel()
	cancel()
	_, err = tr.Get([]byte("k"))
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, kv.ErrTransactionCancelled)

	// Transact stops retrying when its context is done.
	ctx, cancel = context.WithTimeout(bg, 50*time.Millisecond)
	defer cancel()
	err = in.DB.Transact(ctx, func(tr kv.Transaction) error { return kv.ErrNotCommitted })
	require.Error(t, err)
}

func testUseAfterEnd(t *testing.T, in Instance) {
	tr := newTr(t, in.DB)
	tr.Set([]byte("k"), []byte("v"))
	require.NoError(t, tr.Commit())
	_, err := tr.Get([]byte("k"))
	require.Error(t, err)
	require.Error(t, tr.Commit())

	tr = newTr(t, in.DB)
	tr.Cancel()
	_, err = tr.Get([]byte("k"))
	require.Error(t, err)
	tr.Set([]byte("x"), []byte("v"))
	require.Error(t, tr.Commit())
	require.Nil(t, get(t, in.DB, "x"))
}

func testErrors(t *testing.T, _ Instance) {
	err := fmt.Errorf("wrapped: %w", kv.Errorf(1020, "detail"))
	require.ErrorIs(t, err, kv.ErrNotCommitted)
	require.Equal(t, 1020, kv.Code(err))
	require.True(t, kv.IsRetryable(err))
	require.True(t, kv.IsRetryableNotCommitted(err))
	require.True(t, kv.IsMaybeCommitted(kv.ErrCommitUnknownResult))
	require.False(t, kv.IsRetryableNotCommitted(kv.ErrCommitUnknownResult))
	require.True(t, kv.IsRetryable(kv.ErrTransactionTooOld))
	require.False(t, kv.IsRetryable(kv.ErrTransactionTimedOut))
	require.False(t, kv.IsRetryable(errors.New("other")))
	require.Contains(t, kv.ErrKeyTooLarge.Error(), "2102")
	require.Contains(t, kv.ErrKeyTooLarge.Error(), "10,000")
}
