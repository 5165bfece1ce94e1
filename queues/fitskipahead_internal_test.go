package queues

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// waitingTx is a transaction whose reads wait for their answers
// (kv.AnswersAtIssue), as FoundationDB's do, so that a fit pop reads
// ahead; it counts the item rows read through it, not ahead (through the
// snapshot): on FoundationDB, reads that take a round trip of their own.
type waitingTx struct {
	kv.Transaction
	items []byte
	rows  *int
}

func (w waitingTx) AnswersAtIssue() bool { return false }

func (w waitingTx) Snapshot() kv.ReadTransaction { return waitsSnap{w.Transaction.Snapshot()} }

func (w waitingTx) GetRange(r kv.Range, opts kv.RangeOptions) kv.Iterator {
	it := w.Transaction.GetRange(r, opts)
	if bytes.HasPrefix(r.Begin, w.items) {
		return &countedIter{it, w.rows}
	}
	return it
}

type countedIter struct {
	kv.Iterator
	n *int
}

func (c *countedIter) Next() bool {
	ok := c.Iterator.Next()
	if ok {
		*c.n++
	}
	return ok
}

// TestFitPopStepOneAsReadAhead: a single fit pop reads step 1 as far as it
// read it ahead, whatever its hints say by the time it chooses: another
// pop with the same limits may change them in between (here: it skips
// step 1 and ends the run of skips, so the hints say to read step 1
// again). Where the read ahead held no items (step 1 was to be skipped),
// reading step 1 then is a round trip more on FoundationDB; where it held
// sedimentBudget of them, reading on to scanBudget is too.
func TestFitPopStepOneAsReadAhead(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{RetryLimit: -1})
	t.Cleanup(func() { _ = db.Close() })
	q := New(tuple.Tuple{"q", t.Name()}.Pack(), Priority, "cpu")
	require.NoError(t, db.Transact(context.Background(), func(tr kv.Transaction) error {
		for i := range 300 {
			if err := q.Push(tr, Item{ID: int64(i + 1), Resources: []int64{8}, Value: []byte("big")}); err != nil {
				return err
			}
		}
		return q.Push(tr, Item{ID: 1000, Priority: 9, Resources: []int64{1}, Value: []byte("small")})
	}))
	limits := []int64{1}
	var hint [8 * maxIntLen]byte
	key := hintKey(hint[:], Min, limits, 0)
	for _, c := range []struct {
		name        string
		before      missStreak // the hints when the pop reads ahead
		aheadBudget int
	}{
		{"skip, then read", missStreak{misses: 2}, 0},
		{"sediment, then all", missStreak{misses: 1}, sedimentBudget},
	} {
		t.Run(c.name, func(t *testing.T) {
			q.hints.update(key, func(missStreak) missStreak { return c.before })
			require.Equal(t, c.aheadBudget, q.hints.budget(key))
			tr, err := db.CreateTransaction(context.Background())
			require.NoError(t, err)
			defer tr.Cancel()
			rows := 0
			w := waitingTx{tr, q.sub[tagItems], &rows}
			ahead := q.readSingleFitAhead(w, Min, limits)
			// Another pop with the same limits, in between.
			q.hints.update(key, func(m missStreak) missStreak {
				if m.misses == 1 {
					return missStreak{} // it hit: the full budget
				}
				m.skipped++ // it skipped: the run of skips is over
				return m
			})
			require.NotEqual(t, c.aheadBudget, q.hints.budget(key))
			pk := q.newFitPick(w, removing)
			pk.ahead = ahead
			it, _, ok, err := q.findFit(pk, Min, limits)
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, "small", string(it.Value))
			require.Zero(t, rows, "items read past what was read ahead")
		})
	}
}
