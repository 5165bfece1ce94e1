package ui_test

import (
	"database/sql"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/ui"
)

// tally counts the statuses of concurrent actions, and their errors.
type tally struct {
	mu       sync.Mutex
	statuses map[int]int
	bodies   []map[string]any
	errs     []error
}

func (ta *tally) add(r response, err error) {
	ta.mu.Lock()
	defer ta.mu.Unlock()
	if err != nil {
		ta.errs = append(ta.errs, err)
		return
	}
	if ta.statuses == nil {
		ta.statuses = map[int]int{}
	}
	ta.statuses[r.status]++
	ta.bodies = append(ta.bodies, r.body)
}

// TestActionsExactlyOnceUnderFaults runs the actions on a database that
// fails commits with unknown results and conflicts, concurrently, several
// on the same row: each row moves, goes or is released once.
func TestActionsExactlyOnceUnderFaults(t *testing.T) {
	t.Parallel()
	db := open(t, "memory:?fault_unknown=0.3&fault_conflict=0.2&fault_seed=7")
	_, err := db.Exec(`CREATE TABLE jobs (n INT NOT NULL) MAX_ATTEMPTS=1`)
	require.NoError(t, err)
	const dead = 40
	for i := range dead {
		_, err := db.Exec(`INSERT INTO jobs (n, _attempts) VALUES (?, 1)`, i)
		require.NoError(t, err)
	}
	// Every row was leased once already: the next lease moves them all.
	var n int
	require.ErrorIs(t, db.QueryRow(`SELECT n FROM jobs LIMIT 100 FOR LEASE 60`).Scan(&n), sql.ErrNoRows)
	ids := idsOf(t, db, `SELECT id FROM jobs_dead`)
	require.Len(t, ids, dead)
	c := newClient(t, ui.Handler(db))

	// Retry each dead letter from 3 clicks at once: one moves it.
	var retries tally
	var wg sync.WaitGroup
	for _, id := range ids {
		for range 3 {
			wg.Go(func() { retries.add(c.tryAct("jobs", "retry", fmt.Sprintf(`{"id": "%d"}`, id))) })
		}
	}
	wg.Wait()
	require.Empty(t, retries.errs)
	require.Equal(t, map[int]int{200: dead, 404: 2 * dead}, retries.statuses, "%v", retries.bodies)
	require.EqualValues(t, 0, sqlInt(t, db, `SELECT COUNT(*) FROM jobs_dead`))
	for i := range dead {
		require.EqualValues(t, 1, sqlInt(t, db, `SELECT COUNT(*) FROM jobs WHERE n = ?`, i), "row %d", i)
	}

	// Lease them, release half and delete the others, twice each.
	type leased struct{ id, lease int64 }
	rows, err := db.Query(`SELECT id, _lease FROM jobs LIMIT 100 FOR LEASE 600`)
	require.NoError(t, err)
	var ls []leased
	for rows.Next() {
		var l leased
		require.NoError(t, rows.Scan(&l.id, &l.lease))
		ls = append(ls, l)
	}
	require.NoError(t, rows.Err())
	require.Len(t, ls, dead)
	var ends tally
	for i, l := range ls {
		for range 2 {
			wg.Go(func() {
				if i%2 == 0 {
					ends.add(c.tryAct("jobs", "release", fmt.Sprintf(`{"id": "%d", "lease": "%d"}`, l.id, l.lease)))
				} else {
					ends.add(c.tryAct("jobs", "delete", fmt.Sprintf(`{"id": "%d"}`, l.id)))
				}
			})
		}
	}
	wg.Wait()
	require.Empty(t, ends.errs)
	// A second release finds the row under the same token (a token stays
	// the row's until it is leased again) and makes it visible now again,
	// counting no second release; a second delete finds no row (404).
	require.Equal(t, map[int]int{200: dead + dead/2, 404: dead / 2}, ends.statuses, "%v", ends.bodies)
	var rowsN, visible, leasedN, released, deleted int64
	require.NoError(t, db.QueryRow(`SELECT rows, visible, leased, released, deleted FROM fdbqueue_queues WHERE name = 'jobs'`).
		Scan(&rowsN, &visible, &leasedN, &released, &deleted))
	require.Equal(t, []int64{dead / 2, dead / 2, 0, dead / 2, dead / 2}, []int64{rowsN, visible, leasedN, released, deleted})
	require.EqualValues(t, dead/2, sqlInt(t, db, `SELECT COUNT(*) FROM jobs WHERE _visible_at <= NOW()`))

	// Purge, twice at once, the dead letters made again: they go once.
	require.ErrorIs(t, db.QueryRow(`SELECT n FROM jobs LIMIT 100 FOR LEASE 60`).Scan(&n), sql.ErrNoRows)
	require.EqualValues(t, dead/2, sqlInt(t, db, `SELECT COUNT(*) FROM jobs_dead`))
	var purges tally
	for range 2 {
		wg.Go(func() { purges.add(c.tryAct("jobs", "purge", `{}`)) })
	}
	wg.Wait()
	require.Empty(t, purges.errs)
	require.Equal(t, map[int]int{200: 2}, purges.statuses, "%v", purges.bodies)
	require.ElementsMatch(t, []any{float64(dead / 2), float64(0)}, []any{purges.bodies[0]["affected"], purges.bodies[1]["affected"]})
	require.EqualValues(t, 0, sqlInt(t, db, `SELECT COUNT(*) FROM jobs_dead`))
	require.EqualValues(t, dead/2, sqlInt(t, db, `SELECT deleted FROM fdbqueue_queues WHERE name = 'jobs_dead'`))
}

