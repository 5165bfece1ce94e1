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

// TestPromoteOneRowAsBatch: where reads are answered when issued, a pop
// or lease looks for a due item with a one-row read first (promotion);
// it must promote what the batch read alone promotes: items delayed or
// leased by other transactions and by the pop's own (due exactly now,
// or before, several at once, past promoteBatch), in FIFO and priority
// queues. The same sequence runs with reads answered when issued and
// not, and must take the same items, with the same read conflicts.
func TestPromoteOneRowAsBatch(t *testing.T) {
	t.Parallel()
	for _, kind := range []Kind{Priority, FIFO} {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("%v/seed=%d", kind, seed), func(t *testing.T) {
				t.Parallel()
				var issued, waited strings.Builder
				promoteScenario(t, &issued, kind, seed, true)
				promoteScenario(t, &waited, kind, seed, false)
				require.Equal(t, waited.String(), issued.String())
				require.Contains(t, issued.String(), "moved", "nothing was promoted")
			})
		}
	}
}

// clockedQueue opens a memory database (closed with the test) and a
// queue in it named name, of kind and resources, whose clock reads the
// time the returned pointer holds (2027-01-15, moved by the test).
func clockedQueue(t *testing.T, name string, kind Kind, resources ...string) (kv.Database, *Queue, *time.Time) {
	db := embedded.Open("", embedded.Config{RetryLimit: -1})
	t.Cleanup(func() { _ = db.Close() })
	clock := time.Unix(1_800_000_000, 0)
	q := New(tuple.Tuple{name, int64(kind)}.Pack(), kind, resources...).
		WithOptions(Options{Clock: func() time.Time { return clock }})
	return db, q, &clock
}

func promoteScenario(t *testing.T, out *strings.Builder, kind Kind, seed uint64, atIssue bool) {
	db, q, clock := clockedQueue(t, "promote", kind, "cpu")
	r := rand.New(rand.NewPCG(seed, 5))
	nextID := int64(0)
	item := func(delay time.Duration) Item {
		nextID++
		it := Item{ID: nextID, Priority: r.Int64N(4), Resources: []int64{1 + r.Int64N(8)}, Value: fmt.Append(nil, nextID)}
		if delay > 0 {
			it.VisibleAt = clock.Add(delay)
		}
		return it
	}
	claims := NewClaims()
	for step := range 120 {
		var items []Item
		for range r.IntN(4) {
			items = append(items, item(0))
		}
		switch r.IntN(4) {
		case 0: // several due at once, or past a batch
			for range []int{3, promoteBatch + 5}[r.IntN(2)] {
				items = append(items, item(time.Duration(1+r.IntN(3))*time.Second))
			}
		case 1:
			items = append(items, item(time.Second))
		}
		if len(items) > 0 {
			require.NoError(t, db.Transact(context.Background(), func(tr kv.Transaction) error {
				_, err := q.PushAll(tr, Token{}, items)
				return err
			}))
		}
		if r.IntN(3) == 0 {
			*clock = clock.Add(time.Duration(r.IntN(2001)) * time.Millisecond) // due exactly now, sometimes
		}
		tr, err := db.CreateTransaction(context.Background())
		require.NoError(t, err)
		log := &conflictLog{Transaction: tr, atIssue: atIssue}
		var in kv.Transaction = log
		if !atIssue {
			in = waitsLog{log}
		}
		a := claims.Begin(in)
		log.on = true
		var did []string
		limits := []int64{1 + r.Int64N(8)}
		switch r.IntN(4) {
		case 0:
			// A lease of this transaction falls due before its pop.
			its, err := q.Lease(a, LeaseRequest{Order: Order(r.IntN(2)), Limits: limits, N: 1 + r.IntN(2), For: time.Second})
			require.NoError(t, err)
			for _, it := range its {
				did = append(did, fmt.Sprintf("lease %d", it.ID))
			}
			*clock = clock.Add(time.Second)
			fallthrough
		case 1:
			it, ok, err := q.PopFit(a, Order(r.IntN(2)), limits)
			require.NoError(t, err)
			did = append(did, fmt.Sprintf("pop %v %d", ok, it.ID))
		case 2:
			its, err := q.PopFitN(a, Order(r.IntN(2)), limits, 1+r.IntN(3))
			require.NoError(t, err)
			for _, it := range its {
				did = append(did, fmt.Sprintf("pop %d", it.ID))
			}
		default:
			its, err := q.Lease(a, LeaseRequest{Order: Order(r.IntN(2)), Limits: limits, N: 1 + r.IntN(3), For: time.Duration(1+r.IntN(2)) * time.Second})
			require.NoError(t, err)
			for _, it := range its {
				did = append(did, fmt.Sprintf("lease %d", it.ID))
			}
		}
		log.on = false
		conflicts, err := log.conflicts()
		require.NoError(t, err)
		var hidden int
		_, err = q.ScanHidden(tr, Min, time.Time{}, func(Item) (bool, error) { hidden++; return true, nil })
		require.NoError(t, err)
		err = tr.Commit()
		moved := ""
		if strings.Contains(strings.Join(log.cleared, " "), fmt.Sprintf("%x", q.sub[tagDue])) {
			moved = " moved"
		}
		fmt.Fprintf(out, "step %d: %s hidden %d%s conflicts %x commit %d\n", step, strings.Join(did, ", "), hidden, moved, digest(conflicts), kv.Code(err))
		a.Release(err == nil)
		tr.Cancel()
	}
	require.NoError(t, db.ReadTransact(context.Background(), func(tr kv.ReadTransaction) error { return q.Check(tr) }))
}

// waitsLog is a conflictLog whose snapshot view, too, says that reads wait
// for their answers (kv.AnswersAtIssue), as FoundationDB's does.
type waitsLog struct{ *conflictLog }

func (l waitsLog) Snapshot() kv.ReadTransaction { return waitsSnap{l.conflictLog.Snapshot()} }

type waitsSnap struct{ kv.ReadTransaction }

func (waitsSnap) AnswersAtIssue() bool { return false }
