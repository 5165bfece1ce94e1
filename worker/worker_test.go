package worker_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	_ "github.com/fdbqueue/fdbqueue/driver"
	"github.com/fdbqueue/fdbqueue/worker"
)

func open(t *testing.T, dsn, create string) *sql.DB {
	t.Helper()
	db, err := sql.Open("fdbqueue", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	if create != "" {
		_, err = db.Exec(create)
		require.NoError(t, err)
	}
	return db
}

func push(t *testing.T, db *sql.DB, n int) {
	t.Helper()
	for i := range n {
		_, err := db.Exec("INSERT INTO jobs (payload) VALUES (?)", fmt.Sprint("task ", i))
		require.NoError(t, err)
	}
}

func count(t *testing.T, db *sql.DB, table string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM "+table).Scan(&n))
	return n
}

// until polls cond (a state of the database the workers reach): the
// test's timeout bounds it, nothing asserts how long it took.
func until(t *testing.T, cond func() bool) {
	t.Helper()
	for !cond() {
		time.Sleep(5 * time.Millisecond)
	}
}

// runAsync runs w in a goroutine; the returned function cancels it and
// returns Run's error.
func runAsync(w *worker.Worker, h worker.Handler) (stop func() error, ctx context.Context) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, h) }()
	return func() error { cancel(); return <-done }, ctx
}

// everyTaskOnce runs Concurrency workers (over each of dbs) until n tasks
// are acked, and checks each was acked exactly once; fail(j) says whether
// the handler fails this attempt.
func everyTaskOnce(t *testing.T, dbs []*sql.DB, n int, fail func(j *worker.Job) bool) {
	var mu sync.Mutex
	acked := map[string]int{}
	all := make(chan struct{})
	cfg := worker.Config{
		Table: "jobs", Columns: []string{"payload"},
		Lease: 10 * time.Second, Wait: time.Second, Concurrency: 3,
		Hooks: worker.Hooks{OnSuccess: func(_ context.Context, j *worker.Job, _ time.Duration) {
			var p string
			require.NoError(t, j.Scan(&p))
			mu.Lock()
			defer mu.Unlock()
			acked[p]++
			if len(acked) == n && acked[p] == 1 {
				close(all)
			}
		}},
	}
	var stops []func() error
	for _, db := range dbs {
		stop, _ := runAsync(worker.New(db, cfg), func(ctx context.Context, j *worker.Job) error {
			if fail(j) {
				return worker.RetryAfter(0, errors.New("try again"))
			}
			return nil
		})
		stops = append(stops, stop)
	}
	<-all
	for _, stop := range stops {
		require.NoError(t, stop())
	}
	require.Len(t, acked, n)
	for p, k := range acked {
		require.Equal(t, 1, k, p)
	}
	require.Equal(t, int64(0), count(t, dbs[0], "jobs"))
}

func TestEveryTaskOnce(t *testing.T) {
	t.Parallel()
	db := open(t, "memory:", "CREATE TABLE jobs (payload TEXT)")
	push(t, db, 60)
	everyTaskOnce(t, []*sql.DB{db}, 60, func(j *worker.Job) bool { return j.Attempts == 1 && j.ID%4 == 0 })
}

// TestEveryTaskOnceFile: two *sql.DB on one file: database (as two
// processes would share it), three workers each.
func TestEveryTaskOnceFile(t *testing.T) {
	t.Parallel()
	dsn := "file:" + t.TempDir()
	db := open(t, dsn, "CREATE TABLE jobs (payload TEXT)")
	push(t, db, 30)
	everyTaskOnce(t, []*sql.DB{db, open(t, dsn, "")}, 30, func(j *worker.Job) bool { return j.Attempts == 1 && j.ID%3 == 0 })
}

