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

// groupShape is a queue and its load for shapesScenario.
type groupShape struct {
	name     string
	dims     int   // resources per item, 1 to 3
	prios    int64 // priorities 0..prios-1
	size     int   // items pushed first
	sediment int   // of them, first, tasks only the largest consumers take
	maxRes   int64 // a resource is 1..maxRes
	picks    int   // at most, a group
	others   int   // at most, attempts beside a group that claimed a row
}

// TestGroupShapesChooseAndConflictAsAlone: what the pops of one attempt
// of several share (Attempt.Several: the head of the items read once for
// step 1, itemsKnown; the cell directory read once and decoded, cells;
// each cell's remembered head found by its slot) must leave each pop's
// choice and read conflicts those of the same pops in an attempt that
// shares nothing and carries nothing. Groups of fit pops in either order,
// multi-row fit pops, fit leases, plain pops, removes, acks and pushes
// through the attempt (some at the head), some beside other attempts that
// claimed a row, with delayed items and leases coming due between groups
// and between a group's picks, and other transactions' pushes, removes
// and acks between groups; groups that commit alone hand what they
// remember to the next (carried). The shapes: one to three resources, one
// or many priorities, tiny queues (the head read whole, emptied
// mid-group) and large ones (a scan past the rows read ahead), and a head
// of sediment, tasks only the largest consumers take, longer than
// itemsAhead.
func TestGroupShapesChooseAndConflictAsAlone(t *testing.T) {
	t.Parallel()
	shapes := []groupShape{
		{name: "2dims", dims: 2, prios: 6, size: 400, sediment: 60, maxRes: 8, picks: 8, others: 1},
		{name: "3dims", dims: 3, prios: 4, size: 300, sediment: 40, maxRes: 6, picks: 10, others: 2},
		{name: "1dim-manyprios", dims: 1, prios: 40, size: 200, sediment: 10, maxRes: 16, picks: 8, others: 1},
		{name: "tiny", dims: 2, prios: 3, size: 6, sediment: 2, maxRes: 4, picks: 12, others: 1},
		{name: "deepsediment", dims: 2, prios: 2, size: 500, sediment: 120, maxRes: 8, picks: 12, others: 3},
	}
	for _, kind := range []Kind{Priority, FIFO} {
		for _, sh := range shapes {
			for seed := uint64(1); seed <= 10; seed++ {
				t.Run(fmt.Sprintf("%v/%s/seed=%d", kind, sh.name, seed), func(t *testing.T) {
					t.Parallel()
					var alone, several strings.Builder
					shapesScenario(t, &alone, kind, sh, seed, false)
					shared := shapesScenario(t, &several, kind, sh, seed, true)
					require.Equal(t, alone.String(), several.String())
					if sh.size > 10 {
						require.Positive(t, shared, "no pick read through the group's items read")
					}
				})
			}
		}
	}
}

