package queues

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// TestCarriedReadsSurviveOtherWrites: as
// TestCarriedReadsChooseAndConflictAsFresh, with other writes in the
// groups' attempts between their pops (pushes, removals and moves by id,
// now and then every item cleared by range clears): what a group carries
// to the next must have forgotten every read they changed, so that the
// pops take the same rows, clear the same keys and add the same read
// conflicts as with nothing carried.
func TestCarriedReadsSurviveOtherWrites(t *testing.T) {
	eachKindAndSeed(t, func(t *testing.T, kind Kind, seed uint64) {
		var fresh, carried strings.Builder
		carryWritesScenario(t, &fresh, kind, seed, false)
		adopted := carryWritesScenario(t, &carried, kind, seed, true)
		require.Equal(t, fresh.String(), carried.String())
		require.Positive(t, adopted, "no group took over the reads of the one before")
	})
}

// carryWritesScenario is carryScenario with writes other than pops in the
// groups. It returns how many attempts took over the reads carried to
// them.
func carryWritesScenario(t *testing.T, out *strings.Builder, kind Kind, seed uint64, carry bool) int64 {
	db, q, r, task := pinnedQueue(t, kind, seed)
	defer db.Close()
	claims := NewClaims()
	for step := range 150 {
		order := Order(r.IntN(2))
		pops := 2 + r.IntN(6)
		tr, err := db.CreateTransaction(context.Background())
		require.NoError(t, err)
		log := &conflictLog{Transaction: tr, atIssue: true}
		var in kv.Transaction = log
		if carry {
			in = carryLog{log}
		}
		a := claims.Begin(in)
		a.Several()
		log.on = true
		var took []string
		for i := range pops {
			limits := severalLimits[r.IntN(len(severalLimits))]
			it, ok, err := q.PopFit(a, order, limits)
			require.NoError(t, err)
			so, err := log.conflicts()
			require.NoError(t, err)
			took = append(took, fmt.Sprintf("%v:%v:%d:%x", limits, ok, it.ID, digest(so)))
			if i == pops-1 {
				break
			}
			// A write other than a pop, in the same attempt.
			switch w := r.IntN(12); {
			case w < 4:
				_, err = q.PushAll(a, Token{}, []Item{task(), task()})
				took = append(took, "push")
			case w < 7:
				_, ok, err = q.Remove(a, 1+r.Int64N(1300))
				took = append(took, fmt.Sprint("remove:", ok))
			case w < 9 && kind == Priority:
				ok, err = q.Move(a, 1+r.Int64N(1300), r.Int64N(30)-10)
				took = append(took, fmt.Sprint("move:", ok))
			case w == 11 && step%5 == 3:
				q.ClearItems(a)
				_, err = q.PushAll(a, Token{}, []Item{task(), task(), task()})
				took = append(took, "clearitems")
			}
			require.NoError(t, err)
		}
		log.on = false
		conflicts, err := log.conflicts()
		require.NoError(t, err)
		err = tr.Commit()
		fmt.Fprintf(out, "step %d %s: took %s cleared %s conflicts %d %x commit %d\n",
			step, []string{"min", "max"}[order], strings.Join(took, " "), strings.Join(log.cleared, " "), len(conflicts), digest(conflicts), kv.Code(err))
		a.Release(err == nil)
		tr.Cancel()
		if step%10 == 9 {
			// Refill the queue; the next group finds the carry stale.
			require.NoError(t, db.Transact(context.Background(), func(tr kv.Transaction) error {
				items := make([]Item, 20)
				for i := range items {
					items[i] = task()
				}
				_, err := q.PushAll(tr, Token{}, items)
				return err
			}))
		}
		require.NoError(t, db.ReadTransact(context.Background(), func(tr kv.ReadTransaction) error { return q.Check(tr) }))
	}
	return claims.adopted.Load()
}
