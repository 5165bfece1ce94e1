package driver_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fdbqueue "github.com/fdbqueue/fdbqueue/driver"
)

// waitDSNs are the engines FOR POP WAIT is tested on: memory, and file
// (whose commits go through the log before they fire watches).
func waitDSNs(t *testing.T) map[string]string {
	return map[string]string{"memory": "memory:", "file": "file:" + t.TempDir() + "?sync=none"}
}

// openDSN opens dsn with a jobs table.
func openDSN(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("fdbqueue", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, err = db.Exec("CREATE TABLE jobs (priority INT NOT NULL, cpu INT NOT NULL, name TEXT, INDEX fit (cpu))")
	require.NoError(t, err)
	return db
}

// later runs fn d from now, in a goroutine, and delivers its error.
func later(d time.Duration, fn func() error) <-chan error {
	done := make(chan error, 1)
	go func() {
		time.Sleep(d)
		done <- fn()
	}()
	return done
}

// hangGuard fails the test if a statement that should end does not end
// within a generous time: a wait that hangs.
func hangGuard(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestWaitGetsLaterPush: a waiting pop returns the row another goroutine
// pushes 50 ms later, and not before that push; on every FOR POP shape.
func TestWaitGetsLaterPush(t *testing.T) {
	t.Parallel()
	for name, dsn := range waitDSNs(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := openDSN(t, dsn)
			for _, pop := range []string{
				"SELECT name FROM jobs LIMIT 1 FOR POP WAIT 30",
				"SELECT name FROM jobs ORDER BY priority DESC LIMIT 1 FOR POP WAIT 30",
				"SELECT name FROM jobs WHERE cpu <= 2 ORDER BY priority LIMIT 1 FOR POP WAIT 30",
				"SELECT name FROM jobs WHERE cpu <= 2 LIMIT 5 FOR POP WAIT 30",
			} {
				var pushing atomic.Bool
				pushed := later(50*time.Millisecond, func() error {
					pushing.Store(true)
					_, err := db.Exec("INSERT INTO jobs VALUES (1, 1, 'later')")
					return err
				})
				var got string
				require.NoError(t, db.QueryRowContext(hangGuard(t), pop).Scan(&got), pop)
				require.True(t, pushing.Load(), "%s returned before the push", pop)
				require.Equal(t, "later", got, pop)
				require.NoError(t, <-pushed)
			}
			require.Zero(t, count(t, db, "jobs"))
		})
	}
}

// TestWaitFit: a fit pop waits through pushes that do not fit it, takes the
// first that does, and leaves the others queued.
func TestWaitFit(t *testing.T) {
	t.Parallel()
	db := openDSN(t, "memory:")
	done := make(chan error, 1)
	var got string
	go func() {
		done <- db.QueryRowContext(hangGuard(t), "SELECT name FROM jobs WHERE cpu <= ? LIMIT 1 FOR POP WAIT ?", 2, 30).Scan(&got)
	}()
	for i := range 3 {
		time.Sleep(20 * time.Millisecond)
		_, err := db.Exec("INSERT INTO jobs VALUES (1, ?, ?)", 4+i, fmt.Sprint("big", i))
		require.NoError(t, err)
	}
	_, err := db.Exec("INSERT INTO jobs VALUES (1, 1, 'fits')")
	require.NoError(t, err)
	require.NoError(t, <-done)
	require.Equal(t, "fits", got)
	require.EqualValues(t, 3, count(t, db, "jobs"), "the pushes that did not fit are still queued")
}

// TestWaitLimitN: FOR POP WAIT with LIMIT n waits for at least one row,
// then returns what there is, up to n: here the three rows of one INSERT.
func TestWaitLimitN(t *testing.T) {
	t.Parallel()
	db := openDSN(t, "memory:")
	pushed := later(50*time.Millisecond, func() error {
		_, err := db.Exec("INSERT INTO jobs VALUES (1, 1, 'a'), (2, 1, 'b'), (3, 1, 'c')")
		return err
	})
	defer func() { require.NoError(t, <-pushed) }()
	rows, err := db.QueryContext(hangGuard(t), "SELECT name FROM jobs ORDER BY priority LIMIT 5 FOR POP WAIT 30")
	require.Equal(t, []string{"a", "b", "c"}, column[string](t, rows, err))
}

