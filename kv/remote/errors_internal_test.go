package remote

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
)

// roundTrip encodes err and decodes it, as the wire carries it.
func roundTrip(t *testing.T, err error) error {
	t.Helper()
	var e enc
	encodeErr(&e, err)
	d := dec{b: e.b}
	out := decodeErr(&d)
	require.NoError(t, d.end())
	return out
}

// TestErrorsOnTheWire: what callers look at in an error survives the wire:
// a *kv.Error's code and detail, the codes anywhere in a joined or wrapped
// error (so kv.IsMaybeCommitted), its text, and the sentinels callers
// test with errors.Is, or with == for kv.ErrNoMetadataVersion.
func TestErrorsOnTheWire(t *testing.T) {
	t.Parallel()
	ke := kv.Errorf(kv.CodeNotCommitted, "a conflict on %q", "k")
	got := roundTrip(t, ke)
	require.Equal(t, ke, got, "a *kv.Error arrives as one, unchanged")

	failed := kv.Join(kv.Errorf(kv.CodeCommitUnknownResult, "log write"), fmt.Errorf("%w: disk full", embedded.ErrFailed))
	got = roundTrip(t, failed)
	require.Equal(t, failed.Error(), got.Error())
	require.True(t, kv.IsMaybeCommitted(got))
	require.ErrorIs(t, got, embedded.ErrFailed)
	require.Equal(t, kv.CodeCommitUnknownResult, kv.Code(got))

	joined := errors.Join(kv.ErrTransactionTimedOut, fmt.Errorf("earlier: %w", kv.ErrCommitUnknownResult))
	got = roundTrip(t, joined)
	require.Equal(t, kv.CodeTransactionTimedOut, kv.Code(got), "the first code is kv.Code's")
	require.True(t, kv.IsMaybeCommitted(got), "a code deeper in the tree")

	cancelled := kv.Join(kv.ErrTransactionCancelled, context.DeadlineExceeded)
	got = roundTrip(t, cancelled)
	require.ErrorIs(t, got, context.DeadlineExceeded)
	require.ErrorIs(t, got, kv.ErrTransactionCancelled)
	require.NotErrorIs(t, got, context.Canceled)

	require.True(t, roundTrip(t, kv.ErrNoMetadataVersion) == kv.ErrNoMetadataVersion)
	require.ErrorIs(t, roundTrip(t, embedded.ErrReadOnly), embedded.ErrReadOnly)

	plain := errors.New("boom")
	got = roundTrip(t, plain)
	require.Equal(t, "boom", got.Error())
	require.Zero(t, kv.Code(got))
	require.False(t, kv.IsRetryable(got))
}
