package queues

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// TestWritesForgetExactlyTheReadsTheyHit: an Attempt's writes forget
// the remembered reads whose ranges hold them, found through abbreviated
// ranges (firstSpan), and no others, checked against every range after
// every write. The keys share prefixes of every length, so the reads'
// bounds widen and their shared prefix shrinks as reads are added (the
// abbreviations are taken again), and differ in the bytes the
// abbreviations zero-pad, cut and compare; compactions move reads and
// their spans between writes. A span that lost a range's key would leave
// a stale read answering (a popped row popped again); one that matched
// too much only costs time, and fails here too.
func TestWritesForgetExactlyTheReadsTheyHit(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 40; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(seed, 7))
			prefix := bytes.Repeat([]byte{0x15}, r.IntN(12))
			key := func() []byte {
				k := slices.Clone(prefix[:r.IntN(len(prefix)+1)])
				for range r.IntN(14) {
					k = append(k, []byte{0x00, 0x01, 0x15, 0x16, 0xff}[r.IntN(5)])
				}
				return k
			}
			a := &Attempt{}
			live := map[string]kv.Range{} // the model: firstKey -> range
			for step := range 3000 {
				switch n := r.IntN(10); {
				case n < 5:
					b, e := key(), key()
					switch c := bytes.Compare(b, e); {
					case c == 0:
						continue
					case c > 0:
						b, e = e, b
					}
					rr := kv.Range{Begin: b, End: e}
					reverse := r.IntN(2) == 0
					fk := string(a.firstKey(rr, reverse))
					if _, ok := live[fk]; ok {
						continue // an Attempt recalls a read it remembers
					}
					if len(a.firsts) == maxFirsts {
						clear(live) // remember starts over
					}
					a.remember(rr, reverse, kv.KeyValue{}, false, false)
					live[fk] = rr
				case n < 8:
					k := key()
					a.writesElse(k, nil)
					for fk, rr := range live {
						if rr.Contains(k) {
							delete(live, fk)
						}
					}
				case n < 9:
					b, e := key(), key()
					if bytes.Compare(b, e) >= 0 {
						continue
					}
					a.writesElse(b, e)
					for fk, rr := range live {
						if bytes.Compare(b, rr.End) < 0 && bytes.Compare(rr.Begin, e) < 0 {
							delete(live, fk)
						}
					}
				default:
					a.compactFirsts()
				}
				require.Len(t, a.firstAt, len(live), "step %d", step)
				for fk := range live {
					i, ok := a.firstAt[fk]
					require.True(t, ok, "step %d: a read the writes did not change was forgotten", step)
					require.False(t, a.firsts[i].gone, "step %d", step)
					require.Equal(t, a.spanOf(a.firsts[i].r), a.firstSpans[i], "step %d: a span is stale", step)
				}
				require.Len(t, a.firstSpans, len(a.firsts))
			}
		})
	}
}
