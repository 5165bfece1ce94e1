package driver_test

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const createDeadJobs = "CREATE TABLE jobs (priority INT NOT NULL, cpu INT NOT NULL, mem INT NOT NULL, payload INT, INDEX fit (cpu, mem)) MAX_ATTEMPTS=3"

// nack releases a leased row for a retry now.
func nack(t *testing.T, q interface {
	Exec(string, ...any) (sql.Result, error)
}, l leased) {
	t.Helper()
	res, err := q.Exec("UPDATE jobs SET _visible_at = NOW() WHERE id = ? AND _lease = ?", l.id, l.lease)
	require.NoError(t, err)
	require.Equal(t, int64(1), rowsAffected(t, res), "nack")
}

type deadRow struct {
	id, attempts, priority, payload int64
}

func deadRows(t *testing.T, db *sql.DB) []deadRow {
	t.Helper()
	rows, err := db.Query("SELECT id, _attempts, priority, payload FROM jobs_dead")
	require.NoError(t, err)
	defer rows.Close()
	var out []deadRow
	for rows.Next() {
		var d deadRow
		require.NoError(t, rows.Scan(&d.id, &d.attempts, &d.priority, &d.payload))
		out = append(out, d)
	}
	require.NoError(t, rows.Err())
	return out
}

// TestDeadLetter: a task that fails 3 times (MAX_ATTEMPTS=3) lands in
// jobs_dead with its id and _attempts = 3, and no lease returns it again;
// DROP TABLE jobs leaves jobs_dead, and CREATE uses the jobs_dead that
// exists.
func TestDeadLetter(t *testing.T) {
	t.Parallel()
	db := open(t)
	_, err := db.Exec(createDeadJobs)
	require.NoError(t, err)
	require.Equal(t, int64(0), count(t, db, "jobs_dead"), "CREATE made jobs_dead")
	for p := 0; p < 2; p++ {
		_, err := db.Exec("INSERT INTO jobs (priority, cpu, mem, payload) VALUES (1, 1, 1, ?)", p)
		require.NoError(t, err)
	}
	var failing leased
	for a := int64(1); a <= 3; a++ {
		l, ok := leaseOne(t, db, time.Hour)
		require.True(t, ok)
		require.Equal(t, int64(0), l.payload, "the failing task comes back at its place")
		require.Equal(t, a, l.attempts)
		failing = l
		nack(t, db, l)
	}
	next, ok := leaseOne(t, db, time.Hour)
	require.True(t, ok)
	require.Equal(t, int64(1), next.payload, "the lease moved the failing task and took the next")
	require.Equal(t, []deadRow{{id: failing.id, attempts: 3, priority: 1, payload: 0}}, deadRows(t, db))
	require.Equal(t, int64(1), count(t, db, "jobs"))
	var lease int64
	require.NoError(t, db.QueryRow("SELECT _lease FROM jobs_dead WHERE id = ?", failing.id).Scan(&lease))
	require.Equal(t, failing.lease, lease, "the dead row keeps its last lease")

	// Never again from jobs: not by a lease, and the old lease acks nothing.
	nack(t, db, next)
	for a := int64(2); a <= 3; a++ {
		l, ok := leaseOne(t, db, time.Hour)
		require.True(t, ok)
		require.Equal(t, next.id, l.id)
		require.Equal(t, a, l.attempts)
		nack(t, db, l)
	}
	_, ok = leaseOne(t, db, time.Hour)
	require.False(t, ok, "both tasks are dead letters now")
	res, err := db.Exec("DELETE FROM jobs WHERE id = ? AND _lease = ?", failing.id, failing.lease)
	require.NoError(t, err)
	require.Equal(t, int64(0), rowsAffected(t, res))
	require.Equal(t, int64(0), count(t, db, "jobs"))
	require.Len(t, deadRows(t, db), 2)

	// A dead letter is a row of a FIFO table: popped in the order the
	// tasks died.
	_, err = db.Exec("DROP TABLE jobs")
	require.NoError(t, err)
	require.Len(t, deadRows(t, db), 2, "DROP TABLE jobs leaves jobs_dead")
	for _, ddl := range []string{createDeadJobs, "CREATE TABLE IF NOT EXISTS jobs (priority INT NOT NULL) MAX_ATTEMPTS=1"} {
		_, err = db.Exec(ddl)
		require.NoError(t, err, ddl)
	}
	require.Len(t, deadRows(t, db), 2, "CREATE used the jobs_dead that exists")
	var id int64
	require.NoError(t, db.QueryRow("SELECT id FROM jobs_dead LIMIT 1 FOR POP").Scan(&id))
	require.Equal(t, failing.id, id)
}

