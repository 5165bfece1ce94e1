package queues

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// A dirSet holds what was added, and nothing else, whatever its size
// hint: in its slice, and once past fewDirs keys in its map; a nil set
// holds nothing. A key kept is a copy: the caller's buffer is reused.
func TestDirSetHoldsWhatWasAdded(t *testing.T) {
	t.Parallel()
	var none *dirSet
	require.False(t, none.has([]byte("a")))
	for _, hint := range []int{0, 1, 2, 3, fewDirs, fewDirs + 1, 100} {
		d := newDirSet(hint)
		for i := range 3 * fewDirs {
			k := fmt.Sprintf("dir-%d", i)
			require.False(t, d.has([]byte(k)), "hint %d: %s before it was added", hint, k)
			if i%2 == 0 {
				d.add(k)
			} else {
				buf := []byte(k)
				d.keep(buf, hint)
				copy(buf, "xxxxxxxx")
				require.Equal(t, k, string(d.keys[len(d.keys)-1]))
			}
			for j := 0; j <= i; j++ {
				require.True(t, d.has([]byte(fmt.Sprintf("dir-%d", j))), "hint %d: dir-%d after %d keys", hint, j, i+1)
			}
			require.False(t, d.has([]byte(fmt.Sprintf("dir-%d", i+1))), "hint %d", hint)
		}
	}
}

// Keys kept past the set's first arrays (longer than its inline bytes,
// more than fit one arena, so that new arenas begin) stay as kept, in its
// keys and its strings, while the caller's buffer is written over.
func TestDirSetKeepsLongKeys(t *testing.T) {
	t.Parallel()
	for _, items := range []int{1, 2, 300} {
		d := newDirSet(min(2*items, maxDirsHint))
		buf := make([]byte, 0, 512)
		var want []string
		for i := range 200 {
			buf = fmt.Appendf(buf[:0], "%03d-", i)
			for len(buf) < 40+i%300 {
				buf = append(buf, byte('a'+i%26))
			}
			k := string(buf)
			require.False(t, d.has(buf))
			d.keep(buf, items)
			for j := range buf {
				buf[j] = '#'
			}
			want = append(want, k)
		}
		require.Len(t, d.keys, len(want))
		for i, k := range want {
			require.Equal(t, k, string(d.keys[i]), "items %d: key %d", items, i)
			require.True(t, d.has([]byte(k)), "items %d: key %d", items, i)
		}
		require.False(t, d.has([]byte("###")))
	}
}