// TestExactlyOnceAcksUnderFaults: conflicts and commits of unknown result
// on every statement; each task is acked (OnSuccess) exactly once.
func TestExactlyOnceAcksUnderFaults(t *testing.T) {
	t.Parallel()
	for seed := range 3 {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			db := open(t, fmt.Sprintf("memory:?fault_unknown=0.1&fault_conflict=0.1&fault_seed=%d", seed), "CREATE TABLE jobs (payload TEXT)")
			push(t, db, 40)
			everyTaskOnce(t, []*sql.DB{db}, 40, func(j *worker.Job) bool { return j.Attempts == 1 && j.ID%5 == 0 })
		})
	}
}

// TestFailureReleasesAndDeadLetters: a handler that always fails; each
// attempt is released with _error (cut to 1,000 bytes at a character
// boundary) and the task moves to jobs_dead after MAX_ATTEMPTS.
func TestFailureReleasesAndDeadLetters(t *testing.T) {
	t.Parallel()
	db := open(t, "memory:", "CREATE TABLE jobs (payload TEXT) MAX_ATTEMPTS=3")
	push(t, db, 5)
	long := "bad: " + strings.Repeat("é", 600) // 1,205 bytes
	var mu sync.Mutex
	attempts := map[int64][]int64{}
	stop, _ := runAsync(worker.New(db, worker.Config{
		Table: "jobs", Lease: 10 * time.Second, Wait: time.Second, Concurrency: 2,
		Hooks: worker.Hooks{OnFailure: func(_ context.Context, j *worker.Job, err error, _ time.Duration) {
			require.EqualError(t, err, long)
			mu.Lock()
			attempts[j.ID] = append(attempts[j.ID], j.Attempts)
			mu.Unlock()
		}},
	}), func(ctx context.Context, j *worker.Job) error {
		return errors.New(long)
	})
	until(t, func() bool { return count(t, db, "jobs_dead") == 5 })
	require.NoError(t, stop())
	require.Equal(t, int64(0), count(t, db, "jobs"))
	require.Len(t, attempts, 5)
	for id, a := range attempts {
		require.ElementsMatch(t, []int64{1, 2, 3}, a, id)
	}
	rows, err := db.Query("SELECT _attempts, _error FROM jobs_dead")
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var n int64
		var e string
		require.NoError(t, rows.Scan(&n, &e))
		require.Equal(t, int64(3), n)
		require.True(t, utf8.ValidString(e))
		require.LessOrEqual(t, len(e), worker.MaxErrorSize)
		require.Greater(t, len(e), worker.MaxErrorSize-2)
		require.True(t, strings.HasPrefix(long, e))
	}
	require.NoError(t, rows.Err())
}