// TestWaitDeadline: with nothing pushed, a wait ends with no rows, whether
// its seconds are a literal, a fraction, an int, a float or a
// time.Duration; WAIT 0 does not wait.
func TestWaitDeadline(t *testing.T) {
	t.Parallel()
	for name, dsn := range waitDSNs(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := openDSN(t, dsn)
			var name string
			ctx := hangGuard(t)
			require.ErrorIs(t, db.QueryRowContext(ctx, "SELECT name FROM jobs LIMIT 1 FOR POP WAIT 0.05").Scan(&name), sql.ErrNoRows)
			require.ErrorIs(t, db.QueryRowContext(ctx, "SELECT name FROM jobs LIMIT 1 FOR POP WAIT 0").Scan(&name), sql.ErrNoRows)
			for _, w := range []any{50 * time.Millisecond, 0.05, int64(0), 0, time.Duration(0)} {
				require.ErrorIs(t, db.QueryRowContext(ctx, "SELECT name FROM jobs WHERE cpu <= 8 LIMIT 1 FOR POP WAIT ?", w).Scan(&name), sql.ErrNoRows, "%T %v", w, w)
			}
			// Named placeholders too.
			require.ErrorIs(t, db.QueryRowContext(ctx, "SELECT name FROM jobs WHERE cpu <= :cpu LIMIT 1 FOR POP WAIT :wait",
				sql.Named("cpu", 8), sql.Named("wait", 50*time.Millisecond)).Scan(&name), sql.ErrNoRows)
			// A wait still pops what is there at once.
			_, err := db.Exec("INSERT INTO jobs VALUES (1, 1, 'here')")
			require.NoError(t, err)
			require.NoError(t, db.QueryRowContext(ctx, "SELECT name FROM jobs LIMIT 1 FOR POP WAIT 300").Scan(&name))
			require.Equal(t, "here", name)
		})
	}
}

// TestWaitCancel: cancelling the statement's context ends the wait with the
// context's error, and the cancelled statement takes nothing afterwards.
func TestWaitCancel(t *testing.T) {
	t.Parallel()
	db := openDSN(t, "memory:")
	ctx, cancel := context.WithCancel(hangGuard(t))
	go func() {
		time.Sleep(50 * time.Millisecond)
		cancel()
	}()
	var name string
	err := db.QueryRowContext(ctx, "SELECT name FROM jobs LIMIT 1 FOR POP WAIT 300").Scan(&name)
	require.ErrorIs(t, err, context.Canceled)
	require.NoError(t, hangGuard(t).Err(), "the wait ended on the cancel, not on the guard")

	// A deadline on the context ends it the same way.
	dctx, dcancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer dcancel()
	require.ErrorIs(t, db.QueryRowContext(dctx, "SELECT name FROM jobs LIMIT 1 FOR POP WAIT 300").Scan(&name), context.DeadlineExceeded)

	_, err = db.Exec("INSERT INTO jobs VALUES (1, 1, 'after')")
	require.NoError(t, err)
	require.EqualValues(t, 1, count(t, db, "jobs"), "the cancelled waits took nothing")
}

// TestWaitManyWaiters: 32 waiters and 32 pushes, one at a time: every row
// is taken exactly once, and every waiter gets one.
func TestWaitManyWaiters(t *testing.T) {
	t.Parallel()
	for name, dsn := range waitDSNs(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := openDSN(t, dsn)
			const n = 32
			ctx := hangGuard(t)
			got := make(chan string, n)
			errs := make(chan error, n)
			for range n {
				go func() {
					var name string
					err := db.QueryRowContext(ctx, "SELECT name FROM jobs WHERE cpu <= 4 LIMIT 1 FOR POP WAIT 60").Scan(&name)
					if err != nil {
						errs <- err
						return
					}
					got <- name
				}()
			}
			// Give the waiters time to start waiting (the test holds
			// whether they did or not), then push one row at a time.
			time.Sleep(100 * time.Millisecond)
			for i := range n {
				_, err := db.Exec("INSERT INTO jobs VALUES (?, 1, ?)", i%3, fmt.Sprint("job", i))
				require.NoError(t, err)
				time.Sleep(time.Millisecond)
			}
			seen := map[string]bool{}
			for range n {
				select {
				case name := <-got:
					require.False(t, seen[name], "%s taken twice", name)
					seen[name] = true
				case err := <-errs:
					require.NoError(t, err)
				}
			}
			require.Len(t, seen, n)
			require.Zero(t, count(t, db, "jobs"))
		})
	}
}

