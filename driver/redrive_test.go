package driver_test

import (
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	fdbqueue "github.com/fdbqueue/fdbqueue/driver"
)

// TestRedriveUnderFaults: redrivers move dead letters back with INSERT ...
// SELECT ... LIMIT n FOR POP while the engine fails commits with conflicts,
// commit_unknown_result (applied or not) and transaction_too_old. Every
// dead row lands in jobs exactly once, none lost, none twice, at
// _attempts 0, and the rows the statements report add up to them. A copy
// (no FOR POP) under the same faults copies every row once.
func TestRedriveUnderFaults(t *testing.T) {
	t.Parallel()
	for _, seed := range []int{1, 2, 3} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			const n = 150
			db, err := sql.Open("fdbqueue", fmt.Sprintf("memory:?fault_conflict=0.1&fault_unknown=0.2&fault_too_old=0.05&fault_seed=%d", seed))
			require.NoError(t, err)
			t.Cleanup(func() { _ = db.Close() })
			_, err = db.Exec("CREATE TABLE jobs (priority INT NOT NULL, v INT NOT NULL) MAX_ATTEMPTS=3")
			require.NoError(t, err)
			for i := 0; i < n; i += 10 {
				var vals []string
				var args []any
				for j := i; j < i+10; j++ {
					vals = append(vals, "(?, ?, 3, ?)")
					args = append(args, j%4, j, fmt.Sprint("failed ", j))
				}
				_, err := db.Exec("INSERT INTO jobs_dead (priority, v, _attempts, _error) VALUES "+strings.Join(vals, ", "), args...)
				require.NoError(t, err)
			}

			var moved atomic.Int64
			var wg sync.WaitGroup
			for w := 0; w < 3; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						res, err := db.Exec("INSERT INTO jobs (priority, v, _error) SELECT priority, v, _error FROM jobs_dead WHERE _attempts >= ? LIMIT ? FOR POP", 3, 7)
						require.NoError(t, err)
						k := rowsAffected(t, res)
						moved.Add(k)
						if k == 0 && count(t, db, "jobs_dead") == 0 {
							return
						}
					}
				}()
			}
			wg.Wait()
			require.Equal(t, int64(n), moved.Load(), "the counts reported add up to the rows moved")
			rows, err := db.Query("SELECT v, priority, _attempts, _error FROM jobs")
			require.NoError(t, err)
			seen := map[int64]bool{}
			for rows.Next() {
				var v, prio, attempts int64
				var why string
				require.NoError(t, rows.Scan(&v, &prio, &attempts, &why))
				require.False(t, seen[v], "row %d twice", v)
				seen[v] = true
				require.Equal(t, v%4, prio)
				require.Zero(t, attempts, "a redriven row starts its attempts again")
				require.Equal(t, fmt.Sprint("failed ", v), why)
			}
			require.NoError(t, rows.Err())
			require.Len(t, seen, n, "none lost")

			// A copy of them all, in one statement, under the same faults.
			for i := 0; i < 4; i++ {
				archive := fmt.Sprint("archive", i)
				_, err = db.Exec("CREATE TABLE " + archive + " (v INT)")
				require.NoError(t, err)
				res, err := db.Exec("INSERT INTO " + archive + " SELECT v FROM jobs LIMIT 1000")
				require.NoError(t, err)
				require.Equal(t, int64(n), rowsAffected(t, res))
				require.Equal(t, int64(n), count(t, db, archive))
			}
			require.Equal(t, int64(n), count(t, db, "jobs"), "a copy leaves its rows")
		})
	}
}

// TestRedriveLimits: an INSERT ... SELECT writes its rows in one
// transaction: past 10 MB it fails, naming the limits and what to do, and
// moves nothing; smaller batches move them all. A LIMIT over 10,000, or
// none, is refused, also bound to a placeholder.
func TestRedriveLimits(t *testing.T) {
	t.Parallel()
	db := open(t)
	_, err := db.Exec("CREATE TABLE jobs (payload TEXT) MAX_ATTEMPTS=1")
	require.NoError(t, err)
	big := strings.Repeat("x", 90_000)
	for i := 0; i < 12; i++ {
		vals := strings.TrimSuffix(strings.Repeat("(?), ", 10), ", ")
		args := make([]any, 10)
		for j := range args {
			args[j] = big
		}
		_, err := db.Exec("INSERT INTO jobs_dead (payload) VALUES "+vals, args...)
		require.NoError(t, err)
	}
	_, err = db.Exec("INSERT INTO jobs SELECT * FROM jobs_dead LIMIT 200 FOR POP")
	require.ErrorIs(t, err, fdbqueue.ErrTransactionTooLarge)
	require.ErrorContains(t, err, "writes at most 10 MB and lasts at most 5 seconds: redrive in smaller batches")
	require.Equal(t, int64(120), count(t, db, "jobs_dead"), "nothing moved")
	require.Equal(t, int64(0), count(t, db, "jobs"))
	for count(t, db, "jobs_dead") > 0 {
		_, err := db.Exec("INSERT INTO jobs SELECT * FROM jobs_dead LIMIT 50 FOR POP")
		require.NoError(t, err)
	}
	require.Equal(t, int64(120), count(t, db, "jobs"))

	_, err = db.Exec("INSERT INTO jobs SELECT * FROM jobs_dead LIMIT ? FOR POP", 10_001)
	require.ErrorIs(t, err, fdbqueue.ErrValue)
	require.ErrorContains(t, err, "a count from 0 to 10000")
	_, err = db.Exec("INSERT INTO jobs SELECT * FROM jobs_dead FOR POP")
	require.ErrorIs(t, err, fdbqueue.ErrUnsupported)
	require.ErrorContains(t, err, "without LIMIT")
}

// TestRedriveInTx: inside a transaction an INSERT ... SELECT ... FOR POP
// moves its rows when the transaction commits, and a rollback keeps them
// where they were.
func TestRedriveInTx(t *testing.T) {
	t.Parallel()
	db := open(t)
	_, err := db.Exec("CREATE TABLE jobs (v INT) MAX_ATTEMPTS=1")
	require.NoError(t, err)
	_, err = db.Exec("INSERT INTO jobs_dead (v) VALUES (1), (2), (3)")
	require.NoError(t, err)
	moveTwo := func() *sql.Tx {
		tx, err := db.Begin()
		require.NoError(t, err)
		res, err := tx.Exec("INSERT INTO jobs SELECT v FROM jobs_dead LIMIT 2 FOR POP")
		require.NoError(t, err)
		require.Equal(t, int64(2), rowsAffected(t, res))
		require.Equal(t, int64(1), count(t, tx, "jobs_dead"), "the transaction sees its own move")
		return tx
	}
	require.NoError(t, moveTwo().Rollback())
	require.Equal(t, int64(3), count(t, db, "jobs_dead"))
	require.Equal(t, int64(0), count(t, db, "jobs"))
	require.NoError(t, moveTwo().Commit())
	require.Equal(t, int64(1), count(t, db, "jobs_dead"))
	require.Equal(t, int64(2), count(t, db, "jobs"))
}
