package queues_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/queues"
)

// orderCases are the three queue orders a fit pop scans in: FIFO, and a
// priority queue in Min and Max order. prio maps a priority given for
// Max order to one that sorts the same way in the case's order.
var orderCases = []struct {
	name  string
	kind  queues.Kind
	order queues.Order
	prio  func(int64) int64
}{
	{"fifo", queues.FIFO, queues.Min, func(int64) int64 { return 0 }},
	{"min", queues.Priority, queues.Min, func(p int64) int64 { return -p }},
	{"max", queues.Priority, queues.Max, func(p int64) int64 { return p }},
}

// TestFitPopConflictsWithPushIntoItsScan: a fit pop that read items that
// do not fit before its answer conflicts with a concurrent push of a
// fitting item anywhere before its answer in queue order (between the
// items it rejected, or above them in Max order), and with one anywhere at
// all when nothing fit; a push of a worse item does not stop it.
func TestFitPopConflictsWithPushIntoItsScan(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		nothing  bool  // the pop's limits fit nothing queued
		prio     int64 // the pushed item's, in Max order
		conflict bool
	}{
		{"above every rejected item", false, 10, true},
		{"behind the first rejected item", false, 9, true},
		{"between rejected items", false, 8, true},
		{"behind the last rejected item", false, 7, true},
		{"below the answer", false, 4, false},
		{"nothing fits, pushed first", true, 10, true},
		{"nothing fits, pushed last", true, 0, true},
	}
	for _, oc := range orderCases {
		for _, c := range cases {
			if oc.kind == queues.FIFO && c.prio != 4 && !c.nothing {
				continue // a FIFO push only lands behind everything
			}
			t.Run(fmt.Sprintf("%s/%s", oc.name, c.name), func(t *testing.T) {
				t.Parallel()
				db, q := setup(t, oc.kind, "cpu", "mem")
				push(t, db, q, oc.prio(9), "rejected 1", 4, 10)
				push(t, db, q, oc.prio(7), "rejected 2", 8, 10)
				answer := "answer"
				limits := []int64{1, 10}
				if c.nothing {
					answer, limits = "", []int64{1, 5}
				}
				push(t, db, q, oc.prio(5), answer, 1, 10)

				popper, err := db.CreateTransaction(bg)
				require.NoError(t, err)
				defer popper.Cancel()
				it, ok, err := q.PopFit(popper, oc.order, limits)
				require.NoError(t, err)
				require.Equal(t, !c.nothing, ok)
				require.Equal(t, answer, string(it.Value))
				if c.nothing {
					// A pop that takes nothing writes nothing, and a
					// transaction that writes nothing commits as of its
					// reads; the statement around it writes (a receipt).
					popper.Set(append(q.Range().End, "receipt"...), nil)
				}

				push(t, db, q, oc.prio(c.prio), "pushed", 1, 1)
				err = popper.Commit()
				if c.conflict {
					require.ErrorIs(t, err, kv.ErrNotCommitted)
				} else {
					require.NoError(t, err)
				}
			})
		}
	}
}
