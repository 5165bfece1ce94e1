package embedded

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRecordWord: a record's 6-byte word keeps versions up to 2^45-1 and the
// flags apart, the flags change without touching the version, the key and
// the value, and a version beyond the word is refused, never truncated.
func TestRecordWord(t *testing.T) {
	t.Parallel()
	var sw slabWriter
	for _, ver := range []uint64{0, 1, 1<<32 - 1, 1 << 32, 1<<40 + 12345, verMask} {
		for _, del := range []bool{false, true} {
			key, val := []byte("some key"), make([]byte, 200) // a 2-byte value length
			val[0], val[199] = 1, 2
			r := sw.put(ver, key, val, del)
			require.Equal(t, ver, r.ver())
			require.Equal(t, del, r.del())
			require.False(t, r.stale())
			require.False(t, r.hasOlder())
			r.mark(flagStale)
			r.mark(flagOlder)
			require.Equal(t, ver, r.ver())
			require.True(t, r.stale())
			require.True(t, r.hasOlder())
			require.Equal(t, del, r.del())
			r.unmark(flagOlder)
			require.False(t, r.hasOlder())
			require.True(t, r.stale())
			k, v := r.kv()
			require.Equal(t, key, k)
			require.Equal(t, val, v)
			require.Equal(t, recSize(key, val), r.size())
		}
	}
	require.Panics(t, func() { sw.put(verMask+1, []byte("k"), nil, false) })
}
