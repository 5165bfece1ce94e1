package ui_test

import (
	"database/sql"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	_ "github.com/fdbqueue/fdbqueue/driver"
	"github.com/fdbqueue/fdbqueue/ui"
)

// open opens a database of its own for one test, closed at its end.
func open(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("fdbqueue", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// seeded is what seed leaves: jobs with 2 visible rows, 1 delayed, 1
// leased (lease) and 1 dead letter (deadID); emails with 2 visible rows.
type seeded struct {
	leasedID, lease, deadID int64
}

func seed(t testing.TB, db *sql.DB) seeded {
	t.Helper()
	for _, stmt := range []string{
		`CREATE TABLE jobs (priority INT NOT NULL, payload TEXT) MAX_ATTEMPTS=2`,
		`CREATE TABLE emails (recipient TEXT NOT NULL)`,
		// Leased twice already: the next lease moves it to jobs_dead.
		`INSERT INTO jobs (priority, payload, _attempts, _error) VALUES (0, 'doomed', 2, 'boom')`,
		`INSERT INTO jobs (priority, payload) VALUES (1, 'a'), (2, 'b'), (3, 'c')`,
		`INSERT INTO jobs (priority, payload, _visible_at) VALUES (5, 'later', NOW() + INTERVAL 1 HOUR)`,
		`INSERT INTO emails (recipient) VALUES ('ada@example.com'), ('alan@example.com')`,
	} {
		_, err := db.Exec(stmt)
		require.NoError(t, err, stmt)
	}
	var s seeded
	require.NoError(t, db.QueryRow(`SELECT id, _lease FROM jobs LIMIT 1 FOR LEASE 3600`).Scan(&s.leasedID, &s.lease))
	require.NoError(t, db.QueryRow(`SELECT id FROM jobs_dead LIMIT 1`).Scan(&s.deadID))
	return s
}

// serve serves d under /queues/, as a service mounts it, until the test
// ends.
func serve(t testing.TB, d *ui.Dashboard) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/queues/", http.StripPrefix("/queues", d))
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		srv.Close()
		d.Close()
	})
	return srv
}