// TestDeadLetterExistingTable: CREATE ... MAX_ATTEMPTS refuses a
// <name>_dead that cannot hold the table's rows, and creates nothing.
func TestDeadLetterExistingTable(t *testing.T) {
	t.Parallel()
	db := open(t)
	_, err := db.Exec("CREATE TABLE jobs_dead (payload TEXT)")
	require.NoError(t, err)
	_, err = db.Exec(createDeadJobs)
	require.ErrorContains(t, err, "jobs_dead, which exists with other columns")
	_, err = db.Exec("SELECT COUNT(*) FROM jobs")
	require.ErrorContains(t, err, "no such table")

	for _, bad := range []string{"MAX_ATTEMPTS=0", "MAX_ATTEMPTS=-2", "MAX_ATTEMPTS=2.5", "MAX_ATTEMPTS='3'", "MAX_ATTEMPTS=n"} {
		_, err = db.Exec("CREATE TABLE t2 (v INT) " + bad)
		require.ErrorContains(t, err, "an integer, 1 or more", bad)
	}
	_, err = db.Exec("SELECT COUNT(*) FROM t2_dead")
	require.ErrorContains(t, err, "no such table")
}

// TestDeadLetterInTx: the move commits with the lease's transaction, or
// not at all.
func TestDeadLetterInTx(t *testing.T) {
	t.Parallel()
	db := open(t)
	_, err := db.Exec("CREATE TABLE jobs (priority INT NOT NULL, cpu INT NOT NULL, mem INT NOT NULL, payload INT, INDEX fit (cpu, mem)) MAX_ATTEMPTS=1")
	require.NoError(t, err)
	_, err = db.Exec("INSERT INTO jobs (priority, cpu, mem, payload) VALUES (1, 1, 1, 0)")
	require.NoError(t, err)
	l, ok := leaseOne(t, db, time.Hour)
	require.True(t, ok)
	nack(t, db, l)

	tx, err := db.BeginTx(context.Background(), nil)
	require.NoError(t, err)
	_, ok = leaseOne(t, tx, time.Hour)
	require.False(t, ok)
	require.NoError(t, tx.Rollback())
	require.Equal(t, int64(1), count(t, db, "jobs"))
	require.Equal(t, int64(0), count(t, db, "jobs_dead"))

	tx, err = db.BeginTx(context.Background(), nil)
	require.NoError(t, err)
	_, ok = leaseOne(t, tx, time.Hour)
	require.False(t, ok)
	require.NoError(t, tx.Commit())
	require.Equal(t, int64(0), count(t, db, "jobs"))
	require.Equal(t, []deadRow{{id: l.id, attempts: 1, priority: 1, payload: 0}}, deadRows(t, db))
}

// TestDeadLetterUnderFaults: workers that fail every task, under
// conflicts and commits of unknown result; every task lands in jobs_dead
// exactly once, with _attempts = 3.
func TestDeadLetterUnderFaults(t *testing.T) {
	t.Parallel()
	const n = 30
	db, err := sql.Open("fdbqueue", "memory:?fault_conflict=0.1&fault_unknown=0.2&fault_seed=5")
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, err = db.Exec(createDeadJobs)
	require.NoError(t, err)
	for p := 0; p < n; p++ {
		_, err := db.Exec("INSERT INTO jobs (priority, cpu, mem, payload) VALUES (?, 1, 1, ?)", p%3, p)
		require.NoError(t, err)
	}
	var wg sync.WaitGroup
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				l, ok := leaseOne(t, db, time.Hour)
				if !ok {
					return
				}
				require.LessOrEqual(t, l.attempts, int64(3))
				// Not nack: a retry after an unknown result may find the
				// row leased again by another worker (0 rows affected).
				_, err := db.Exec("UPDATE jobs SET _visible_at = NOW() WHERE id = ? AND _lease = ?", l.id, l.lease)
				require.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	require.Equal(t, int64(0), count(t, db, "jobs"))
	dead := deadRows(t, db)
	require.Len(t, dead, n)
	seen := map[int64]bool{}
	for _, d := range dead {
		require.Equal(t, int64(3), d.attempts, fmt.Sprint(d))
		require.Equal(t, d.payload%3, d.priority)
		require.False(t, seen[d.payload], "payload %d twice", d.payload)
		seen[d.payload] = true
	}
}
