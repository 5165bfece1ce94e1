package driver_test

import (
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBackoffUnderFaults: workers that fail every task, half by
// abandoning its lease and half by releasing it without a time
// (_visible_at = NULL), under conflicts and commits of unknown result. A
// table with BACKOFF hides each row for its lease and then the backoff of
// its attempt: the _visible_at a lease returns is the lease's end plus
// 3/4 to all of the delay (EXPONENTIAL(0.1 SECOND, 0.3 SECOND): 0.1, 0.2,
// 0.3 s), and no row is leased again before the time it was hidden until.
// Every row reaches jobs_dead exactly once, after MAX_ATTEMPTS=4 leases.
// Times are the client's clock: each check bounds a time the statement
// read from the clock between two readings of it around the statement;
// none bounds how long anything took.
func TestBackoffUnderFaults(t *testing.T) {
	t.Parallel()
	const n, lease = 12, 50 * time.Millisecond
	db, err := sql.Open("fdbqueue", "memory:?fault_conflict=0.1&fault_unknown=0.2&fault_seed=9")
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, err = db.Exec("CREATE TABLE jobs (v INT) MAX_ATTEMPTS=4 BACKOFF=EXPONENTIAL(0.1 SECOND, 0.3 SECOND)")
	require.NoError(t, err)
	for i := 0; i < n; i++ {
		_, err := db.Exec("INSERT INTO jobs (v) VALUES (?)", i)
		require.NoError(t, err)
	}
	delay := func(attempts int64) time.Duration {
		return min(100*time.Millisecond<<(attempts-1), 300*time.Millisecond)
	}
	var mu sync.Mutex
	// By id: the last attempt recorded, and the earliest the row may be
	// leased again after it; and every attempt leased.
	type last struct {
		attempt   int64
		notBefore time.Time
	}
	lasts := map[int64]last{}
	leased := map[[2]int64]bool{}
	var wg sync.WaitGroup
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				var left int64
				require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM jobs").Scan(&left))
				if left == 0 {
					return
				}
				var id, lease_, att, v int64
				var visible time.Time
				before := time.Now()
				err := db.QueryRow("SELECT id, _lease, _attempts, v, _visible_at FROM jobs LIMIT 1 FOR LEASE ? WAIT 1", lease).
					Scan(&id, &lease_, &att, &v, &visible)
				after := time.Now()
				if err == sql.ErrNoRows {
					continue
				}
				require.NoError(t, err)
				mu.Lock()
				require.False(t, leased[[2]int64{id, att}], "attempt %d of row %d leased twice", att, id)
				leased[[2]int64{id, att}] = true
				if l := lasts[id]; l.attempt == att-1 {
					require.False(t, after.Before(l.notBefore), "row %d leased again at %v, before %v", id, after, l.notBefore)
				}
				mu.Unlock()
				d := delay(att)
				if att >= 4 {
					d = 0 // its next lease moves it: no backoff
				}
				require.False(t, visible.Before(before.Add(lease+d-d/4)), "attempt %d of row %d: hidden until %v, leased at %v", att, id, visible, before)
				require.False(t, visible.After(after.Add(lease+d)), "attempt %d of row %d: hidden until %v, leased by %v", att, id, visible, after)
				mu.Lock()
				if lasts[id].attempt < att {
					lasts[id] = last{att, visible} // back when the lease and its backoff end
				}
				mu.Unlock()
				if v%2 == 0 {
					continue // abandoned
				}
				// Released without a time: after the backoff, from now. A
				// retry after an unknown result may find the row leased
				// again by another worker (0 rows), as a worker would.
				// The row is visible from then, or, if the release finds the
				// lease lost, when the lease and its backoff end: the
				// earlier is the bound, set before another worker can
				// lease the row again.
				before = time.Now()
				mu.Lock()
				if released := before.Add(d - d/4); lasts[id].attempt == att && released.Before(visible) {
					lasts[id] = last{att, released}
				}
				mu.Unlock()
				_, err = db.Exec("UPDATE jobs SET _visible_at = NULL WHERE id = ? AND _lease = ?", id, lease_)
				require.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	dead := deadRows2(t, db)
	require.Len(t, dead, n)
	seen := map[int64]bool{}
	for _, d := range dead {
		require.Equal(t, int64(4), d[1], fmt.Sprint(d))
		require.False(t, seen[d[0]], "row %d twice", d[0])
		seen[d[0]] = true
	}
}

// deadRows2 returns jobs_dead's rows as (v, _attempts).
func deadRows2(t *testing.T, db *sql.DB) [][2]int64 {
	t.Helper()
	rows, err := db.Query("SELECT v, _attempts FROM jobs_dead")
	require.NoError(t, err)
	defer rows.Close()
	var out [][2]int64
	for rows.Next() {
		var r [2]int64
		require.NoError(t, rows.Scan(&r[0], &r[1]))
		out = append(out, r)
	}
	require.NoError(t, rows.Err())
	return out
}
