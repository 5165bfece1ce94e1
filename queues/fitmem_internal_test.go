package queues

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// TestSearchMemPrefixRange: the range a search carves out of its memory
// for a cell's entries is kv.PrefixRange of the cell's key, bound for
// bound (a reverse read's conflict ends at its End), for coordinates
// whose packed form ends in 0xff bytes too, and stays so as the memory
// fills up and grows.
func TestSearchMemPrefixRange(t *testing.T) {
	t.Parallel()
	m := new(searchMem)
	defer m.release()
	prefix := tuple.Tuple{"q", int64(3)}.Pack()
	vals := []int64{0, 1, 255, 256, 65535, 0xffff_ff, -1, -256, math.MaxInt64, math.MinInt64, 1 << 40}
	var got []kv.Range
	var want []kv.Range
	for range 20 {
		for _, a := range vals {
			for _, b := range vals {
				got = append(got, m.prefixRange(prefix, a, b))
				want = append(want, kv.PrefixRange(appendInts(append([]byte(nil), prefix...), a, b)))
			}
		}
	}
	for i := range got { // after every carve: none overwrote another
		require.Equal(t, want[i], got[i], "range %d", i)
	}
}
