package queues

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// TestLoneCarriesMixedChooseAndConflictAsFresh: attempts of one Claims
// that pop alone (carryAlone) from two queues (a priority queue of two
// resources, a FIFO queue of one), lease, ack, promote delayed and leased
// items as the clock moves, pop from both queues in one attempt, write
// before their first pick, run beside another attempt (a conflictReader),
// and clear and refill a queue (as a DROP and CREATE would), choose and add
// the read conflicts that the same attempts make without carrying. The
// carry slot is one for both queues: what a pop of one carried is taken
// over by a pop of the other.
func TestLoneCarriesMixedChooseAndConflictAsFresh(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			var fresh, carried strings.Builder
			mixedCarryScenario(t, &fresh, seed, false)
			adopted, refused := mixedCarryScenario(t, &carried, seed, true)
			require.Equal(t, fresh.String(), carried.String())
			require.Greater(t, adopted, int64(30), "few attempts took over the reads of the one before")
			require.Positive(t, refused, "no attempt found the reads carried to it stale")
		})
	}
}

// mixedCarryScenario runs seed's sequence of attempts (see
// TestLoneCarriesMixedChooseAndConflictAsFresh), with commits that tell
// whether they were alone (carry) or not, and writes a line per attempt.
func mixedCarryScenario(t *testing.T, out *strings.Builder, seed uint64, carry bool) (adopted, refused int64) {
	db := embedded.Open("", embedded.Config{RetryLimit: -1})
	defer db.Close()
	clock := time.Unix(1_800_000_000, 0)
	opts := Options{Clock: func() time.Time { return clock }}
	qa := New(tuple.Tuple{"mixed", "a"}.Pack(), Priority, "cpu", "mem").WithOptions(opts)
	qb := New(tuple.Tuple{"mixed", "b"}.Pack(), FIFO, "cpu").WithOptions(opts)
	r := rand.New(rand.NewPCG(seed, 91))
	nextID := int64(0)
	task := func(q *Queue) Item {
		nextID++
		it := Item{ID: nextID, Priority: r.Int64N(5), Value: fmt.Append(nil, nextID)}
		if q == qa {
			it.Resources = []int64{1 + r.Int64N(12), 1 + r.Int64N(64)}
			if r.IntN(8) == 0 {
				it.Resources = []int64{30 + r.Int64N(10), 1 << 20} // fits few
			}
		} else {
			it.Resources = []int64{1 + r.Int64N(20)}
		}
		if r.IntN(6) == 0 {
			it.VisibleAt = clock.Add(time.Duration(1+r.IntN(3)) * time.Second) // delayed
		}
		return it
	}
	push := func(q *Queue, n int) {
		items := make([]Item, n)
		for i := range items {
			items[i] = task(q)
		}
		require.NoError(t, db.Transact(context.Background(), func(tr kv.Transaction) error {
			_, err := q.PushAll(tr, Token{}, items)
			return err
		}))
	}
	push(qa, 400)
	push(qb, 150)
	limitsOf := func(q *Queue) []int64 {
		if q == qa {
			return []int64{[]int64{0, 2, 4, 8, 12, 40}[r.IntN(6)], []int64{0, 8, 32, 64, 1 << 21}[r.IntN(5)]}
		}
		return []int64{[]int64{0, 3, 10, 20}[r.IntN(4)]}
	}
	type held struct {
		q         *Queue
		id, lease int64
	}
	var leased []held
	claims := NewClaims()
	for step := range 250 {
		switch x := r.IntN(12); {
		case x == 0:
			push([]*Queue{qa, qb}[r.IntN(2)], 1+r.IntN(3)) // stale: not taken over
		case x == 1:
			clock = clock.Add(time.Second) // delayed and leased items fall due
		}
		tr, err := db.CreateTransaction(context.Background())
		require.NoError(t, err)
		log := &conflictLog{Transaction: tr, atIssue: true}
		var in kv.Transaction = log
		if carry {
			in = carryLog{log}
		}
		var beside *Attempt
		if r.IntN(5) == 0 {
			// Another attempt in flight: the picks read through a
			// conflictReader. It pops (takes the carry, if any) and
			// never commits.
			btr, err := db.CreateTransaction(context.Background())
			require.NoError(t, err)
			defer btr.Cancel()
			beside = claims.Begin(btr)
			q := []*Queue{qa, qb}[r.IntN(2)]
			_, _, err = q.PopFit(beside, Order(r.IntN(2)), limitsOf(q))
			require.NoError(t, err)
		}
		a := claims.Begin(in)
		log.on = true
		var did []string
		op := r.IntN(10)
		switch {
		case op < 3, op == 9 && len(leased) == 0:
			q := []*Queue{qa, qb}[r.IntN(2)]
			it, ok, err := q.PopFit(a, Order(r.IntN(2)), limitsOf(q))
			require.NoError(t, err)
			did = append(did, fmt.Sprintf("pop %v %d", ok, it.ID))
		case op < 5:
			// Both queues in one attempt, in either order.
			qs := []*Queue{qa, qb}
			if r.IntN(2) == 0 {
				qs[0], qs[1] = qs[1], qs[0]
			}
			for _, q := range qs {
				it, ok, err := q.PopFit(a, Order(r.IntN(2)), limitsOf(q))
				require.NoError(t, err)
				did = append(did, fmt.Sprintf("pop %v %d", ok, it.ID))
			}
		case op < 6:
			q := []*Queue{qa, qb}[r.IntN(2)]
			its, err := q.PopFitN(a, Order(r.IntN(2)), limitsOf(q), 1+r.IntN(4))
			require.NoError(t, err)
			for _, it := range its {
				did = append(did, fmt.Sprintf("popN %d", it.ID))
			}
		case op < 8:
			q := []*Queue{qa, qb}[r.IntN(2)]
			its, err := q.Lease(a, LeaseRequest{Order: Order(r.IntN(2)), Limits: limitsOf(q), N: 1 + r.IntN(2), For: time.Duration(1+r.IntN(2)) * time.Second})
			require.NoError(t, err)
			for _, it := range its {
				did = append(did, fmt.Sprintf("lease %d", it.ID))
				leased = append(leased, held{q, it.ID, it.Lease})
			}
		case op < 9:
			// A write before the first pick: an ack.
			if len(leased) > 0 {
				h := leased[0]
				ok, err := h.q.Ack(a, h.id, h.lease)
				require.NoError(t, err)
				did = append(did, fmt.Sprintf("ack %v %d", ok, h.id))
				leased = leased[1:]
			}
			it, ok, err := qa.PopFit(a, Order(r.IntN(2)), limitsOf(qa))
			require.NoError(t, err)
			did = append(did, fmt.Sprintf("pop %v %d", ok, it.ID))
		default:
			// A pop, then an ack after it in the same attempt.
			it, ok, err := qb.PopFit(a, Order(r.IntN(2)), limitsOf(qb))
			require.NoError(t, err)
			did = append(did, fmt.Sprintf("pop %v %d", ok, it.ID))
			h := leased[0]
			leased = leased[1:]
			ok, err = h.q.Ack(a, h.id, h.lease)
			require.NoError(t, err)
			did = append(did, fmt.Sprintf("ack %v %d", ok, h.id))
		}
		if r.IntN(8) == 0 {
			push([]*Queue{qa, qb}[r.IntN(2)], 1) // during: the commit is not alone, or conflicts
		}
		log.on = false
		conflicts, err := log.conflicts()
		require.NoError(t, err)
		err = tr.Commit()
		fmt.Fprintf(out, "step %d: %s cleared %s conflicts %d %x commit %d\n",
			step, strings.Join(did, ", "), strings.Join(log.cleared, " "), len(conflicts), digest(conflicts), kv.Code(err))
		a.Release(err == nil)
		tr.Cancel()
		if beside != nil {
			beside.Release(false)
		}
		if step%60 == 59 {
			// The FIFO queue dropped and made again, with other items, in
			// an attempt of the same Claims.
			ctr, err := db.CreateTransaction(context.Background())
			require.NoError(t, err)
			ca := claims.Begin(ctr)
			qb.Clear(ca)
			require.NoError(t, ctr.Commit())
			ca.Release(true)
			ctr.Cancel()
			kept := leased[:0]
			for _, h := range leased {
				if h.q != qb {
					kept = append(kept, h)
				}
			}
			leased = kept
			push(qb, 60)
		}
	}
	require.NoError(t, db.ReadTransact(context.Background(), func(tr kv.ReadTransaction) error {
		if err := qa.Check(tr); err != nil {
			return err
		}
		return qb.Check(tr)
	}))
	return claims.adopted.Load(), claims.refused.Load()
}
