package exec

import (
	"strings"

	"github.com/fdbqueue/fdbqueue/parser"
	"github.com/fdbqueue/fdbqueue/queues"
)

// Statistics: the queue recipes keep each table's gauges and most of its
// counters (queues/stats.go); exec counts what only the statement knows,
// why rows went (countTaken, countDeleted): a FOR POP's rows as popped, a
// DELETE's as acked when its WHERE has _lease = v (the holder's ack), as
// deleted otherwise. Each is one atomic ADD in the statement's
// transaction, in the attempt that removes the rows: an attempt that
// finds its receipt (a retry after commit_unknown_result whose first
// attempt committed) counts nothing.

// countTaken counts the rows an attempt of a FOR POP took as popped
// (leases are counted by the queue).
func (s *stmtCtx) countTaken(rows []row) {
	if isPop(s.b.p.Stmt) {
		s.t.Queue.AddStat(s.tr, queues.StatPopped, int64(len(rows)))
	}
}

// countDeleted counts the n rows an attempt of a DELETE removed: acked
// when its WHERE has _lease = v (the holder's ack), deleted otherwise.
func (s *stmtCtx) countDeleted(st *parser.Delete, n int64) {
	stat := queues.StatDeleted
	for _, c := range st.Where {
		if strings.EqualFold(c.Column, parser.ColLease) && c.Op == parser.OpEq {
			stat = queues.StatAcked
		}
	}
	s.t.Queue.AddStat(s.tr, stat, n)
}
