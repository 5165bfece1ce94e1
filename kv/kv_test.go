package kv_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
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
	retryableNotCommitted := []int{1007, 1009, 1020, 1026, 1037, 1038, 1042, 1051, 1213}
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

// plain hides a transaction's optional interfaces: kv's functions take
// their fallback paths.
type plain struct{ kv.ReadTransaction }

// TestAsyncFallback: on a transaction that cannot issue reads without
// waiting, GetAsync and GetRangeAsync read at the call, and GetMany is a
// GetAsync of each key.
func TestAsyncFallback(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		tr.Set([]byte("a"), []byte("1"))
		tr.Set([]byte("b"), []byte("2"))
		return nil
	}))
	tr, err := db.CreateTransaction(ctx)
	require.NoError(t, err)
	defer tr.Cancel()
	rt := plain{tr}
	v := kv.GetAsync(rt, []byte("a"))
	r := kv.GetRangeAsync(rt, kv.PrefixRange(nil), kv.RangeOptions{Reverse: true})
	tr.Set([]byte("a"), []byte("later"))
	got, err := v.Get()
	require.NoError(t, err)
	require.Equal(t, "1", string(got), "read at the call")
	rows, err := r.Get()
	require.NoError(t, err)
	require.Equal(t, []kv.KeyValue{{Key: []byte("b"), Value: []byte("2")}, {Key: []byte("a"), Value: []byte("1")}}, rows)

	vals, err := kv.GetMany(rt, [][]byte{[]byte("b"), []byte("a"), []byte("x")})
	require.NoError(t, err)
	require.Equal(t, [][]byte{[]byte("2"), []byte("later"), nil}, vals)

	_, err = kv.GetAsync(rt, []byte("\xff")).Get()
	require.Equal(t, kv.CodeKeyOutsideLegalRange, kv.Code(err))
	rows, err = kv.GetRangeAsync(rt, kv.Range{Begin: []byte("b"), End: []byte("a")}, kv.RangeOptions{}).Get()
	require.Equal(t, kv.CodeInvertedRange, kv.Code(err))
	require.Nil(t, rows)
	_, err = kv.GetMany(rt, [][]byte{[]byte("a"), []byte("\xff")})
	require.Equal(t, kv.CodeKeyOutsideLegalRange, kv.Code(err))
}

// TestAbbrevKeepsOrderAfterACommonPrefix: for keys that share a prefix,
// their Abbrev after it is ordered as they are, or equal; and
// CommonPrefix is that prefix's length.
func TestAbbrevKeepsOrderAfterACommonPrefix(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 1))
	key := func() []byte {
		k := make([]byte, r.IntN(14))
		for i := range k {
			k[i] = []byte{0x00, 0x01, 0x7f, 0xff}[r.IntN(4)]
		}
		return k
	}
	for range 20_000 {
		a, b := key(), key()
		p := kv.CommonPrefix(a, b)
		require.Equal(t, a[:p], b[:p])
		require.True(t, p == len(a) || p == len(b) || a[p] != b[p])
		switch c := bytes.Compare(a, b); {
		case c < 0:
			require.LessOrEqual(t, kv.Abbrev(a[p:]), kv.Abbrev(b[p:]), "%x %x", a, b)
		case c > 0:
			require.GreaterOrEqual(t, kv.Abbrev(a[p:]), kv.Abbrev(b[p:]), "%x %x", a, b)
		default:
			require.Equal(t, kv.Abbrev(a), kv.Abbrev(b))
		}
	}
	require.Equal(t, uint64(0x0102000000000000), kv.Abbrev([]byte{1, 2}))
	require.Equal(t, uint64(0x0102030405060708), kv.Abbrev([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9}))
}
