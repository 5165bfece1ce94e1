package exec_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/exec"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/parser"
)

// execIn runs one statement in tr, as a statement of an explicit
// transaction.
func execIn(t *testing.T, e *exec.Executor, tr kv.Transaction, sql string, args ...any) (*exec.Result, error) {
	t.Helper()
	p, err := parser.Parse(sql)
	require.NoError(t, err, sql)
	return e.Exec(tr, p, exec.Args{Positional: args})
}

// The unique index's reads conflict exactly with what changes their
// answer: two transactions that insert different values both commit, each
// on its first attempt; of two that insert the same values, the second to
// commit fails with not_committed (1020), and run again it finds the
// first's row. An INSERT IGNORE that skipped a row because its values were
// held conflicts with the removal of the row holding them.
func TestUniqueConflictsOnlyOnTheSameValues(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{})
	t.Cleanup(func() { _ = db.Close() })
	e := exec.New(db, []byte("u"))
	mustRun(t, e, "CREATE TABLE jobs (priority INT NOT NULL, cpu INT NOT NULL, kind TEXT NOT NULL, UNIQUE (kind), INDEX (cpu))")
	mustRun(t, e, "INSERT INTO jobs VALUES (1, 1, 'seed')") // the table's directories exist

	begin := func() kv.Transaction {
		tr, err := db.CreateTransaction(bg)
		require.NoError(t, err)
		t.Cleanup(tr.Cancel)
		return tr
	}

	// Different values: no conflict, whatever the order of the commits.
	a, b := begin(), begin()
	_, err := execIn(t, e, a, "INSERT INTO jobs VALUES (1, 1, 'a')")
	require.NoError(t, err)
	_, err = execIn(t, e, b, "INSERT INTO jobs VALUES (2, 1, 'b')")
	require.NoError(t, err)
	require.NoError(t, b.Commit())
	require.NoError(t, a.Commit())

	// The same values: the second commit conflicts; run again, it is a
	// duplicate of the first's row.
	c, d := begin(), begin()
	res, err := execIn(t, e, c, "INSERT INTO jobs VALUES (1, 1, 'c')")
	require.NoError(t, err)
	first := res.LastInsertID
	_, err = execIn(t, e, d, "INSERT INTO jobs VALUES (1, 1, 'c')")
	require.NoError(t, err)
	require.NoError(t, c.Commit())
	err = d.Commit()
	require.Equal(t, kv.CodeNotCommitted, kv.Code(err), "%v", err)
	_, err = run(t, e, "INSERT INTO jobs VALUES (1, 1, 'c')")
	require.ErrorIs(t, err, exec.ErrDuplicateKey)
	var dup *exec.DuplicateKeyError
	require.True(t, errors.As(err, &dup))
	require.Equal(t, first, dup.ID)
	require.Equal(t, "kind", dup.Key)
	var rowErr *exec.RowError
	require.True(t, errors.As(err, &rowErr))
	require.Equal(t, 1, rowErr.Row)

	// A skip read the held entry: the removal that frees it, committed
	// first, makes it conflict (a transaction that writes nothing else
	// commits as of its read version: serializable without a check);
	// run again, it inserts both rows.
	f, g := begin(), begin()
	res, err = execIn(t, e, f, "INSERT IGNORE INTO jobs VALUES (1, 1, 'c'), (1, 1, 'e')")
	require.NoError(t, err)
	require.Equal(t, int64(1), res.RowsAffected)
	_, err = execIn(t, e, g, "DELETE FROM jobs WHERE id = ?", first)
	require.NoError(t, err)
	require.NoError(t, g.Commit())
	require.Equal(t, kv.CodeNotCommitted, kv.Code(f.Commit()))
	require.Equal(t, int64(2), mustRun(t, e, "INSERT IGNORE INTO jobs VALUES (1, 1, 'c'), (1, 1, 'e')").RowsAffected)

	// A pop of one row and an INSERT of other values do not conflict.
	h, i := begin(), begin()
	res, err = execIn(t, e, h, "SELECT kind FROM jobs WHERE kind = 'a' LIMIT 1 FOR POP")
	require.NoError(t, err)
	require.Len(t, res.Rows, 1)
	_, err = execIn(t, e, i, "INSERT INTO jobs VALUES (1, 1, 'd')")
	require.NoError(t, err)
	require.NoError(t, i.Commit())
	require.NoError(t, h.Commit())

	checkUnique(t, e)
}

