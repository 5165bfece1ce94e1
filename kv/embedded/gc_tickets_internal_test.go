package embedded

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// The reader queue against a model, randomized with fixed seeds: readers
// queued with read versions that only grow and clock readings that need
// not (each goroutine reads the clock before it queues), released in any
// order, expired by the collector's clock (oldest). After every step:
//
//   - the horizon oldest returns is at or below every live reader's read
//     version: the collector never prunes what one reads;
//   - every reader oldest expired has a ticket at or below expired, every
//     live reader one above it: txn.expired fails exactly the readers the
//     collector may have pruned for, whatever the order of releases;
//   - tickets are never handed out twice.
func TestReaderQueueExpiredTickets(t *testing.T) {
	t.Parallel()
	for seed := range uint64(8) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 7))
			type model struct {
				rv      uint64
				since   time.Duration
				live    bool
				expired bool
			}
			var rq readerQueue
			readers := map[uint64]*model{} // by ticket
			var tickets []uint64           // in the order handed out
			var rv uint64
			var clock time.Duration // the newest reading
			base := time.Unix(0, 0)
			for step := range 2000 {
				switch op := rng.IntN(10); {
				case op < 4: // queue a reader
					if rng.IntN(2) == 0 {
						rv++
					}
					clock += time.Duration(rng.IntN(400)) * time.Millisecond
					// Read a little before: another goroutine queued first.
					since := clock - time.Duration(rng.IntN(300))*time.Millisecond
					tk := rq.add(rv, base.Add(since))
					require.NotZero(t, tk)
					require.NotContains(t, readers, tk, "ticket %d handed out twice", tk)
					readers[tk] = &model{rv: rv, since: since, live: true}
					tickets = append(tickets, tk)
				case op < 7: // release a reader, live or not
					if len(tickets) == 0 {
						continue
					}
					tk := tickets[rng.IntN(len(tickets))]
					rq.remove(tk)
					readers[tk].live = false
				default: // the collector, its clock a little behind or ahead
					now := clock + time.Duration(rng.IntN(600)-300)*time.Millisecond
					h, ok := rq.oldest(base.Add(now))
					// The model: from the oldest ticket, live readers past
					// the limit expire until one is not.
					for _, tk := range tickets {
						m := readers[tk]
						if !m.live {
							continue
						}
						if now-m.since <= kv.MaxTransactionAge {
							break
						}
						m.live, m.expired = false, true
					}
					anyLive := false
					for _, tk := range tickets {
						if m := readers[tk]; m.live {
							anyLive = true
							if !ok || h > m.rv {
								require.FailNowf(t, "horizon past a live reader", "step %d: horizon %d (%v) past live reader %d's version %d", step, h, ok, tk, m.rv)
							}
						}
					}
					if !anyLive {
						require.False(t, ok, "step %d: a horizon with no reader live", step)
					}
				}
				exp := rq.expired.Load()
				for _, tk := range tickets {
					m := readers[tk]
					switch {
					case m.expired && tk > exp:
						require.FailNowf(t, "an expired reader passes the check", "step %d: reader %d (expired %d)", step, tk, exp)
					case m.live && tk <= exp:
						require.FailNowf(t, "a live reader fails the check", "step %d: reader %d (expired %d)", step, tk, exp)
					}
				}
				require.Equal(t, func() int {
					n := 0
					for _, m := range readers {
						if m.live {
							n++
						}
					}
					return n
				}(), rq.live, "step %d: live count", step)
			}
		})
	}
}
