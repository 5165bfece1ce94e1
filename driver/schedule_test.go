package driver_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fdbqueue "github.com/fdbqueue/fdbqueue/driver"
	"github.com/fdbqueue/fdbqueue/internal/crashtest"
)

// Two sql.DBs on one database (two processes, as far as firing goes),
// under injected conflicts and commits of unknown outcome: their tickers
// and explicit FireSchedules calls race for every occurrence, and each is
// inserted once (NOW() in the VALUES is the occurrence's time, so a twice
// inserted one shows as a repeated time).
func TestSchedulesFireOnceAcrossDBs(t *testing.T) {
	t.Parallel()
	name := fmt.Sprintf("memory:sched%d?fault_conflict=0.1&fault_unknown=0.3&fault_seed=7", time.Now().UnixNano())
	var dbs []*sql.DB
	for range 2 {
		db, err := sql.Open("fdbqueue", name)
		require.NoError(t, err)
		t.Cleanup(func() { _ = db.Close() })
		require.NoError(t, db.Ping()) // starts its ticker
		dbs = append(dbs, db)
	}
	_, err := dbs[0].Exec("CREATE TABLE jobs (kind TEXT NOT NULL, at TIMESTAMP NOT NULL)")
	require.NoError(t, err)
	_, err = dbs[1].Exec("CREATE SCHEDULE tick ON jobs EVERY 1 SECOND STARTING NOW() INSERT (kind, at) VALUES ('tick', NOW())")
	require.NoError(t, err)

	ctx := context.Background()
	count := func() int {
		var n int
		require.NoError(t, dbs[0].QueryRow("SELECT COUNT(*) FROM jobs").Scan(&n))
		return n
	}
	for count() < 3 {
		var wg sync.WaitGroup
		for _, db := range dbs {
			wg.Go(func() {
				_, err := fdbqueue.FireSchedules(ctx, db)
				require.NoError(t, err)
			})
		}
		wg.Wait()
		time.Sleep(50 * time.Millisecond)
	}
	_, err = dbs[0].Exec("DROP SCHEDULE tick")
	require.NoError(t, err)

	rows, err := dbs[1].Query("SELECT at FROM jobs")
	require.NoError(t, err)
	defer rows.Close()
	seen := map[time.Time]bool{}
	for rows.Next() {
		var at time.Time
		require.NoError(t, rows.Scan(&at))
		require.False(t, seen[at], "occurrence %v inserted twice", at)
		seen[at] = true
	}
	require.NoError(t, rows.Err())
	require.GreaterOrEqual(t, len(seen), 3)
}

// SHOW SCHEDULES and Schedules list what CREATE SCHEDULE stored; bad
// schedules are refused by name.
func TestSchedulesListAndRefuse(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("fdbqueue", "memory:")
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, err = db.Exec("CREATE TABLE jobs (kind TEXT NOT NULL)")
	require.NoError(t, err)
	_, err = db.Exec("CREATE SCHEDULE daily ON jobs EVERY 1 DAY INSERT (kind) VALUES ('cleanup')")
	require.NoError(t, err)

	s, err := fdbqueue.Schedules(context.Background(), db)
	require.NoError(t, err)
	require.Len(t, s, 1)
	require.Equal(t, "daily", s[0].Name)
	require.Equal(t, 24*time.Hour, s[0].Every)
	require.Equal(t, s[0].First, s[0].Next)

	var name, table, insert string
	var every int64
	var next time.Time
	require.NoError(t, db.QueryRow("SHOW SCHEDULES").Scan(&name, &table, &every, &next, &insert))
	require.Equal(t, []any{"daily", "jobs", int64(86400), "INSERT INTO `jobs` (kind) VALUES ('cleanup')"}, []any{name, table, every, insert})

	for sql, want := range map[string]error{
		"CREATE SCHEDULE daily ON jobs EVERY 1 DAY INSERT (kind) VALUES ('x')":                             fdbqueue.ErrScheduleExists,
		"CREATE SCHEDULE x ON nojobs EVERY 1 DAY INSERT (kind) VALUES ('x')":                               fdbqueue.ErrNoTable,
		"CREATE SCHEDULE x ON jobs EVERY 0 DAY INSERT (kind) VALUES ('x')":                                 fdbqueue.ErrValue,
		"CREATE SCHEDULE x ON jobs EVERY 1 DAY STARTING '2001-01-01T00:00:00Z' INSERT (kind) VALUES ('x')": fdbqueue.ErrSchedule,
		"DROP SCHEDULE nosuch": fdbqueue.ErrNoSchedule,
		"DROP TABLE jobs":      fdbqueue.ErrScheduled,
	} {
		_, err := db.Exec(sql)
		require.ErrorIs(t, err, want, sql)
	}

	// The refused DROP TABLE left the table and its schedule; dropped in
	// order, both go.
	_, err = db.Exec("INSERT INTO jobs (kind) VALUES ('still here')")
	require.NoError(t, err)
	_, err = db.Exec("DROP SCHEDULE daily")
	require.NoError(t, err)
	_, err = db.Exec("DROP TABLE jobs")
	require.NoError(t, err)
	s, err = fdbqueue.Schedules(context.Background(), db)
	require.NoError(t, err)
	require.Empty(t, s)
}