// checkUnique checks every table's unique index against its rows.
func checkUnique(t *testing.T, e *exec.Executor) {
	t.Helper()
	require.NoError(t, e.DB().ReadTransact(bg, func(tr kv.ReadTransaction) error {
		tables, err := e.TablesIn(tr)
		for _, tb := range tables {
			if err == nil {
				err = exec.CheckUnique(tr, tb)
			}
		}
		return err
	}))
}

// A unique key's entry is a key of the store, which holds at most 10,000
// bytes (FoundationDB's limit): a row whose values in a key would make a
// longer one is refused at INSERT, naming the key and the limit, before
// anything is written; a window's entry is a few bytes longer.
func TestUniqueKeyTooLong(t *testing.T) {
	t.Parallel()
	e := newExec(t, []byte("u"))
	mustRun(t, e, "CREATE TABLE blobs (b BLOB, t TEXT, UNIQUE (b), UNIQUE KEY tw (t) FOR 1 DAY)")

	mustRun(t, e, "INSERT INTO blobs (b) VALUES (?)", bytes.Repeat([]byte{'x'}, 9_900))
	_, err := run(t, e, "INSERT INTO blobs (b) VALUES (?), (?)", []byte("ok"), bytes.Repeat([]byte{'y'}, 10_000))
	require.ErrorIs(t, err, exec.ErrValue)
	require.ErrorContains(t, err, "row 2: unique key b (b) of blobs")
	require.ErrorContains(t, err, "a key holds at most 10000 bytes (FoundationDB's limit)")
	// Zero bytes take two bytes packed.
	_, err = run(t, e, "INSERT INTO blobs (b) VALUES (?)", make([]byte, 5_000))
	require.ErrorIs(t, err, exec.ErrValue)
	require.ErrorContains(t, err, "take 10002 bytes packed")

	// 9,980 bytes fit in an entry's key, not in a window's.
	mustRun(t, e, "INSERT INTO blobs (b) VALUES (?)", bytes.Repeat([]byte{'z'}, 9_980))
	_, err = run(t, e, "INSERT INTO blobs (t) VALUES (?)", string(bytes.Repeat([]byte{'z'}, 9_980)))
	require.ErrorIs(t, err, exec.ErrValue)
	require.ErrorContains(t, err, "unique key tw (t) of blobs")

	n := mustRun(t, e, "SELECT COUNT(*) FROM blobs").Rows[0][0]
	require.Equal(t, int64(2), n)
	checkUnique(t, e)
}

// A pop settled after a commit of unknown outcome (see
// TestPopSettledAfterUnknownOutcome) puts its rows back with their keys,
// as a put-back does: they stay taken.
func TestUniqueKeysOfASettledPop(t *testing.T) {
	t.Parallel()
	e := unknownApplied(t)
	mustRun(t, e, "CREATE TABLE t (priority INT NOT NULL, ref TEXT UNIQUE)")
	mustRun(t, e, "INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
	popSettled(t, e, "SELECT ref FROM t ORDER BY priority LIMIT 2 FOR POP")

	require.Equal(t, int64(3), mustRun(t, e, "SELECT COUNT(*) FROM t").Rows[0][0])
	require.Zero(t, mustRun(t, e, "INSERT IGNORE INTO t VALUES (1, 'a'), (2, 'b')").RowsAffected)
	checkUnique(t, e)
}
