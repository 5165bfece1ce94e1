package kvtest

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// The contract of FoundationDB's limits: key, value and transaction
// sizes, and the 5-second transaction limit, each failing with
// FoundationDB's error code.

func testLimits(t *testing.T, in Instance) {
	commit := func(fn func(tr kv.Transaction)) error {
		tr := newTr(t, in.DB)
		fn(tr)
		return tr.Commit()
	}
	require.NoError(t, commit(func(tr kv.Transaction) {
		tr.Set(bytes.Repeat([]byte("k"), kv.MaxKeySize), bytes.Repeat([]byte("v"), kv.MaxValueSize))
	}), "the limits themselves are allowed")

	err := commit(func(tr kv.Transaction) { tr.Set(bytes.Repeat([]byte("k"), kv.MaxKeySize+1), nil) })
	require.ErrorIs(t, err, kv.ErrKeyTooLarge)
	require.Equal(t, 2102, kv.Code(err))

	err = commit(func(tr kv.Transaction) { tr.Set([]byte("k"), make([]byte, kv.MaxValueSize+1)) })
	require.ErrorIs(t, err, kv.ErrValueTooLarge)
	require.Equal(t, 2103, kv.Code(err))

	err = commit(func(tr kv.Transaction) {
		v := make([]byte, kv.MaxValueSize)
		for i := 0; i <= kv.MaxTransactionSize/kv.MaxValueSize; i++ {
			tr.Set([]byte(fmt.Sprintf("big%04d", i)), v)
		}
	})
	require.ErrorIs(t, err, kv.ErrTransactionTooLarge)
	require.Equal(t, 2101, kv.Code(err))
	require.Nil(t, get(t, in.DB, "big0000"), "a failed transaction writes nothing")

	err = commit(func(tr kv.Transaction) { tr.Set([]byte("\xffsystem"), []byte("v")) })
	require.ErrorIs(t, err, kv.ErrKeyOutsideLegalRange)

	for _, e := range []error{kv.ErrKeyTooLarge, kv.ErrValueTooLarge, kv.ErrTransactionTooLarge} {
		require.False(t, kv.IsRetryable(e))
	}
}

func testTransactionTooOld(t *testing.T, in Instance) {
	set(t, in.DB, "k", "v", "k2", "v2")
	tr := newTr(t, in.DB)
	_, err := tr.Get([]byte("k"))
	require.NoError(t, err)
	if in.Advance != nil {
		in.Advance(kv.MaxTransactionAge + time.Second)
	} else {
		time.Sleep(kv.MaxTransactionAge + time.Second)
	}
	// A key the transaction has not read: FoundationDB answers a repeated
	// read of a key from the transaction's read-your-writes cache, without
	// asking a storage server, so a read of k would still succeed.
	_, err = tr.Get([]byte("k2"))
	require.ErrorIs(t, err, kv.ErrTransactionTooOld)
	require.True(t, kv.IsRetryable(err))
	tr.Set([]byte("k"), []byte("w"))
	require.ErrorIs(t, tr.Commit(), kv.ErrTransactionTooOld)
	// OnError resets the transaction with a fresh read version.
	require.NoError(t, tr.OnError(err))
	v, err := tr.Get([]byte("k"))
	require.NoError(t, err)
	require.Equal(t, "v", string(v))
}