// TestWaitDroppedTable: a waiter on a table that is dropped (never pushed
// to, or dropped and created again) ends with ErrNoTable instead of waiting
// out its time.
func TestWaitDroppedTable(t *testing.T) {
	t.Parallel()
	for name, dsn := range waitDSNs(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := openDSN(t, dsn)
			for _, again := range []bool{false, true} {
				// Late enough for the waiter to be waiting: if it
				// started after a drop and create, it would wait on
				// the new table (and the guard would fail the test).
				dropped := later(200*time.Millisecond, func() error {
					if _, err := db.Exec("DROP TABLE jobs"); err != nil || !again {
						return err
					}
					_, err := db.Exec("CREATE TABLE jobs (priority INT NOT NULL, cpu INT NOT NULL, name TEXT, INDEX fit (cpu))")
					return err
				})
				ctx := hangGuard(t)
				var name string
				err := db.QueryRowContext(ctx, "SELECT name FROM jobs LIMIT 1 FOR POP WAIT 300").Scan(&name)
				require.ErrorIs(t, err, fdbqueue.ErrNoTable, "recreated: %v", again)
				require.NoError(t, ctx.Err(), "the drop ended the wait")
				require.NoError(t, <-dropped)
				if !again {
					_, err = db.Exec("CREATE TABLE jobs (priority INT NOT NULL, cpu INT NOT NULL, name TEXT, INDEX fit (cpu))")
					require.NoError(t, err)
				}
			}
		})
	}
}

// TestWaitInTransaction: WAIT inside a transaction (BEGIN, or sql.Tx) is
// refused, saying why; WAIT 0 there is a plain pop.
func TestWaitInTransaction(t *testing.T) {
	t.Parallel()
	db := openDSN(t, "memory:")
	_, err := db.Exec("INSERT INTO jobs VALUES (1, 1, 'a'), (2, 1, 'b')")
	require.NoError(t, err)
	tx, err := db.Begin()
	require.NoError(t, err)
	var name string
	err = tx.QueryRow("SELECT name FROM jobs LIMIT 1 FOR POP WAIT 5").Scan(&name)
	require.ErrorIs(t, err, fdbqueue.ErrUnsupported)
	require.ErrorContains(t, err, "WAIT inside a transaction")
	require.ErrorIs(t, tx.QueryRow("SELECT name FROM jobs LIMIT 1 FOR POP WAIT ?", time.Second).Scan(&name), fdbqueue.ErrUnsupported)
	require.NoError(t, tx.QueryRow("SELECT name FROM jobs ORDER BY priority LIMIT 1 FOR POP WAIT 0").Scan(&name))
	require.Equal(t, "a", name)
	require.NoError(t, tx.Commit())

	conn, err := db.Conn(bg)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(bg, "BEGIN")
	require.NoError(t, err)
	require.ErrorIs(t, conn.QueryRowContext(bg, "SELECT name FROM jobs LIMIT 1 FOR POP WAIT 5").Scan(&name), fdbqueue.ErrUnsupported)
	_, err = conn.ExecContext(bg, "ROLLBACK")
	require.NoError(t, err)
	require.EqualValues(t, 1, count(t, db, "jobs"), "the refused waits took nothing")
}

