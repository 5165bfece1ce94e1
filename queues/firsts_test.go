package queues_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/queues"
)

// TestAttemptRemembersReadsExactly: many fit pops, pushes, removals and
// clears in one Attempt (which answers repeated head reads from memory)
// take exactly what the same operations take in a plain transaction, read
// by read: a remembered head that a write of the attempt changed would
// pop a row twice, a row no longer there, or miss a better one.
func TestAttemptRemembersReadsExactly(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 6; seed++ {
		for _, order := range []queues.Order{queues.Min, queues.Max} {
			t.Run(fmt.Sprintf("seed=%d/order=%v", seed, order), func(t *testing.T) {
				t.Parallel()
				var logs [2][]string
				for i, withClaims := range []bool{false, true} {
					db, q := setup(t, queues.Priority, "cpu", "mem")
					fillForFit(t, db, q, seed, 20)
					claims := queues.NewClaims()
					require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
						logs[i] = logs[i][:0]
						if withClaims {
							a := claims.Begin(tr)
							defer a.Release(false)
							tr = a
						}
						r := rand.New(rand.NewPCG(seed, 2))
						for step := range 300 {
							limits := fitLimits[r.IntN(len(fitLimits))]
							switch n := r.IntN(10); {
							case n < 6:
								it, ok, err := q.PopFit(tr, order, limits)
								if err != nil {
									return err
								}
								logs[i] = append(logs[i], fmt.Sprintf("pop %v: %v %s", limits, ok, it.Value))
							case n < 8: // a push, at times better than every head
								it := queues.Item{ID: int64(10_000 + step), Priority: r.Int64N(10) - 1, Resources: []int64{1 + r.Int64N(40), 1 + r.Int64N(1100)}, Value: fmt.Append(nil, "p", step)}
								if err := q.Push(tr, it); err != nil {
									return err
								}
							case n < 9: // a removal by id, anywhere in the queue
								it, ok, err := q.Remove(tr, int64(1+r.IntN(1000)))
								if err != nil {
									return err
								}
								logs[i] = append(logs[i], fmt.Sprintf("remove: %v %s", ok, it.Value))
							default:
								it, ok, err := q.PeekFit(tr, order, limits)
								if err != nil {
									return err
								}
								logs[i] = append(logs[i], fmt.Sprintf("peek %v: %v %s", limits, ok, it.Value))
							}
						}
						return nil
					}))
				}
				require.Equal(t, logs[0], logs[1])
			})
		}
	}
}
