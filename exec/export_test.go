package exec

import (
	"sync/atomic"
	"time"
)

// Deterministic makes e number the rows it inserts 1, 2, 3, ... and its
// statement tokens (DDL tokens, pop and DELETE receipts) 1001, 1002, ...,
// and stops its clock at at, so that a test can pin the keys statements
// read and write (testdata/*). Production ids and tokens are random (see
// queues.NewID), which a test cannot pin. It is for tests only: call it
// before e runs any statement.
func (e *Executor) Deterministic(at time.Time) {
	var ids, tokens atomic.Int64
	tokens.Store(1000)
	e.newID = func() int64 { return ids.Add(1) }
	e.newToken = func() int64 { return tokens.Add(1) }
	e.now = func() time.Time { return at }
}
