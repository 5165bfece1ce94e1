package driver_test

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestInsertedRowsByIDAfterReopen: the rows of a multi-row INSERT (filed
// under one run key on file:, not an id index key each) are found by id
// through SQL, before and after the database is closed and opened again:
// SELECT, UPDATE of the priority, a lease and its ack, DELETE; and their ids cannot be
// inserted again while they are queued.
func TestInsertedRowsByIDAfterReopen(t *testing.T) {
	t.Parallel()
	dsn := "file:" + t.TempDir()
	db, err := sql.Open("fdbqueue", dsn)
	require.NoError(t, err)
	_, err = db.Exec("CREATE TABLE jobs (priority INT NOT NULL, v INT NOT NULL)")
	require.NoError(t, err)
	values := make([]string, 40)
	for i := range values {
		values[i] = fmt.Sprintf("(%d, %d)", i%3, i)
	}
	_, err = db.Exec("INSERT INTO jobs (priority, v) VALUES " + strings.Join(values, ", "))
	require.NoError(t, err)
	var ids []int64
	rows, err := db.Query("SELECT id FROM jobs ORDER BY priority")
	require.NoError(t, err)
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(t, rows.Err())
	require.Len(t, ids, 40)

	for reopen := range 2 {
		if reopen == 1 {
			require.NoError(t, db.Close())
			db, err = sql.Open("fdbqueue", dsn)
			require.NoError(t, err)
		}
		for _, id := range ids[:10] {
			var v int
			require.NoError(t, db.QueryRow("SELECT v FROM jobs WHERE id = ?", id).Scan(&v), "id %d", id)
		}
		_, err = db.Exec("INSERT INTO jobs (id, priority, v) VALUES (?, 0, 0)", ids[3])
		require.ErrorContains(t, err, "holds a row with id")
	}
	res, err := db.Exec("UPDATE jobs SET priority = 7 WHERE id = ?", ids[0])
	require.NoError(t, err)
	n, err := res.RowsAffected()
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	var id, lease int64
	require.NoError(t, db.QueryRow("SELECT id, _lease FROM jobs WHERE id = ? LIMIT 1 FOR LEASE 30", ids[1]).Scan(&id, &lease))
	require.Equal(t, ids[1], id)
	res, err = db.Exec("DELETE FROM jobs WHERE id = ? AND _lease = ?", ids[1], lease)
	require.NoError(t, err)
	n, err = res.RowsAffected()
	require.NoError(t, err)
	require.Equal(t, int64(1), n, "the ack")
	res, err = db.Exec("DELETE FROM jobs WHERE id = ?", ids[2])
	require.NoError(t, err)
	n, err = res.RowsAffected()
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	var count int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM jobs").Scan(&count))
	require.Equal(t, 38, count)
	var prio int
	require.NoError(t, db.QueryRow("SELECT priority FROM jobs WHERE id = ?", ids[0]).Scan(&prio))
	require.Equal(t, 7, prio)
	require.ErrorIs(t, db.QueryRow("SELECT priority FROM jobs WHERE id = ?", ids[2]).Scan(&prio), sql.ErrNoRows)
	require.NoError(t, db.Close())
}
