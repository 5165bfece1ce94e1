package kv_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

func TestStrinc(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want []byte }{
		{[]byte{0x13, 0xfd}, []byte{0x13, 0xfe}},
		{[]byte{0x01, 0xfe, 0xff}, []byte{0x01, 0xff}},
		{[]byte{0x01, 0xff, 0xff}, []byte{0x02}},
		{[]byte("a"), []byte("b")},
	} {
		require.Equal(t, tc.want, kv.Strinc(tc.in), "%x", tc.in)
	}
	require.Panics(t, func() { kv.Strinc([]byte{0xff, 0xff}) })
	require.Panics(t, func() { kv.Strinc(nil) })

	r := kv.PrefixRange([]byte{0x13, 0xfd})
	require.True(t, r.Contains([]byte{0x13, 0xfd, 0x15}))
	require.False(t, r.Contains([]byte{0x13, 0xfe, 0x15}))
	require.Equal(t, []byte{0xff}, kv.PrefixRange(nil).End)
}

// TestErrorPredicates: FoundationDB's retryable and maybe-committed
// predicates, code by code (fdb_error_predicate).
func TestErrorPredicates(t *testing.T) {
	t.Parallel()
	retryableNotCommitted := []int{1007, 1009, 1020, 1037, 1038, 1042, 1051, 1213}
	maybeCommitted := []int{1021, 1039}
	final := []int{0, 1025, 1031, 1032, 1101, 2000, 2004, 2101, 2102, 2103}
	for _, c := range retryableNotCommitted {
		err := &kv.Error{Code: c}
		require.True(t, kv.IsRetryable(err), "%d", c)
		require.True(t, kv.IsRetryableNotCommitted(err), "%d", c)
		require.False(t, kv.IsMaybeCommitted(err), "%d", c)
	}
	for _, c := range maybeCommitted {
		err := &kv.Error{Code: c}
		require.True(t, kv.IsRetryable(err), "%d", c)
		require.True(t, kv.IsMaybeCommitted(err), "%d", c)
		require.False(t, kv.IsRetryableNotCommitted(err), "%d", c)
	}
	joined := errors.Join(kv.ErrTransactionTimedOut, fmt.Errorf("earlier: %w", kv.ErrCommitUnknownResult))
	require.True(t, kv.IsMaybeCommitted(joined), "anywhere in the chain")
	require.False(t, kv.IsRetryableNotCommitted(joined))
	for _, c := range final {
		err := &kv.Error{Code: c}
		require.False(t, kv.IsRetryable(err), "%d", c)
		require.False(t, kv.IsMaybeCommitted(err), "%d", c)
	}
}
