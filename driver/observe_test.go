package driver_test

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"

	"github.com/XSAM/otelsql"
	"github.com/stretchr/testify/require"

	fdbqueue "github.com/fdbqueue/fdbqueue/driver"
)

// TestObserve: an observer learns each statement's kind, table, rows and
// outcome, from every connection of the sql.DB, in autocommit and in a
// transaction, through a wrapping driver too, until it stops.
func TestObserve(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	opts, _, _ := tracedOptions(t)
	for _, wrapped := range []bool{false, true} {
		t.Run(fmt.Sprint("wrapped=", wrapped), func(t *testing.T) {
			t.Parallel()
			var db *sql.DB
			var err error
			if wrapped {
				db, err = otelsql.Open("fdbqueue", "memory:", opts...)
			} else {
				db, err = sql.Open("fdbqueue", "memory:")
			}
			require.NoError(t, err)
			defer db.Close()
			var mu sync.Mutex
			var seen []string
			stop, err := fdbqueue.Observe(ctx, db, func(s fdbqueue.Statement) {
				mu.Lock()
				defer mu.Unlock()
				errText := ""
				if s.Err != nil {
					errText = " error"
				}
				require.Positive(t, s.Duration)
				seen = append(seen, fmt.Sprintf("%s %s %d wait=%v tx=%v%s", s.Kind, s.Table, s.Rows, s.Wait, s.InTx, errText))
			})
			require.NoError(t, err)
			exec := func(q string, args ...any) {
				_, err := db.Exec(q, args...)
				require.NoError(t, err, q)
			}
			exec("CREATE TABLE jobs (priority INT NOT NULL, v TEXT)")
			exec("INSERT INTO jobs VALUES (1, 'a'), (2, 'b'), (3, 'c')")
			var id, lease int64
			require.NoError(t, db.QueryRow("SELECT id, _lease FROM jobs LIMIT 1 FOR LEASE 60").Scan(&id, &lease))
			exec("DELETE FROM jobs WHERE id = ? AND _lease = ?", id, lease)
			var v string
			require.NoError(t, db.QueryRow("SELECT v FROM jobs LIMIT 1 FOR POP WAIT 1").Scan(&v))
			var n int64
			require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM jobs").Scan(&n))
			require.NoError(t, db.QueryRow("SELECT rows FROM fdbqueue_queues WHERE name = 'jobs'").Scan(&n))
			_, err = db.Exec("INSERT INTO nope VALUES (1)")
			require.Error(t, err)
			tx, err := db.Begin()
			require.NoError(t, err)
			_, err = tx.Exec("DELETE FROM jobs WHERE id = ?", id)
			require.NoError(t, err)
			require.NoError(t, tx.Commit())
			exec("UPDATE jobs SET priority = 5 WHERE id = 1")
			require.NoError(t, db.Ping())
			stop()
			exec("DROP TABLE jobs")
			mu.Lock()
			defer mu.Unlock()
			require.Equal(t, []string{
				"create jobs 0 wait=false tx=false",
				"insert jobs 3 wait=false tx=false",
				"lease jobs 1 wait=false tx=false",
				"ack jobs 1 wait=false tx=false",
				"pop jobs 1 wait=true tx=false",
				"count jobs 1 wait=false tx=false",
				"stats fdbqueue_queues 1 wait=false tx=false",
				"insert nope 0 wait=false tx=false error",
				"delete jobs 0 wait=false tx=true",
				"update jobs 0 wait=false tx=false",
			}, seen)
		})
	}

	// Another driver's database is refused.
	other := sql.OpenDB(foreignConnector{})
	defer other.Close()
	_, err := fdbqueue.Observe(ctx, other, func(fdbqueue.Statement) {})
	require.ErrorIs(t, err, fdbqueue.ErrNotFdbqueue)
	require.ErrorContains(t, err, "Observe got a driver_test.foreignConn connection")
}
