package driver_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	fdbqueue "github.com/fdbqueue/fdbqueue/driver"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
)

// TestFileModeDSN: file:DIR?mode=rw refuses a mistyped path instead of
// creating an empty database; mode=ro serves SELECTs and refuses writes
// with an error that says why, leaving the table as it was.
func TestFileModeDSN(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "queue")

	_, err := sql.Open("fdbqueue", "file:"+dir+"?mode=rw")
	require.ErrorIs(t, err, embedded.ErrNoDatabase)
	require.ErrorContains(t, err, "does not exist")
	require.NoDirExists(t, dir)
	_, err = sql.Open("fdbqueue", "file:"+dir+"?mode=rwx")
	require.ErrorIs(t, err, fdbqueue.ErrDSN)
	require.ErrorContains(t, err, "accepted: rwc")

	db, err := sql.Open("fdbqueue", "file:"+dir) // rwc, the default
	require.NoError(t, err)
	_, err = db.Exec(`CREATE TABLE q (v TEXT)`)
	require.NoError(t, err)
	_, err = db.Exec(`INSERT INTO q (v) VALUES ('a'), ('b')`)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	ro, err := sql.Open("fdbqueue", "file:"+dir+"?mode=ro")
	require.NoError(t, err)
	defer ro.Close()
	var n int
	require.NoError(t, ro.QueryRow(`SELECT COUNT(*) FROM q`).Scan(&n))
	require.Equal(t, 2, n)
	for _, stmt := range []string{
		`INSERT INTO q (v) VALUES ('c')`,
		`SELECT v FROM q LIMIT 1 FOR POP`,
		`DELETE FROM q`,
		`CREATE TABLE r (v TEXT)`,
	} {
		_, err = ro.Exec(stmt)
		require.ErrorIs(t, err, embedded.ErrReadOnly, stmt)
		require.ErrorContains(t, err, "mode=ro", stmt)
		require.False(t, fdbqueue.IsRetryable(err), stmt)
	}
	require.NoError(t, ro.QueryRow(`SELECT COUNT(*) FROM q`).Scan(&n))
	require.Equal(t, 2, n, "a refused write changed nothing")

	// A read-write open beside it shares the database (the process
	// serves it, opened to write, whatever the mode of its first handle);
	// the read-only handle goes on refusing writes, and reads them.
	rw, err := sql.Open("fdbqueue", "file:"+dir+"?mode=rw")
	require.NoError(t, err)
	defer rw.Close()
	_, err = rw.Exec(`INSERT INTO q (v) VALUES ('c')`)
	require.NoError(t, err)
	require.NoError(t, ro.QueryRow(`SELECT COUNT(*) FROM q`).Scan(&n))
	require.Equal(t, 3, n)
	_, err = ro.Exec(`INSERT INTO q (v) VALUES ('d')`)
	require.ErrorIs(t, err, embedded.ErrReadOnly)
}
