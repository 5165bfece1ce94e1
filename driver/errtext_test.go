package driver_test

import (
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fdbqueue "github.com/fdbqueue/fdbqueue/driver"
)

// TestErrorColumn: a worker's release records why the attempt failed, as
// an argument; _error reads back as written, NULL when never set, and is
// kept into the dead letters. Bad values are refused with ErrValue: over
// 1,000 bytes, not UTF-8, or more than the row has room for.
func TestErrorColumn(t *testing.T) {
	t.Parallel()
	db := open(t)
	_, err := db.Exec("CREATE TABLE jobs (payload TEXT) MAX_ATTEMPTS=1")
	require.NoError(t, err)
	_, err = db.Exec("INSERT INTO jobs (payload) VALUES (?)", "p")
	require.NoError(t, err)

	var id, lease int64
	var last sql.NullString
	require.NoError(t, db.QueryRow("SELECT id, _lease, _error FROM jobs LIMIT 1 FOR LEASE ?", time.Hour).Scan(&id, &lease, &last))
	require.False(t, last.Valid, "never set: NULL")
	why := "dial tcp 10.0.0.7:5432: connect: connection refused ✗"
	res, err := db.Exec("UPDATE jobs SET _visible_at = NULL, _error = ? WHERE id = ? AND _lease = ?", why, id, lease)
	require.NoError(t, err)
	require.Equal(t, int64(1), rowsAffected(t, res))
	require.NoError(t, db.QueryRow("SELECT _error FROM jobs WHERE id = ?", id).Scan(&last))
	require.Equal(t, why, last.String)

	// The next lease moves it to jobs_dead (MAX_ATTEMPTS=1), _error and all.
	require.ErrorIs(t, db.QueryRow("SELECT id FROM jobs LIMIT 1 FOR LEASE 1").Scan(&id), sql.ErrNoRows)
	require.NoError(t, db.QueryRow("SELECT _error FROM jobs_dead WHERE id = ?", id).Scan(&last))
	require.Equal(t, why, last.String)

	// Bad values.
	_, err = db.Exec("INSERT INTO jobs (payload) VALUES (?)", strings.Repeat("p", 99_500))
	require.NoError(t, err)
	var big int64
	require.NoError(t, db.QueryRow("SELECT id FROM jobs").Scan(&big))
	for _, tc := range []struct {
		arg  any
		want string
	}{
		{strings.Repeat("e", 1001), "an _error holds at most 1000 bytes"},
		{[]byte{0xff}, "not valid UTF-8"},
		{strings.Repeat("e", 900), "with its _error the row would take"},
	} {
		_, err := db.Exec("UPDATE jobs SET _error = ? WHERE id = ?", tc.arg, big)
		require.ErrorIs(t, err, fdbqueue.ErrValue)
		require.ErrorContains(t, err, tc.want)
	}
	require.NoError(t, db.QueryRow("SELECT _error FROM jobs WHERE id = ?", big).Scan(&last))
	require.False(t, last.Valid, "nothing written")
}
