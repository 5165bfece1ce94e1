package exec_test

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/exec"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/parser"
	"github.com/fdbqueue/fdbqueue/queues"
	"github.com/fdbqueue/fdbqueue/tuple"
)

var bg = context.Background()

// newExec returns an executor over a private in-memory engine.
func newExec(t *testing.T, root []byte) *exec.Executor {
	t.Helper()
	db := embedded.Open("", embedded.Config{})
	t.Cleanup(func() { _ = db.Close() })
	return exec.New(db, root)
}

// run runs one autocommit statement.
func run(t *testing.T, e *exec.Executor, sql string, args ...any) (*exec.Result, error) {
	t.Helper()
	p, err := parser.Parse(sql)
	require.NoError(t, err, sql)
	return e.Auto(bg, p, exec.Args{Positional: args})
}

func mustRun(t *testing.T, e *exec.Executor, sql string, args ...any) *exec.Result {
	t.Helper()
	res, err := run(t, e, sql, args...)
	require.NoError(t, err, sql)
	return res
}

// pushRaw stores a row as a program other than this version of exec could
// have: value is the packed tuple of its columns, unchecked.
func pushRaw(t *testing.T, e *exec.Executor, table string, value []byte) int64 {
	t.Helper()
	id := queues.NewID()
	require.NoError(t, e.DB().Transact(bg, func(tr kv.Transaction) error {
		tables, err := e.TablesIn(tr)
		if err != nil {
			return err
		}
		for _, tb := range tables {
			if tb.Name == table {
				return tb.Queue.Push(tr, queues.Item{ID: id, Value: value})
			}
		}
		return exec.ErrNoTable
	}))
	return id
}

// A NaN stored before DOUBLE columns refused it compares as IEEE 754 says:
// unordered, so only != holds.
func TestStoredNaNComparesAsIEEE(t *testing.T) {
	t.Parallel()
	e := newExec(t, []byte("r"))
	mustRun(t, e, "CREATE TABLE fl (v TEXT, f DOUBLE)")
	mustRun(t, e, "INSERT INTO fl VALUES ('zero', 0)")
	pushRaw(t, e, "fl", tuple.Tuple{"nan", math.NaN()}.Pack())

	for where, want := range map[string][]any{
		"f = 0":         {"zero"},
		"f <= 0":        {"zero"},
		"f >= 0":        {"zero"},
		"f < 1":         {"zero"},
		"f > -1":        {"zero"},
		"f != 0":        {"nan"},
		"f != 1":        {"zero", "nan"},
		"f < 'Inf'":     {"zero"},
		"f >= '-Inf'":   {"zero"},
		"v = 'nan'":     {"nan"},
		"f = 0 AND f>0": nil,
	} {
		res := mustRun(t, e, "SELECT v FROM fl WHERE "+where)
		var got []any
		for _, r := range res.Rows {
			got = append(got, r[0])
		}
		require.Equal(t, want, got, where)
	}
	res := mustRun(t, e, "DELETE FROM fl WHERE f = 0")
	require.Equal(t, int64(1), res.RowsAffected, "the NaN row is not = 0")
}
