package exec_test

import (
	"bytes"
	"context"
	"math"
	"strings"
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

// A stored row that does not decode as its table's columns (written by an
// older version, or another program) fails the statements that read its
// values with an error naming it and how to remove it, never a panic; the
// statements that need no values (COUNT(*), DELETE by id, DELETE ... LIMIT)
// still work, so the rows can be removed and the table read again.
func TestUnreadableRows(t *testing.T) {
	t.Parallel()
	e := newExec(t, []byte("r"))
	mustRun(t, e, "CREATE TABLE u (v TEXT, f DOUBLE)")
	mustRun(t, e, "INSERT INTO u VALUES ('good', 1)")
	// TEXT that is not UTF-8 (refused at insert now) reads back as stored.
	notUTF8 := pushRaw(t, e, "u", tuple.Tuple{"a\xffb", 2.0}.Pack())
	require.Equal(t, [][]any{{"a\xffb"}}, mustRun(t, e, "SELECT v FROM u WHERE id = ?", notUTF8).Rows)
	bad := map[int64]string{
		pushRaw(t, e, "u", tuple.Tuple{"x"}.Pack()):                 "has 1 values for 2 columns",
		pushRaw(t, e, "u", tuple.Tuple{"x", "not a double"}.Pack()): "column f holds string not a double, not DOUBLE",
		pushRaw(t, e, "u", []byte{0x99}):                            "is not a packed tuple",
	}
	count := func() int64 { return mustRun(t, e, "SELECT COUNT(*) FROM u").Rows[0][0].(int64) }
	require.Equal(t, int64(5), count())
	for id, why := range bad {
		_, err := run(t, e, "SELECT * FROM u WHERE id = ?", id)
		require.ErrorIs(t, err, exec.ErrUnreadableRow)
		require.NotErrorIs(t, err, exec.ErrCatalog)
		require.ErrorContains(t, err, why)
		require.ErrorContains(t, err, "DELETE FROM u WHERE id = ")
	}
	for _, q := range []string{"SELECT * FROM u", "SELECT v FROM u WHERE f > 0", "SELECT v FROM u LIMIT 5 FOR POP"} {
		_, err := run(t, e, q)
		require.ErrorIs(t, err, exec.ErrUnreadableRow, q)
	}
	require.Equal(t, int64(5), count(), "a failed pop removes nothing")

	// Remove them: one by id, the rest from the head of the queue.
	var first int64
	for id := range bad {
		first = id
		break
	}
	res := mustRun(t, e, "DELETE FROM u WHERE id = ?", first)
	require.Equal(t, int64(1), res.RowsAffected)
	mustRun(t, e, "INSERT INTO u VALUES ('last', 3)")
	require.Len(t, mustRun(t, e, "SELECT id FROM u").Rows, 5, "ids are listed without decoding rows")
	res = mustRun(t, e, "DELETE FROM u LIMIT 4")
	require.Equal(t, int64(4), res.RowsAffected, "the good row, the one not UTF-8 and the 2 unreadable ones left, in queue order")
	res = mustRun(t, e, "SELECT v, f FROM u")
	require.Equal(t, [][]any{{"last", 3.0}}, res.Rows)
}

// A statement larger than a transaction may be (10 MB of writes and
// conflict ranges) fails with transaction_too_large and says what to do
// instead; a DELETE's advice, batches with LIMIT, works. Keys under a long
// root make each row's removal large, so a few hundred rows are enough.
func TestTooLargeSaysWhatToDo(t *testing.T) {
	t.Parallel()
	e := newExec(t, bytes.Repeat([]byte("r"), 9000))
	mustRun(t, e, "CREATE TABLE big (k INT)")
	const rows, batch = 1000, 100
	fill := func() {
		for i := 0; i < rows; i += batch {
			mustRun(t, e, "INSERT INTO big VALUES "+strings.TrimSuffix(strings.Repeat("(1), ", batch), ", "))
		}
	}
	fill()
	count := func() int64 { return mustRun(t, e, "SELECT COUNT(*) FROM big").Rows[0][0].(int64) }

	for q, hint := range map[string]string{
		"DELETE FROM big WHERE k >= 0":           "delete in batches with DELETE FROM big [WHERE ...] LIMIT n (1000, say, or fewer if that is still too large), repeated until it deletes 0 rows (DELETE FROM big with neither removes every row in one small transaction)",
		"DELETE FROM big LIMIT 100000":           "delete in batches",
		"SELECT k FROM big LIMIT 100000 FOR POP": "pop fewer rows per statement",
		// Twice as many rows: a push files its rows under one run, not an
		// id index key each (queues/runs.go), and 1,000 fit.
		"INSERT INTO big VALUES " + strings.TrimSuffix(strings.Repeat("(1), ", 2*rows), ", "): "insert fewer rows per statement",
	} {
		_, err := run(t, e, q)
		require.ErrorIs(t, err, kv.ErrTransactionTooLarge, q)
		require.Equal(t, 2101, kv.Code(err))
		require.ErrorContains(t, err, hint, q[:min(len(q), 40)])
		require.Equal(t, int64(rows), count(), "nothing applied")
	}

	// The advice: batches with LIMIT, each atomic, until one deletes 0.
	var deleted int64
	for {
		res := mustRun(t, e, "DELETE FROM big WHERE k >= 0 LIMIT 100")
		if res.RowsAffected == 0 {
			break
		}
		deleted += res.RowsAffected
	}
	require.Equal(t, int64(rows), deleted)
	require.Zero(t, count())

	// DELETE FROM t without WHERE or LIMIT is one small transaction
	// whatever the table holds, also inside an explicit transaction.
	fill()
	require.Equal(t, int64(rows), mustRun(t, e, "DELETE FROM big").RowsAffected)
	fill()
	tr, err := e.DB().CreateTransaction(bg)
	require.NoError(t, err)
	p, err := parser.Parse("DELETE FROM big")
	require.NoError(t, err)
	res, err := e.Exec(tr, p, exec.Args{})
	require.NoError(t, err)
	require.Equal(t, int64(rows), res.RowsAffected)
	require.NoError(t, tr.Commit())
	require.Zero(t, count())
}
