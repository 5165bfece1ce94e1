package queues

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// TestSeveralPopsChooseAndConflictAsAlone: an attempt that runs several
// pops (Attempt.Several: a combined group of statements) remembers its
// reads from its first pick, and reads the cell directory once, whole,
// for all its searches. On an engine that answers a read when it is issued
// (memory: and file:, where it does so), its pops must take the same
// rows, clear the same directory keys and add the same read conflicts as
// the same pops in an attempt that does not: fitScenario's queues, groups
// of 2 to 8 fit pops in one transaction, some beside another attempt that
// claimed a row, some emptying a cell (and clearing its directory key)
// before the group's next search.
func TestSeveralPopsChooseAndConflictAsAlone(t *testing.T) {
	t.Parallel()
	for _, kind := range []Kind{Priority, FIFO} {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("%v/seed=%d", kind, seed), func(t *testing.T) {
				t.Parallel()
				var alone, several strings.Builder
				clearsAlone := severalScenario(t, &alone, kind, seed, false)
				clearsSeveral := severalScenario(t, &several, kind, seed, true)
				require.Equal(t, alone.String(), several.String())
				require.Equal(t, clearsAlone, clearsSeveral)
				require.Positive(t, clearsSeveral, "no group cleared a directory key before its next search")
			})
		}
	}
}

// severalLimits are fitLimitsPinned and limits whose first coordinate
// lies between the cells' (1..8, 20..21, 30..60) or past them all, where
// a skip-scan of the directory ends with a read that finds nothing.
var severalLimits = append([][]int64{{10, 1000}, {25, 50}, {100, 1 << 40}}, fitLimitsPinned...)

// severalScenario runs groups of fit pops on kind's and seed's queue of
// fitScenario, each group one attempt, Several or not, and writes a line
// per group: what each pop took, and the keys cleared and the read
// conflicts of the whole group. It returns how many groups cleared a
// directory key before another search.
func severalScenario(t *testing.T, out *strings.Builder, kind Kind, seed uint64, several bool) (clearedBefore int) {
	db, q, r, _ := pinnedQueue(t, kind, seed)
	defer db.Close()
	claims := NewClaims()
	for step := range 60 {
		order := Order(r.IntN(2))
		pops := 2 + r.IntN(7)
		beside := r.IntN(2) == 0
		tr, err := db.CreateTransaction(context.Background())
		require.NoError(t, err)
		log := &conflictLog{Transaction: tr, atIssue: true}
		var other *Attempt
		if beside {
			otr, err := db.CreateTransaction(context.Background())
			require.NoError(t, err)
			other = claims.Begin(otr)
			_, _, _, err = q.findFit(q.newPick(other, removing), order, fitLimitsPinned[r.IntN(len(fitLimitsPinned))])
			require.NoError(t, err)
		}
		a := claims.Begin(log)
		if several {
			a.Several()
		}
		log.on = true
		var took []string
		for i := range pops {
			limits := severalLimits[r.IntN(len(severalLimits))]
			cleared := len(log.cleared)
			it, ok, err := q.PopFit(a, order, limits)
			require.NoError(t, err)
			// The conflicts so far, after each pop: the same union is the
			// same conflicts.
			so, err := log.conflicts()
			require.NoError(t, err)
			took = append(took, fmt.Sprintf("%v:%v:%d:%x", limits, ok, it.ID, digest(so)))
			if len(log.cleared) > cleared && i < pops-1 {
				clearedBefore++
			}
		}
		log.on = false
		conflicts, err := log.conflicts()
		require.NoError(t, err)
		fmt.Fprintf(out, "step %d %s beside=%v: took %s cleared %s conflicts %d %x\n",
			step, []string{"min", "max"}[order], beside, strings.Join(took, " "), strings.Join(log.cleared, " "), len(conflicts), digest(conflicts))
		require.NoError(t, tr.Commit())
		a.Release(true)
		if other != nil {
			other.Cancel()
			other.Release(false)
		}
	}
	require.NoError(t, db.ReadTransact(context.Background(), func(tr kv.ReadTransaction) error { return q.Check(tr) }))
	return clearedBefore
}
