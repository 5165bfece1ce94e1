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