// idsOf reads a column of ids.
func idsOf(t *testing.T, db *sql.DB, query string) []int64 {
	t.Helper()
	rows, err := db.Query(query)
	require.NoError(t, err)
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(t, rows.Err())
	return ids
}

// TestBackoffReleaseIsListedAsLeased pins what docs/dashboard.md says: a
// row released for a retry after its backoff keeps its lease's token, so
// the lists show it under leased while fdbqueue_queues counts it as
// delayed; the lists still find it.
func TestBackoffReleaseIsListedAsLeased(t *testing.T) {
	t.Parallel()
	db := open(t, "memory:")
	_, err := db.Exec(`CREATE TABLE jobs (v INT NOT NULL) BACKOFF=CONSTANT(1 HOUR)`)
	require.NoError(t, err)
	_, err = db.Exec(`INSERT INTO jobs (v) VALUES (1)`)
	require.NoError(t, err)
	var id, lease int64
	require.NoError(t, db.QueryRow(`SELECT id, _lease FROM jobs LIMIT 1 FOR LEASE 60`).Scan(&id, &lease))
	_, err = db.Exec(`UPDATE jobs SET _visible_at = NULL WHERE id = ? AND _lease = ?`, id, lease)
	require.NoError(t, err)
	var delayed, leased int64
	require.NoError(t, db.QueryRow(`SELECT delayed, leased FROM fdbqueue_queues WHERE name = 'jobs'`).Scan(&delayed, &leased))
	require.Equal(t, []int64{1, 0}, []int64{delayed, leased})

	c := newClient(t, ui.Handler(db))
	r := c.get(t, "api/tables/jobs/rows?state=leased")
	require.Len(t, r.body["rows"], 1)
	require.Equal(t, fmt.Sprint(id), r.body["rows"].([]any)[0].([]any)[0])
	require.EqualValues(t, 0, r.body["count"], "counted as delayed")
	r = c.get(t, "api/tables/jobs/rows?state=delayed")
	require.Empty(t, r.body["rows"])
	require.EqualValues(t, 1, r.body["count"])
}

// TestSlowActionGets503: an action whose commit outlasts the query
// timeout gets 503 saying its outcome is not known, not a bare 500.
func TestSlowActionGets503(t *testing.T) {
	t.Parallel()
	db := open(t, "memory:?commit_latency=400ms")
	_, err := db.Exec(`CREATE TABLE jobs (n INT NOT NULL)`)
	require.NoError(t, err)
	_, err = db.Exec(`INSERT INTO jobs (n) VALUES (1)`)
	require.NoError(t, err)
	id := sqlInt(t, db, `SELECT id FROM jobs`)
	c := newClient(t, ui.Handler(db, ui.WithQueryTimeout(100*time.Millisecond)))
	r := c.act(t, "jobs", "delete", fmt.Sprintf(`{"id": "%d"}`, id))
	require.Equal(t, http.StatusServiceUnavailable, r.status, "%v", r.body)
	require.Contains(t, r.body["error"], "took longer than the dashboard's query timeout (100ms): it may have taken effect or not")
}
