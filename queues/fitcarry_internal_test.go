package queues

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// TestCarriedReadsChooseAndConflictAsFresh: an attempt of several pops
// that committed alone hands what it remembers (its one-row reads, its
// read of the cell directory) to the next attempt of several pops that
// reads at its commit (firsts.go, carried). Its pops must take the same
// rows, clear the same directory keys and add the same read conflicts as
// the same pops in attempts that start with nothing: fitScenario's
// queues, groups of 1 to 6 fit pops, each group one attempt; before some
// groups a push commits (what the last group remembers is stale: the
// next must not take it over), during some a push commits (the group's
// commit is not alone, or conflicts). The same holds for attempts that do
// not say they run several (carryAlone), whose first fit pop decides.
func TestCarriedReadsChooseAndConflictAsFresh(t *testing.T) {
	for _, several := range []bool{true, false} {
		t.Run(fmt.Sprintf("several=%v", several), func(t *testing.T) {
			eachKindAndSeed(t, func(t *testing.T, kind Kind, seed uint64) {
				var fresh, carried strings.Builder
				carryScenario(t, &fresh, kind, seed, several, false)
				adopted, refused := carryScenario(t, &carried, kind, seed, several, true)
				require.Equal(t, fresh.String(), carried.String())
				require.Greater(t, adopted, int64(20), "few groups took over the reads of the one before")
				require.Positive(t, refused, "no group found the reads carried to it stale")
			})
		})
	}
}

// eachKindAndSeed runs f in parallel subtests, for priority and FIFO
// queues and seeds 1 to 3.
func eachKindAndSeed(t *testing.T, f func(t *testing.T, kind Kind, seed uint64)) {
	t.Parallel()
	for _, kind := range []Kind{Priority, FIFO} {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("%v/seed=%d", kind, seed), func(t *testing.T) {
				t.Parallel()
				f(t, kind, seed)
			})
		}
	}
}

// carryLog is a conflictLog whose commit tells whether it was alone, as
// the engine's transaction does (committedAlone): its attempts carry what
// they remember to the next.
type carryLog struct{ *conflictLog }

func (l carryLog) CommittedAlone() (int64, bool) {
	return l.Transaction.(committedAlone).CommittedAlone()
}

// carryScenario runs groups of fit pops on kind's and seed's queue of
// fitScenario, each group one attempt (of several pops, if several),
// carrying reads from one to the next or not, and writes a line per group: what each pop
// took and the conflicts so far, the keys cleared, the group's conflicts
// and its commit's outcome. It returns how many attempts took over the
// reads carried to them, and how many found them stale.
func carryScenario(t *testing.T, out *strings.Builder, kind Kind, seed uint64, several, carry bool) (adopted, refused int64) {
	db, q, r, task := pinnedQueue(t, kind, seed)
	defer db.Close()
	push := func() {
		require.NoError(t, db.Transact(context.Background(), func(tr kv.Transaction) error {
			_, err := q.PushAll(tr, Token{}, []Item{task()})
			return err
		}))
	}
	claims := NewClaims()
	for step := range 100 {
		order := Order(r.IntN(2))
		pops := 1 + r.IntN(6)
		between := r.IntN(5) // 0: a push before the group, 1: during it
		if between == 0 {
			push()
		}
		tr, err := db.CreateTransaction(context.Background())
		require.NoError(t, err)
		log := &conflictLog{Transaction: tr, atIssue: true}
		var in kv.Transaction = log
		if carry {
			in = carryLog{log}
		}
		a := claims.Begin(in)
		if several {
			a.Several()
		}
		log.on = true
		var took []string
		for i := range pops {
			limits := severalLimits[r.IntN(len(severalLimits))]
			it, ok, err := q.PopFit(a, order, limits)
			require.NoError(t, err)
			so, err := log.conflicts()
			require.NoError(t, err)
			took = append(took, fmt.Sprintf("%v:%v:%d:%x", limits, ok, it.ID, digest(so)))
			if between == 1 && i == 0 {
				push()
			}
		}
		log.on = false
		conflicts, err := log.conflicts()
		require.NoError(t, err)
		err = tr.Commit()
		fmt.Fprintf(out, "step %d %s: took %s cleared %s conflicts %d %x commit %d\n",
			step, []string{"min", "max"}[order], strings.Join(took, " "), strings.Join(log.cleared, " "), len(conflicts), digest(conflicts), kv.Code(err))
		a.Release(err == nil)
		tr.Cancel()
	}
	require.NoError(t, db.ReadTransact(context.Background(), func(tr kv.ReadTransaction) error { return q.Check(tr) }))
	return claims.adopted.Load(), claims.refused.Load()
}
