package kv_test

import (
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
