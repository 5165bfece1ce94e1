package exec_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/exec"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/parser"
)

// popTable creates t, a priority table of n rows, priorities 0 to n-1,
// and returns their ids in pop order.
func popTable(t *testing.T, e *exec.Executor, n int) []any {
	t.Helper()
	mustRun(t, e, "CREATE TABLE t (priority INT NOT NULL)")
	for i := range n {
		mustRun(t, e, "INSERT INTO t VALUES (?)", int64(i))
	}
	return idsLeft(t, e)
}

// popIDs runs an autocommit pop of up to n rows of t, selecting id.
func popIDs(t *testing.T, e *exec.Executor, n int) (*exec.Result, []any) {
	t.Helper()
	res := mustRun(t, e, "SELECT id FROM t ORDER BY priority LIMIT ? FOR POP", int64(n))
	var ids []any
	for _, r := range res.Rows {
		ids = append(ids, r[0])
	}
	return res, ids
}

func idsLeft(t *testing.T, e *exec.Executor) []any {
	t.Helper()
	var ids []any
	for _, r := range mustRun(t, e, "SELECT id FROM t ORDER BY priority").Rows {
		ids = append(ids, r[0])
	}
	return ids
}

// TestPutBack: PutBack returns the rows of an autocommit pop from the
// given one on, whatever the context it is given (its end is not the
// put-back's), and only those: not a second time, not the rows of a pop
// in the caller's transaction, not into a table dropped (and created
// again) since.
func TestPutBack(t *testing.T) {
	t.Parallel()
	e := newExec(t, []byte("r"))
	all := popTable(t, e, 4)

	res, ids := popIDs(t, e, 3)
	require.Equal(t, all[:3], ids)
	ended, cancel := context.WithCancel(bg)
	cancel()
	require.NoError(t, e.PutBack(ended, res, 1))
	require.Equal(t, all[1:], idsLeft(t, e))
	require.NoError(t, e.PutBack(bg, res, 3), "none from the 3rd on")
	require.Equal(t, all[1:], idsLeft(t, e))

	// In the caller's transaction: the pop is the caller's.
	p, err := parser.Parse("SELECT id FROM t ORDER BY priority LIMIT 2 FOR POP")
	require.NoError(t, err)
	var inTx *exec.Result
	require.NoError(t, e.DB().Transact(bg, func(tr kv.Transaction) error {
		inTx, err = e.Exec(tr, p, exec.Args{})
		return err
	}))
	require.Len(t, inTx.Rows, 2)
	require.NoError(t, e.PutBack(bg, inTx, 0))
	require.Equal(t, all[3:], idsLeft(t, e))

	// A table dropped since: its rows went with it.
	res, _ = popIDs(t, e, 1)
	mustRun(t, e, "DROP TABLE t")
	mustRun(t, e, "CREATE TABLE t (priority INT NOT NULL)")
	require.NoError(t, e.PutBack(bg, res, 0))
	require.Empty(t, idsLeft(t, e), "not into the new table t")
}

// TestPutBackFails: a put-back that cannot run (the engine is closed)
// says that the rows are lost, and which.
func TestPutBackFails(t *testing.T) {
	t.Parallel()
	e := newExec(t, []byte("r"))
	popTable(t, e, 3)
	res, ids := popIDs(t, e, 3)
	require.NoError(t, e.DB().Close())
	err := e.PutBack(bg, res, 1)
	require.ErrorIs(t, err, exec.ErrPutBack)
	require.ErrorContains(t, err, fmt.Sprintf("2 rows of t (ids [%d %d])", ids[1], ids[2]))
	require.ErrorContains(t, err, "are lost")
}

// TestPopSettledAfterUnknownOutcome: a pop whose context ends while its
// commit is in flight, and whose commit then reports
// commit_unknown_result although it was applied (as FoundationDB reports
// a commit cut short by the context), returns the context's error having
// taken nothing: the rows it took went back to their places.
func TestPopSettledAfterUnknownOutcome(t *testing.T) {
	t.Parallel()
	e := unknownApplied(t)
	all := popTable(t, e, 3)
	popSettled(t, e, "SELECT id FROM t ORDER BY priority LIMIT 2 FOR POP")
	require.Equal(t, all, idsLeft(t, e))
}

// unknownApplied returns an executor on a file: engine whose every commit
// reports commit_unknown_result after it was applied.
func unknownApplied(t *testing.T) *exec.Executor {
	t.Helper()
	db, err := embedded.OpenFile(t.TempDir(), embedded.FileConfig{
		Config: embedded.Config{Faults: &embedded.Faults{UnknownApplied: 1}},
		Sync:   embedded.SyncNone,
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return exec.New(db, []byte("r"))
}

// popSettled runs the pop sql with a context that ends once its commit is
// in flight (on e, unknownApplied), and checks that it was settled: it
// returns the context's error, having taken nothing.
func popSettled(t *testing.T, e *exec.Executor, sql string) {
	t.Helper()
	p, err := parser.Parse(sql)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	res, err := e.Auto(exec.WithQueued(ctx, cancel), p, exec.Args{})
	require.Nil(t, res)
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, kv.IsMaybeCommitted(err), "settled: %v", err)
	require.ErrorContains(t, err, "went back to their places")
}
