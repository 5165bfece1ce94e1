package queues_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/queues"
)

// TestFitPopConflictsWithPushIntoStraddlingCorner: with limits at a
// straddling cell's lower bound (mem 1024, the cell 1024..1151), the only
// shape of the cell that fits is its corner, which a fit pop reads for
// the cell instead of scanning the cell's entries that do not fit. A
// concurrent push of a better fitting task into that corner conflicts
// with the pop, whether the corner was empty, held a worse task, held the
// task the pop took, or nothing fit at all.
func TestFitPopConflictsWithPushIntoStraddlingCorner(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		whole       bool  // a task in a whole cell, priority 5, fits
		cornerPrio  int64 // a task in the corner, if not 0
		answer      string
		pushedPrio  int64
		noneForFIFO bool // the case holds in FIFO order (nothing better can land elsewhere)
	}{
		{name: "corner empty", whole: true, answer: "whole", pushedPrio: 7},
		{name: "corner holds a worse task", whole: true, cornerPrio: 3, answer: "whole", pushedPrio: 7},
		{name: "corner holds the answer", whole: true, cornerPrio: 6, answer: "corner", pushedPrio: 7},
		{name: "nothing fits", answer: "", pushedPrio: 1, noneForFIFO: true},
	}
	limits := []int64{2, 1024}
	for _, oc := range orderCases {
		for _, c := range cases {
			if oc.kind == queues.FIFO && !c.noneForFIFO {
				continue // a FIFO push only lands behind everything
			}
			t.Run(fmt.Sprintf("%s/%s", oc.name, c.name), func(t *testing.T) {
				t.Parallel()
				db, q := setup(t, oc.kind, "cpu", "mem")
				// More than step 1 reads of tasks of the straddling cells
				// that do not fit, ahead of everything in queue order, at
				// two priorities: step 1's reads, which a plain transaction
				// keeps in its read conflicts, and the straddling cells'
				// first entries do not cover the pushed task, which lands
				// below them.
				var sediment []queues.Item
				for i := range 200 {
					sediment = append(sediment, queues.Item{ID: queues.NewID(), Priority: oc.prio(8 + int64(i%2)),
						Resources: []int64{1 + int64(i/2%2), 1025 + int64(i%127)}, Value: []byte("too big")})
				}
				require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
					_, err := q.PushAll(tr, queues.Token{}, sediment)
					return err
				}))
				if c.whole {
					push(t, db, q, oc.prio(5), "whole", 1, 512)
				}
				if c.cornerPrio != 0 {
					push(t, db, q, oc.prio(c.cornerPrio), "corner", 2, 1024)
				}

				popper, err := db.CreateTransaction(bg)
				require.NoError(t, err)
				defer popper.Cancel()
				it, ok, err := q.PopFit(popper, oc.order, limits)
				require.NoError(t, err)
				require.Equal(t, c.answer != "", ok)
				require.Equal(t, c.answer, string(it.Value))
				if !ok {
					// A transaction that writes nothing commits as of its
					// reads; the statement around it writes (a receipt).
					popper.Set(append(q.Range().End, "receipt"...), nil)
				}

				push(t, db, q, oc.prio(c.pushedPrio), "pushed", 1, 1024)
				require.ErrorIs(t, popper.Commit(), kv.ErrNotCommitted)
			})
		}
	}
}

// TestFitPopCornerSameAsScan: on queues of tasks around the cells of mem
// 96..127 and 1024..1279, fit pops with limits at the cells' lower bounds
// (where a straddling cell is resolved through its corner) and off them
// take the best fitting task in queue order, as a scan of the queue does,
// until the queue is empty.
func TestFitPopCornerSameAsScan(t *testing.T) {
	t.Parallel()
	for _, oc := range orderCases {
		t.Run(oc.name, func(t *testing.T) {
			t.Parallel()
			db, q := setup(t, oc.kind, "cpu", "mem")
			var items []queues.Item
			for i := range 600 {
				mem := []int64{96 + int64(i*7%32), 1024 + int64(i*13%256)}[i%2]
				items = append(items, queues.Item{ID: int64(i + 1), Priority: oc.prio(int64(i * 5 % 7)),
					Resources: []int64{1 + int64(i%3), mem}, Value: fmt.Append(nil, i+1)})
			}
			require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
				_, err := q.PushAll(tr, queues.Token{}, items)
				return err
			}))
			limitSets := [][]int64{{2, 1024}, {3, 1152}, {1, 104}, {2, 96}, {3, 1100}, {2, 120}, {3, 1280}}
			for step := 0; ; step++ {
				limits := limitSets[step%len(limitSets)]
				var want, got string
				var wantOK, gotOK bool
				require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
					ok, err := naivePeekFit(tr, q, oc.order, limits, &want)
					wantOK = ok
					return err
				}))
				require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
					it, ok, err := q.PopFit(tr, oc.order, limits)
					got, gotOK = string(it.Value), ok
					return err
				}))
				require.Equal(t, wantOK, gotOK, "step %d limits %v", step, limits)
				require.Equal(t, want, got, "step %d limits %v", step, limits)
				if !gotOK && limits[0] == 3 && limits[1] == 1280 {
					break // the largest limits fit every task: the queue is empty
				}
			}
		})
	}
}

// naivePeekFit sets *val to the value of the first task in order that fits
// limits, reading the queue in order.
func naivePeekFit(tr kv.Transaction, q *queues.Queue, order queues.Order, limits []int64, val *string) (bool, error) {
	ok := false
	err := q.Scan(tr, order, func(it queues.Item) (bool, error) {
		for i, r := range it.Resources {
			if r > limits[i] {
				return true, nil
			}
		}
		*val, ok = string(it.Value), true
		return false, nil
	})
	return ok, err
}
