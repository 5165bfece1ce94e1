package driver_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fdbqueue "github.com/fdbqueue/fdbqueue/driver"
)

// TestErrorsFromTheDriverPackage: a program matches every error it meets
// through the driver package alone.
func TestErrorsFromTheDriverPackage(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("fdbqueue", "memory:")
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec(`CREATE TABLE q (priority INT NOT NULL, v TEXT)`)
	require.NoError(t, err)

	for _, c := range []struct {
		sql  string
		args []any
		want error
	}{
		{"SELEC 1", nil, fdbqueue.ErrSyntax},
		{"CREATE INDEX i ON q (v)", nil, fdbqueue.ErrUnsupported},
		{"SELECT * FROM missing", nil, fdbqueue.ErrNoTable},
		{"CREATE TABLE q (v TEXT)", nil, fdbqueue.ErrTableExists},
		{"SELECT nope FROM q", nil, fdbqueue.ErrUnknownColumn},
		{"CREATE TABLE r (v DECIMAL(10,2))", nil, fdbqueue.ErrUnsupported},
		{"INSERT INTO q (priority, v) VALUES (?, ?)", []any{1}, fdbqueue.ErrArgs},
		{"INSERT INTO q (priority, v) VALUES (1, ?)", []any{"\xff"}, fdbqueue.ErrValue},
	} {
		_, err := db.Exec(c.sql, c.args...)
		require.ErrorIs(t, err, c.want, c.sql)
	}

	_, err = db.Exec(`INSERT INTO q (priority, v) VALUES (1, 'a'), (2, ?)`, "\xff")
	var rowErr *fdbqueue.RowError
	require.True(t, errors.As(err, &rowErr), "%v", err)
	require.Equal(t, 2, rowErr.Row)

	tx, err := db.BeginTx(context.Background(), &sql.TxOptions{ReadOnly: true})
	require.NoError(t, err)
	_, err = tx.Exec(`INSERT INTO q (priority, v) VALUES (1, 'a')`)
	require.ErrorIs(t, err, fdbqueue.ErrReadOnly)
	require.NoError(t, tx.Rollback())
}

// TestCommitTooLargeSaysWhatToDo: an explicit transaction past the 10 MB
// limit fails at COMMIT with the limit's error and what to do instead.
func TestCommitTooLargeSaysWhatToDo(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("fdbqueue", "memory:")
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec(`CREATE TABLE q (v BLOB)`)
	require.NoError(t, err)
	tx, err := db.Begin()
	require.NoError(t, err)
	big := []byte(strings.Repeat("x", 90_000))
	for range 120 {
		_, err = tx.Exec(`INSERT INTO q (v) VALUES (?)`, big)
		require.NoError(t, err)
	}
	err = tx.Commit()
	require.ErrorIs(t, err, fdbqueue.ErrTransactionTooLarge)
	require.ErrorContains(t, err, "smaller transactions")
	require.False(t, fdbqueue.IsRetryable(err))
	var n int
	require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM q`).Scan(&n))
	require.Zero(t, n)
}

// TestConfigClone: a connector keeps its own copy of the DSN's parameters.
func TestConfigClone(t *testing.T) {
	t.Parallel()
	cfg, err := fdbqueue.ParseDSN("memory:?fault_seed=1")
	require.NoError(t, err)
	c := cfg.Clone()
	cfg.Params["fault_seed"] = "2"
	cfg.Name = "other"
	require.Equal(t, "1", c.Params["fault_seed"])
	require.Equal(t, "", c.Name)
}

// Error texts: one line, the class first, then where, then what was wrong.
func TestErrorTexts(t *testing.T) {
	t.Parallel()
	db := open(t)
	_, err := db.Exec("CREATE TABLE jobs (priority INT NOT NULL, name TEXT)")
	require.NoError(t, err)

	// A context that ends while the statement commits: the engine's
	// transaction_cancelled and the context's error, on one line.
	slow, err := sql.Open("fdbqueue", "memory:?commit_latency=200ms")
	require.NoError(t, err)
	t.Cleanup(func() { _ = slow.Close() })
	_, err = slow.Exec("CREATE TABLE jobs (priority INT NOT NULL, name TEXT)")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = slow.ExecContext(ctx, "INSERT INTO jobs (priority, name) VALUES (1, 'x')")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NotContains(t, err.Error(), "\n", "one line: %q", err)

	for _, tc := range []struct {
		sql  string
		args []any
		is   error
		want string
	}{
		{"SELECT * FROM jobs WHERE id = 'abc'", nil, fdbqueue.ErrValue, "fdbqueue: invalid value: WHERE id =: column id is INT; got string abc"},
		{"INSERT INTO jobs (priority, name, _visible_at) VALUES (1, 'x', NOW() + INTERVAL ? HOUR)", []any{1e9}, fdbqueue.ErrValue, "fdbqueue: invalid value: row 1: INTERVAL 1e+09: out of range"},
		{"INSERT INTO jobs (priority, name) VALUES (1, 'x'), ('y', 'x')", nil, fdbqueue.ErrValue, "fdbqueue: invalid value: row 2: column priority is INT"},
		{"UPDATE jobs SET priority = 2 WHERE id = NULL", nil, fdbqueue.ErrValue, "WHERE id = NULL: a row's id is never NULL"},
		{"UPDATE jobs SET _visible_at = NOW() WHERE id = ? AND _lease = ?", []any{1, nil}, fdbqueue.ErrValue, "WHERE _lease = NULL: a row's _lease is never NULL"},
	} {
		_, err := db.Exec(tc.sql, tc.args...)
		require.ErrorIs(t, err, tc.is, tc.sql)
		require.ErrorContains(t, err, tc.want, tc.sql)
	}
}

// The same mistake gets the same class whether the number is written in
// the statement or bound to a placeholder.
func TestLiteralAndBoundOutOfRangeAgree(t *testing.T) {
	t.Parallel()
	db := open(t)
	_, err := db.Exec("CREATE TABLE jobs (priority INT NOT NULL, name TEXT)")
	require.NoError(t, err)
	for _, tc := range []struct {
		literal, bound string
		arg            any
	}{
		{"SELECT name FROM jobs LIMIT 1 FOR LEASE 0", "SELECT name FROM jobs LIMIT 1 FOR LEASE ?", 0},
		{"SELECT name FROM jobs LIMIT 1 FOR LEASE -1", "SELECT name FROM jobs LIMIT 1 FOR LEASE ?", -1},
		{"SELECT name FROM jobs LIMIT 1 FOR POP WAIT 301", "SELECT name FROM jobs LIMIT 1 FOR POP WAIT ?", 301},
		{"SELECT name FROM jobs LIMIT 1 FOR LEASE 30 WAIT 301", "SELECT name FROM jobs LIMIT 1 FOR LEASE 30 WAIT ?", 301},
	} {
		var name string
		err := db.QueryRow(tc.literal).Scan(&name)
		require.ErrorIs(t, err, fdbqueue.ErrValue, tc.literal)
		err = db.QueryRow(tc.bound, tc.arg).Scan(&name)
		require.ErrorIs(t, err, fdbqueue.ErrValue, "%s with %v", tc.bound, tc.arg)
	}
}
