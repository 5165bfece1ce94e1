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

// TestGroupReadsChooseAndConflictAsAlone: what the pops of one attempt of
// several share (Attempt.Several: the head of the items read once for
// step 1, itemsKnown; the cell directory read once and decoded, cells)
// must leave each pop's choice and read conflicts those of the same pops
// in an attempt that shares nothing. Groups of 2 to 8 picks (fit pops in
// either order, multi-row fit pops, fit leases, and pushes between them
// in the same transaction, some at the head), some beside another attempt
// that claimed a row, on a queue whose head holds tasks only large
// consumers take, with delayed items and leases coming due between groups
// and between a group's picks (each pick promotes them first), and
// pushes, removes and acks of other transactions between groups.
func TestGroupReadsChooseAndConflictAsAlone(t *testing.T) {
	t.Parallel()
	for _, kind := range []Kind{Priority, FIFO} {
		for seed := uint64(1); seed <= 4; seed++ {
			t.Run(fmt.Sprintf("%v/seed=%d", kind, seed), func(t *testing.T) {
				t.Parallel()
				var alone, several strings.Builder
				groupScenario(t, &alone, kind, seed, false)
				shared := groupScenario(t, &several, kind, seed, true)
				require.Equal(t, alone.String(), several.String())
				require.Positive(t, shared, "no pick read through the group's items read")
			})
		}
	}
}

// groupScenario runs groupScenario's groups, each one attempt, Several or
// not, and writes a line per pick: what it took, and the read conflicts
// so far. It returns how many picks found the attempt's items read there
// after them.
func groupScenario(t *testing.T, out *strings.Builder, kind Kind, seed uint64, several bool) (shared int) {
	db := embedded.Open("", embedded.Config{RetryLimit: -1})
	defer db.Close()
	clock := time.Unix(1_800_000_000, 0)
	q := New(tuple.Tuple{"group", int64(kind), int64(seed)}.Pack(), kind, "cpu", "mem").
		WithOptions(Options{Clock: func() time.Time { return clock }})
	r := rand.New(rand.NewPCG(seed, 41))
	nextID := int64(0)
	task := func(big bool) Item {
		nextID++
		it := Item{ID: nextID, Priority: r.Int64N(6), Resources: []int64{1 + r.Int64N(8), 1 + r.Int64N(32)}, Value: fmt.Append(nil, nextID)}
		if big {
			it.Priority, it.Resources = 0, []int64{7 + r.Int64N(2), 28 + r.Int64N(5)}
		}
		if r.IntN(8) == 0 {
			it.VisibleAt = clock.Add(time.Duration(1+r.IntN(20)) * time.Second)
		}
		return it
	}
	transact := func(f func(tr kv.Transaction) error) {
		require.NoError(t, db.Transact(context.Background(), f))
	}
	var items []Item
	for i := range 400 {
		items = append(items, task(i < 60)) // sediment first
	}
	transact(func(tr kv.Transaction) error {
		_, err := q.PushAll(tr, Token{}, items)
		return err
	})
	claims := NewClaims()
	var leased []Item
	for step := range 50 {
		// Between groups: other transactions push, remove, ack; time
		// passes, and delayed items and leases come due.
		transact(func(tr kv.Transaction) error {
			for range r.IntN(4) {
				if err := q.Push(tr, task(r.IntN(3) == 0)); err != nil {
					return err
				}
			}
			for range r.IntN(3) {
				if _, _, err := q.Remove(tr, 1+r.Int64N(nextID)); err != nil {
					return err
				}
			}
			if len(leased) > 0 && r.IntN(2) == 0 {
				it := leased[0]
				leased = leased[1:]
				if _, err := q.Ack(tr, it.ID, it.Lease); err != nil {
					return err
				}
			}
			return nil
		})
		clock = clock.Add(time.Duration(r.IntN(4)) * time.Second)

		tr, err := db.CreateTransaction(context.Background())
		require.NoError(t, err)
		log := &conflictLog{Transaction: tr, atIssue: true}
		var other *Attempt
		if r.IntN(3) == 0 {
			otr, err := db.CreateTransaction(context.Background())
			require.NoError(t, err)
			other = claims.Begin(otr)
			_, _, _, err = q.findFit(q.newPick(other, removing), Min, []int64{8, 32})
			require.NoError(t, err)
		}
		a := claims.Begin(log)
		if several {
			a.Several()
		}
		log.on = true
		for i := range 2 + r.IntN(7) {
			order := Order(r.IntN(4) / 3) // Max one in four
			limits := []int64{1 + r.Int64N(8), 1 + r.Int64N(32)}
			var took []Item
			var what string
			switch x := r.IntN(10); {
			case x < 6:
				it, ok, err := q.PopFit(a, order, limits)
				require.NoError(t, err)
				if ok {
					took = append(took, it)
				}
				what = "pop"
			case x < 7:
				took, err = q.PopFitN(a, order, limits, 2+r.IntN(3))
				require.NoError(t, err)
				what = "popn"
			case x < 9:
				took, err = q.Lease(a, LeaseRequest{Order: order, Limits: limits, N: 1 + r.IntN(2), For: time.Duration(1+r.IntN(3)) * time.Second})
				require.NoError(t, err)
				leased = append(leased, took...)
				what = "lease"
			default:
				it := task(false)
				it.Priority-- // at times before every other
				require.NoError(t, q.Push(a, it))
				what = "push"
			}
			if r.IntN(4) == 0 {
				// Time passes in the group too: the next pick promotes
				// what came due, leases back to their places.
				clock = clock.Add(time.Second)
			}
			if a.items != nil {
				shared++
			}
			ids := make([]int64, len(took))
			for j, it := range took {
				ids[j] = it.ID
			}
			so, err := log.conflicts()
			require.NoError(t, err)
			fmt.Fprintf(out, "step %d pick %d %s %v %v: %v conflicts %x\n", step, i, what, order, limits, ids, digest(so))
		}
		log.on = false
		fmt.Fprintf(out, "step %d cleared %s\n", step, strings.Join(log.cleared, " "))
		require.NoError(t, tr.Commit())
		a.Release(true)
		if other != nil {
			other.Cancel()
			other.Release(false)
		}
	}
	require.NoError(t, db.ReadTransact(context.Background(), func(tr kv.ReadTransaction) error { return q.Check(tr) }))
	return shared
}