func shapesScenario(t *testing.T, out *strings.Builder, kind Kind, sh groupShape, seed uint64, several bool) (shared int) {
	db := embedded.Open("", embedded.Config{RetryLimit: -1})
	defer db.Close()
	clock := time.Unix(1_800_000_000, 0)
	names := []string{"cpu", "mem", "gpu"}[:sh.dims]
	q := New(tuple.Tuple{"shapes", int64(kind), sh.name, int64(seed)}.Pack(), kind, names...).
		WithOptions(Options{Clock: func() time.Time { return clock }})
	r := rand.New(rand.NewPCG(seed, 97))
	nextID := int64(0)
	res := func() []int64 {
		x := make([]int64, sh.dims)
		for i := range x {
			x[i] = 1 + r.Int64N(sh.maxRes)
		}
		return x
	}
	task := func(big bool) Item {
		nextID++
		it := Item{ID: nextID, Priority: r.Int64N(sh.prios), Resources: res(), Value: fmt.Append(nil, nextID)}
		if big {
			it.Priority = 0
			for i := range it.Resources {
				it.Resources[i] = sh.maxRes - r.Int64N(2)
			}
		}
		if r.IntN(8) == 0 {
			it.VisibleAt = clock.Add(time.Duration(1+r.IntN(20)) * time.Second)
		}
		return it
	}
	limits := func() []int64 {
		x := make([]int64, sh.dims)
		for i := range x {
			x[i] = 1 + r.Int64N(sh.maxRes)
			if r.IntN(6) == 0 {
				x[i] = sh.maxRes // at times the largest consumer
			}
		}
		return x
	}
	transact := func(f func(tr kv.Transaction) error) {
		require.NoError(t, db.Transact(context.Background(), f))
	}
	var items []Item
	for i := range sh.size {
		items = append(items, task(i < sh.sediment))
	}
	for i := 0; i < len(items); i += 100 {
		transact(func(tr kv.Transaction) error {
			_, err := q.PushAll(tr, Token{}, items[i:min(i+100, len(items))])
			return err
		})
	}
	claims := NewClaims()
	var leased []Item
	for step := range 40 {
		between := func(tr kv.Transaction) error { return nil }
		if r.IntN(3) > 0 { // else the group may take over the last one's reads
			between = func(tr kv.Transaction) error {
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
			}
		}
		transact(between)
		clock = clock.Add(time.Duration(r.IntN(4)) * time.Second)

		tr, err := db.CreateTransaction(context.Background())
		require.NoError(t, err)
		log := &conflictLog{Transaction: tr, atIssue: true}
		var others []*Attempt
		for range r.IntN(sh.others + 1) {
			otr, err := db.CreateTransaction(context.Background())
			require.NoError(t, err)
			o := claims.Begin(otr)
			_, _, _, err = q.findFit(q.newPick(o, removing), Order(r.IntN(2)), limits())
			require.NoError(t, err)
			others = append(others, o)
		}
		// Its commit tells whether it was alone: a group hands what it
		// remembers (its one-row reads, its directory decoded, the cells'
		// head slots) to the next (carried).
		a := claims.Begin(carryLog{log})
		if several {
			a.Several()
		}
		log.on = true
		for i := range 2 + r.IntN(sh.picks-1) {
			order := Order(r.IntN(4) / 3)
			lim := limits()
			var took []Item
			var what string
			switch x := r.IntN(20); {
			case x < 11:
				it, ok, err := q.PopFit(a, order, lim)
				require.NoError(t, err)
				if ok {
					took = append(took, it)
				}
				what = "pop"
			case x < 13:
				took, err = q.PopFitN(a, order, lim, 2+r.IntN(40))
				require.NoError(t, err)
				what = "popn"
			case x < 15:
				took, err = q.Lease(a, LeaseRequest{Order: order, Limits: lim, N: 1 + r.IntN(2), For: time.Duration(1+r.IntN(3)) * time.Second})
				require.NoError(t, err)
				leased = append(leased, took...)
				what = "lease"
			case x < 16:
				it, ok, err := q.Pop(a, order)
				require.NoError(t, err)
				if ok {
					took = append(took, it)
				}
				what = "plainpop"
			case x < 17:
				id := 1 + r.Int64N(nextID)
				it, ok, err := q.Remove(a, id)
				require.NoError(t, err)
				if ok {
					took = append(took, it)
				}
				what = fmt.Sprintf("remove %d", id)
			case x < 18 && len(leased) > 0:
				it := leased[len(leased)-1]
				leased = leased[:len(leased)-1]
				ok, err := q.Ack(a, it.ID, it.Lease)
				require.NoError(t, err)
				what = fmt.Sprintf("ack %d %v", it.ID, ok)
			default:
				it := task(r.IntN(3) == 0)
				if r.IntN(2) == 0 {
					it.Priority = -1 // before every other
				}
				require.NoError(t, q.Push(a, it))
				what = "push"
			}
			if r.IntN(4) == 0 {
				clock = clock.Add(time.Second)
			}
			if a.items != nil {
				shared++
			}
			log.logPick(t, out, step, i, what, order, lim, took)
		}
		log.endGroup(t, out, step, a)
		for _, o := range others {
			o.Cancel()
			o.Release(false)
		}
	}
	require.NoError(t, db.ReadTransact(context.Background(), func(tr kv.ReadTransaction) error { return q.Check(tr) }))
	if several {
		require.Positive(t, claims.adopted.Load(), "no group took over the reads of the one before")
	}
	return shared
}

// logPick writes a pick's line to out: what it took, and the read
// conflicts so far.
func (l *conflictLog) logPick(t *testing.T, out *strings.Builder, step, i int, what string, order Order, limits []int64, took []Item) {
	ids := make([]int64, len(took))
	for j, it := range took {
		ids[j] = it.ID
	}
	so, err := l.conflicts()
	require.NoError(t, err)
	fmt.Fprintf(out, "step %d pick %d %s %v %v: %v conflicts %x\n", step, i, what, order, limits, ids, digest(so))
}

// endGroup writes what the group's attempt a cleared, commits it and lets
// the attempt go.
func (l *conflictLog) endGroup(t *testing.T, out *strings.Builder, step int, a *Attempt) {
	l.on = false
	fmt.Fprintf(out, "step %d cleared %s\n", step, strings.Join(l.cleared, " "))
	require.NoError(t, l.Commit())
	a.Release(true)
}