// TestWaitBadArguments: a wait's argument that is not 0 to 300 seconds (a
// number or a time.Duration) is refused with ErrArgs, saying what is
// accepted, and takes nothing.
func TestWaitBadArguments(t *testing.T) {
	t.Parallel()
	db := openDSN(t, "memory:")
	_, err := db.Exec("INSERT INTO jobs VALUES (1, 1, 'stays')")
	require.NoError(t, err)
	for _, tc := range []struct {
		arg  any
		want string
	}{
		{-1, "a wait is 0 or more seconds"},
		{-0.5, "a wait is 0 or more seconds"},
		{-time.Second, "a wait is 0 or more seconds"},
		{301, "at most 300 seconds"},
		{5000.0, "at most 300 seconds"},
		{301 * time.Second, "at most 300 seconds"},
		{math.NaN(), "a wait is 0 or more seconds"},
		{math.Inf(1), "at most 300 seconds"},
		{"", `the string ""; bind a time.Duration or a number of seconds`},
		{"5", `the string "5"`},
		{"abc", `the string "abc"`},
		{nil, "NULL"},
		{true, "a bool"},
		{[]byte("5"), "a []uint8"},
	} {
		var name string
		err := db.QueryRow("SELECT name FROM jobs LIMIT 1 FOR POP WAIT ?", tc.arg).Scan(&name)
		require.ErrorIs(t, err, argClass(tc.arg), "%v", tc.arg)
		require.ErrorContains(t, err, tc.want, "%v", tc.arg)
	}
	require.EqualValues(t, 1, count(t, db, "jobs"), "nothing taken")
}

// TestDurationArgument: a time.Duration anywhere but WAIT is stored as
// int64 nanoseconds, as database/sql's default conversion makes it.
func TestDurationArgument(t *testing.T) {
	t.Parallel()
	db := openDSN(t, "memory:")
	_, err := db.Exec("INSERT INTO jobs (priority, cpu, name) VALUES (?, ?, 'd')", 1500*time.Millisecond, time.Duration(3))
	require.NoError(t, err)
	var prio, cpu int64
	require.NoError(t, db.QueryRow("SELECT priority, cpu FROM jobs WHERE cpu <= :c LIMIT 1 FOR POP WAIT :w", sql.Named("c", time.Duration(3)), sql.Named("w", time.Second)).Scan(&prio, &cpu))
	require.Equal(t, int64(1_500_000_000), prio)
	require.Equal(t, int64(3), cpu)
}

// TestWaitExactlyOnceUnderFaults: waiting consumers under injected
// conflicts and commit_unknown_result (after applying, and without): every
// pushed row is taken exactly once, as a waiting pop keeps its token
// through its retries and rounds.
func TestWaitExactlyOnceUnderFaults(t *testing.T) {
	t.Parallel()
	for _, seed := range []int{1, 2} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			db := openDSN(t, fmt.Sprintf("memory:?fault_conflict=0.1&fault_unknown=0.2&fault_seed=%d", seed))
			const producers, each, consumers = 4, 30, 6
			ctx := hangGuard(t)
			var popped sync.Map
			var taken atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, producers+consumers)
			for p := range producers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						if _, err := db.ExecContext(ctx, "INSERT INTO jobs VALUES (?, ?, ?)", i%3, 1+i%2, fmt.Sprint(p, "-", i)); err != nil {
							errs <- fmt.Errorf("push: %w", err)
							return
						}
					}
				}()
			}
			for c := range consumers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for taken.Load() < producers*each {
						var name string
						q := "SELECT name FROM jobs ORDER BY priority LIMIT 1 FOR POP WAIT 0.2"
						if c%2 == 1 {
							q = "SELECT name FROM jobs WHERE cpu <= 1 LIMIT 1 FOR POP WAIT 0.2"
						}
						err := db.QueryRowContext(ctx, q).Scan(&name)
						if errors.Is(err, sql.ErrNoRows) {
							continue
						}
						if err != nil {
							errs <- fmt.Errorf("pop: %w", err)
							return
						}
						if _, dup := popped.LoadOrStore(name, true); dup {
							errs <- fmt.Errorf("%s popped twice", name)
							return
						}
						taken.Add(1)
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			require.EqualValues(t, producers*each, taken.Load())
			require.Zero(t, count(t, db, "jobs"))
		})
	}
}

// argClass is the error a bad WAIT or FOR LEASE argument gets: ErrValue
// for a number out of range (as the same number written in the statement),
// ErrArgs for an argument of another type.
func argClass(v any) error {
	switch v.(type) {
	case int, int64, float64, time.Duration:
		return fdbqueue.ErrValue
	}
	return fdbqueue.ErrArgs
}