// TestHeartbeatKeepsLease: a handler that runs longer than its Lease
// keeps its task: no other worker is handed it meanwhile.
func TestHeartbeatKeepsLease(t *testing.T) {
	t.Parallel()
	const lease = 300 * time.Millisecond
	db := open(t, "memory:", "CREATE TABLE jobs (payload TEXT)")
	push(t, db, 1)
	var mu sync.Mutex
	calls := 0
	started, finish := make(chan struct{}), make(chan struct{})
	acked := make(chan struct{})
	stop, _ := runAsync(worker.New(db, worker.Config{
		Table: "jobs", Lease: lease, Heartbeat: lease / 6, Wait: lease, Concurrency: 3,
		Hooks: worker.Hooks{OnSuccess: func(context.Context, *worker.Job, time.Duration) { close(acked) }},
	}), func(ctx context.Context, j *worker.Job) error {
		mu.Lock()
		calls++
		mu.Unlock()
		close(started) // a second call would panic: recovered, and counted
		select {
		case <-finish:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	<-started
	var first time.Time
	require.NoError(t, db.QueryRow("SELECT _visible_at FROM jobs").Scan(&first))
	// Wait until the lease as first seen has ended, and a heartbeat has
	// moved it on past that (the row stays hidden).
	until(t, func() bool {
		var v time.Time
		require.NoError(t, db.QueryRow("SELECT _visible_at FROM jobs").Scan(&v))
		return time.Now().After(first.Add(lease)) && v.After(first.Add(lease))
	})
	close(finish)
	<-acked
	require.NoError(t, stop())
	require.Equal(t, 1, calls)
	require.Equal(t, int64(0), count(t, db, "jobs"))
}

// TestLostLeaseCancelsHandler: the row deleted, or leased by another
// worker, while the handler runs: the next heartbeat cancels the
// handler's context with ErrLeaseLost, and nothing is acked or released.
func TestLostLeaseCancelsHandler(t *testing.T) {
	t.Parallel()
	for _, steal := range []string{"delete", "lease"} {
		t.Run(steal, func(t *testing.T) {
			t.Parallel()
			db := open(t, "memory:", "CREATE TABLE jobs (payload TEXT)")
			push(t, db, 1)
			jobs := make(chan *worker.Job, 1)
			causes := make(chan error, 1)
			failures := make(chan error, 1)
			stop, _ := runAsync(worker.New(db, worker.Config{
				Table: "jobs", Lease: time.Minute, Heartbeat: 20 * time.Millisecond, Wait: time.Second,
				Hooks: worker.Hooks{OnFailure: func(_ context.Context, _ *worker.Job, err error, _ time.Duration) { failures <- err }},
			}), func(ctx context.Context, j *worker.Job) error {
				jobs <- j
				<-ctx.Done()
				causes <- context.Cause(ctx)
				return nil
			})
			j := <-jobs
			var thief int64
			switch steal {
			case "delete":
				_, err := db.Exec("DELETE FROM jobs WHERE id = ?", j.ID)
				require.NoError(t, err)
			case "lease":
				_, err := db.Exec("UPDATE jobs SET _visible_at = NOW() WHERE id = ? AND _lease = ?", j.ID, j.Lease)
				require.NoError(t, err)
				require.NoError(t, db.QueryRow("SELECT _lease FROM jobs LIMIT 1 FOR LEASE 60").Scan(&thief))
			}
			require.ErrorIs(t, <-causes, worker.ErrLeaseLost)
			require.ErrorIs(t, <-failures, worker.ErrLeaseLost)
			require.NoError(t, stop())
			if steal == "lease" {
				var lease int64
				require.NoError(t, db.QueryRow("SELECT _lease FROM jobs").Scan(&lease))
				require.Equal(t, thief, lease) // the worker did not ack the thief's task
			}
		})
	}
}

// TestShutdownReleases: Run's context ends while handlers run; after
// ShutdownTimeout their contexts are cancelled and their tasks visible
// at once (not after the minute-long lease).
func TestShutdownReleases(t *testing.T) {
	t.Parallel()
	db := open(t, "memory:", "CREATE TABLE jobs (payload TEXT)")
	push(t, db, 2)
	started := make(chan struct{}, 2)
	stop, _ := runAsync(worker.New(db, worker.Config{
		Table: "jobs", Lease: time.Minute, Wait: time.Second, Concurrency: 2,
	}), func(ctx context.Context, j *worker.Job) error {
		started <- struct{}{}
		<-ctx.Done()
		require.ErrorIs(t, context.Cause(ctx), worker.ErrShutdown)
		return ctx.Err()
	})
	<-started
	<-started
	require.NoError(t, stop())
	rows, err := db.Query("SELECT id, _error FROM jobs LIMIT 2 FOR LEASE 60") // no WAIT: visible now
	require.NoError(t, err)
	n := 0
	for rows.Next() {
		var id int64
		var e string
		require.NoError(t, rows.Scan(&id, &e))
		require.Contains(t, e, "shut down")
		n++
	}
	require.NoError(t, rows.Err())
	require.Equal(t, 2, n)
}

// TestShutdownWaitsForHandlers: a handler that finishes within
// ShutdownTimeout is acked as usual.
func TestShutdownWaitsForHandlers(t *testing.T) {
	t.Parallel()
	db := open(t, "memory:", "CREATE TABLE jobs (payload TEXT)")
	push(t, db, 1)
	started, finish := make(chan struct{}), make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- worker.New(db, worker.Config{Table: "jobs", Wait: time.Second, ShutdownTimeout: time.Hour}).
			Run(ctx, func(hctx context.Context, j *worker.Job) error {
				close(started)
				<-finish
				return hctx.Err()
			})
	}()
	<-started
	cancel()
	close(finish)
	require.NoError(t, <-done)
	require.Equal(t, int64(0), count(t, db, "jobs"))
}

// TestPanicRecovered: a panic is the handler's error: released with
// _error saying so, the stack for OnFailure.
func TestPanicRecovered(t *testing.T) {
	t.Parallel()
	db := open(t, "memory:", "CREATE TABLE jobs (payload TEXT) MAX_ATTEMPTS=1")
	push(t, db, 1)
	failures := make(chan error, 1)
	stop, _ := runAsync(worker.New(db, worker.Config{
		Table: "jobs", Wait: time.Second,
		Hooks: worker.Hooks{OnFailure: func(_ context.Context, _ *worker.Job, err error, _ time.Duration) { failures <- err }},
	}), func(ctx context.Context, j *worker.Job) error {
		panic("oops")
	})
	var p *worker.PanicError
	require.ErrorAs(t, <-failures, &p)
	require.Equal(t, "oops", p.Value)
	require.Contains(t, string(p.Stack), "worker_test")
	until(t, func() bool { return count(t, db, "jobs_dead") == 1 })
	require.NoError(t, stop())
	var e string
	require.NoError(t, db.QueryRow("SELECT _error FROM jobs_dead").Scan(&e))
	require.Equal(t, "worker: handler panicked: oops", e)
}

// TestRetryAfterAndDrop: RetryAfter hides the task for its delay; Drop
// removes it.
func TestRetryAfterAndDrop(t *testing.T) {
	t.Parallel()
	db := open(t, "memory:", "CREATE TABLE jobs (payload TEXT)")
	push(t, db, 2)
	failures := make(chan error, 2)
	before := time.Now()
	stop, _ := runAsync(worker.New(db, worker.Config{
		Table: "jobs", Columns: []string{"payload"}, Wait: time.Second,
		Hooks: worker.Hooks{OnFailure: func(_ context.Context, _ *worker.Job, err error, _ time.Duration) { failures <- err }},
	}), func(ctx context.Context, j *worker.Job) error {
		var p string
		require.NoError(t, j.Scan(&p))
		if p == "task 0" {
			return worker.RetryAfter(time.Hour, errors.New("later"))
		}
		return worker.Drop(errors.New("never"))
	})
	got := []string{(<-failures).Error(), (<-failures).Error()}
	require.ElementsMatch(t, []string{"later", "never"}, got)
	until(t, func() bool { return count(t, db, "jobs") == 1 })
	require.NoError(t, stop())
	var p, e string
	var v time.Time
	require.NoError(t, db.QueryRow("SELECT payload, _error, _visible_at FROM jobs").Scan(&p, &e, &v))
	require.Equal(t, "task 0", p)
	require.Equal(t, "later", e)
	require.True(t, v.After(before.Add(time.Hour)), v)
}

func TestScan(t *testing.T) {
	t.Parallel()
	db := open(t, "memory:", "CREATE TABLE jobs (n INT, s TEXT, b BLOB)")
	_, err := db.Exec("INSERT INTO jobs (n, s, b) VALUES (42, NULL, 'xy')")
	require.NoError(t, err)
	jobs := make(chan *worker.Job, 1)
	stop, _ := runAsync(worker.New(db, worker.Config{Table: "jobs", Columns: []string{"n", "s", "b"}, Wait: time.Second}),
		func(ctx context.Context, j *worker.Job) error { jobs <- j; return nil })
	j := <-jobs
	require.NoError(t, stop())
	var n string
	var s *string
	var b []byte
	require.NoError(t, j.Scan(&n, &s, &b))
	require.Equal(t, "42", n)
	require.Nil(t, s)
	require.Equal(t, []byte("xy"), b)
	var ns sql.NullString
	var i int
	require.Error(t, j.Scan(&i, &i, &b)) // NULL into an int
	require.NoError(t, j.Scan(&i, &ns, &b))
	require.Equal(t, 42, i)
	require.False(t, ns.Valid)
	require.ErrorContains(t, j.Scan(&i), "1 destinations for 3 columns")
}

func TestConfigRefused(t *testing.T) {
	t.Parallel()
	db := open(t, "memory:", "CREATE TABLE jobs (payload TEXT)")
	h := func(context.Context, *worker.Job) error { return nil }
	for _, c := range []worker.Config{
		{},
		{Table: "jobs`; DROP TABLE jobs; --"},
		{Table: "jobs", Columns: []string{"a\x00"}},
		{Table: "jobs", Lease: time.Second, Heartbeat: time.Second},
		{Table: "jobs", Wait: 301 * time.Second},
		{Table: "jobs", Concurrency: -1},
		{Table: "jobs", ShutdownTimeout: -1},
	} {
		require.ErrorIs(t, worker.New(db, c).Run(context.Background(), h), worker.ErrConfig, "%+v", c)
	}
	require.ErrorIs(t, worker.New(db, worker.Config{Table: "jobs"}).Run(context.Background(), nil), worker.ErrConfig)
	// The statement's own errors end Run: an unknown table, bad Where SQL.
	require.ErrorContains(t, worker.New(db, worker.Config{Table: "nope", Wait: time.Second}).Run(context.Background(), h), "nope")
	require.Error(t, worker.New(db, worker.Config{Table: "jobs", Where: "((", Wait: time.Second}).Run(context.Background(), h))
	// A name that needs quoting is quoted.
	_, err := db.Exec("CREATE TABLE `odd name` (`select` TEXT)")
	require.NoError(t, err)
	_, err = db.Exec("INSERT INTO `odd name` (`select`) VALUES ('x')")
	require.NoError(t, err)
	got := make(chan string, 1)
	stop, _ := runAsync(worker.New(db, worker.Config{Table: "odd name", Columns: []string{"select"}, Wait: time.Second}),
		func(ctx context.Context, j *worker.Job) error {
			var s string
			require.NoError(t, j.Scan(&s))
			got <- s
			return nil
		})
	require.Equal(t, "x", <-got)
	require.NoError(t, stop())
}

// TestWhereOrderBy: the caller's Where (with Args) and OrderBy shape the
// lease.
func TestWhereOrderBy(t *testing.T) {
	t.Parallel()
	db := open(t, "memory:", "CREATE TABLE jobs (priority INT NOT NULL, cpu INT NOT NULL, mem INT NOT NULL, payload TEXT, INDEX (cpu, mem))")
	for _, r := range [][3]int{{1, 1, 1}, {5, 8, 1}, {3, 2, 2}, {4, 1, 1}} {
		_, err := db.Exec("INSERT INTO jobs (priority, cpu, mem) VALUES (?, ?, ?)", r[0], r[1], r[2])
		require.NoError(t, err)
	}
	got := make(chan int64, 4)
	stop, _ := runAsync(worker.New(db, worker.Config{
		Table: "jobs", Columns: []string{"priority"}, Where: "cpu <= ? AND mem <= ?", Args: []any{4, 4},
		OrderBy: "priority DESC", Wait: time.Second,
	}), func(ctx context.Context, j *worker.Job) error {
		var p int64
		require.NoError(t, j.Scan(&p))
		got <- p
		return nil
	})
	require.Equal(t, []int64{4, 3, 1}, []int64{<-got, <-got, <-got})
	require.NoError(t, stop())
	require.Equal(t, int64(1), count(t, db, "jobs")) // the one that does not fit
}

func TestNilErrors(t *testing.T) {
	t.Parallel()
	require.EqualError(t, worker.Drop(nil), "worker: dropped")
	require.EqualError(t, worker.RetryAfter(time.Second, nil), "worker: retry after 1s")
	inner := errors.New("inner")
	require.ErrorIs(t, worker.Drop(inner), inner)
	require.ErrorIs(t, worker.RetryAfter(time.Second, inner), inner)
}