// TestSchedulesFireOnceAcrossProcesses: three processes on one file:
// database fire a schedule due every second as fast as they can (their
// tickers too), while one of them, the serving process first, is killed
// and started again: each occurrence is inserted once (its NOW() is its
// time, so a repeated time is a repeated occurrence), on the schedule's
// grid, across take-overs and commits of unknown outcome.
func TestSchedulesFireOnceAcrossProcesses(t *testing.T) {
	if os.Getenv("FDBQUEUE_PROC_ROLE") == "fire" {
		fireChild(os.Getenv("FDBQUEUE_PROC_DIR"))
		return
	}
	t.Parallel()
	p := newProcTest(t, "TestSchedulesFireOnceAcrossProcesses")
	db, err := sql.Open("fdbqueue", "file:"+p.dir)
	require.NoError(t, err)
	_, err = db.Exec("CREATE TABLE ticks (at TIMESTAMP NOT NULL)")
	require.NoError(t, err)
	_, err = db.Exec("CREATE SCHEDULE tick ON ticks EVERY 1 SECOND STARTING NOW() INSERT (at) VALUES (NOW())")
	require.NoError(t, err)
	s, err := fdbqueue.Schedules(context.Background(), db)
	require.NoError(t, err)
	require.Len(t, s, 1)
	first := s[0].First
	require.NoError(t, db.Close()) // the first child serves

	children := make([]*crashtest.Child, 3)
	for i := range children {
		children[i] = p.start("fire")
	}
	for i := range crashtest.Rounds(3) {
		time.Sleep(700 * time.Millisecond)
		k := i % len(children)
		children[k].Kill(t)
		children[k] = p.start("fire")
	}
	time.Sleep(1500 * time.Millisecond)
	for _, c := range children {
		c.Kill(t)
	}
	p.wg.Wait()
	require.Empty(t, p.errs)

	db, err = sql.Open("fdbqueue", "file:"+p.dir)
	require.NoError(t, err)
	defer db.Close()
	rows, err := db.Query("SELECT at FROM ticks")
	require.NoError(t, err)
	seen := map[time.Time]bool{}
	for rows.Next() {
		var at time.Time
		require.NoError(t, rows.Scan(&at))
		require.False(t, seen[at], "occurrence %v inserted twice", at)
		seen[at] = true
		require.Zero(t, at.Sub(first)%time.Second, "occurrence %v off the grid of %v", at, first)
	}
	require.NoError(t, rows.Err())
	require.GreaterOrEqual(t, len(seen), 2, "the schedule fired")
	fired := 0
	for _, n := range p.ints("fired") {
		fired += n
	}
	require.LessOrEqual(t, fired, len(seen), "acknowledged firings are in the table")
	t.Logf("%d occurrences, %d fired by FireSchedules", len(seen), fired)
}

// fireChild fires dir's schedules in a loop until killed, printing "fired
// n" for each acknowledged firing.
func fireChild(dir string) {
	db, err := sql.Open("fdbqueue", "file:"+dir)
	if err == nil {
		err = db.Ping()
	}
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	fmt.Println("ready")
	for {
		n, err := fdbqueue.FireSchedules(context.Background(), db)
		switch {
		case fdbqueue.IsMaybeCommitted(err):
			// The serving process died during the commit: the occurrence
			// is in the table or still due, and either passes the check.
		case err != nil:
			fmt.Println("error", err)
			os.Exit(2)
		case n > 0:
			fmt.Println("fired", n)
		}
		time.Sleep(time.Millisecond)
	}
}
