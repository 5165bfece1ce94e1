package driver_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fdbqueue "github.com/fdbqueue/fdbqueue/driver"
)

// createFit is the table of the put-back tests: a priority queue with a
// fit index, and n, which numbers the rows.
const createFit = `CREATE TABLE q (priority INT NOT NULL, cpu INT NOT NULL, mem INT NOT NULL, n INT, INDEX fit (cpu, mem))`

// fillFit creates q on db and inserts rows n = 1..total, 100 to an INSERT,
// every one fitting cpu <= 8 AND mem <= 32.
func fillFit(t *testing.T, db *sql.DB, total int) {
	t.Helper()
	_, err := db.Exec(createFit)
	require.NoError(t, err)
	for first := 1; first <= total; first += 100 {
		var vals []string
		var args []any
		for n := first; n < first+100 && n <= total; n++ {
			vals = append(vals, "(?, ?, ?, ?)")
			args = append(args, n%7, 1+n%8, 1+n%32, n)
		}
		_, err := db.Exec("INSERT INTO q VALUES "+strings.Join(vals, ", "), args...)
		require.NoError(t, err)
	}
}

// popTally is what a workload of pops saw: the rows delivered to the
// program (Scan succeeded), by n, and how many times Scan failed after
// Next returned true (the context ended between the two: see
// TestPopUnderDeadlines).
type popTally struct {
	mu         sync.Mutex
	delivered  map[int64]int
	scanFailed int
	// cut counts the pops whose rows were closed before they were all
	// read: those that put rows back.
	cut int
}

func (p *popTally) deliver(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.delivered == nil {
		p.delivered = map[int64]int{}
	}
	p.delivered[n]++
}

// check requires that every row was delivered once or is still in q,
// but for one row per failed Scan, and none both.
func (p *popTally) check(t *testing.T, db *sql.DB, total int) {
	t.Helper()
	rows, err := db.Query("SELECT n FROM q")
	require.NoError(t, err)
	left := map[int64]bool{}
	for rows.Next() {
		var n int64
		require.NoError(t, rows.Scan(&n))
		left[n] = true
	}
	require.NoError(t, rows.Err())
	for n, times := range p.delivered {
		require.Equal(t, 1, times, "row %d delivered %d times", n, times)
		require.False(t, left[n], "row %d delivered and still queued", n)
	}
	require.Equal(t, total, len(p.delivered)+len(left)+p.scanFailed,
		"delivered %d + left %d + failed scans %d", len(p.delivered), len(left), p.scanFailed)
}

// popUntilEmpty runs workers goroutines that pop LIMIT 3 from q under
// contexts that end after a random 0 to 400 µs, reading every row they
// can, until a pop that ran to its end finds nothing. One pop in four has
// no deadline: on a slow machine (the race detector) a pop may never end
// within 400 µs, and the table must still drain.
func popUntilEmpty(t *testing.T, db *sql.DB, workers int) *popTally {
	t.Helper()
	tally := &popTally{}
	drain(t, workers, func() (int, error) {
		ctx, cancel := context.WithCancel(bg)
		if rand.IntN(4) != 0 {
			ctx, cancel = context.WithTimeout(bg, time.Duration(rand.IntN(400))*time.Microsecond)
		}
		defer cancel()
		return popSome(ctx, db, tally)
	}, func(err error) bool { return errors.Is(err, context.DeadlineExceeded) })
	return tally
}

// drain runs workers goroutines that call pop until a call returns no rows
// and no error. An error for which passOver holds (if not nil) is passed
// over; any other fails the test.
func drain(t *testing.T, workers int, pop func() (int, error), passOver func(error) bool) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				got, err := pop()
				if err == nil && got == 0 {
					return
				}
				if err != nil && (passOver == nil || !passOver(err)) {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// popSome runs one pop of up to 3 rows and reads them; it returns how many
// it delivered.
func popSome(ctx context.Context, db *sql.DB, tally *popTally) (int, error) {
	rows, err := db.QueryContext(ctx, `SELECT n FROM q WHERE cpu <= ? AND mem <= ? ORDER BY priority DESC LIMIT 3 FOR POP`, 8, 32)
	if err != nil {
		return 0, err
	}
	got := 0
	for rows.Next() {
		var n int64
		if err := rows.Scan(&n); err != nil {
			tally.mu.Lock()
			tally.scanFailed++
			tally.mu.Unlock()
			break
		}
		tally.deliver(n)
		got++
		runtime.Gosched() // the program works on the row
	}
	err = errors.Join(rows.Close(), rows.Err())
	if errors.Is(err, context.DeadlineExceeded) {
		tally.mu.Lock()
		tally.cut++
		tally.mu.Unlock()
	}
	return got, err
}

// TestPopUnderDeadlines: pops whose contexts end while the
// program reads their rows lose none. database/sql closes the rows when
// the context ends, after the pop committed; the rows the program had not
// read go back to the table.
func TestPopUnderDeadlines(t *testing.T) {
	t.Parallel()
	const total = 4000
	onEngines(t, func(t *testing.T, db *sql.DB) {
		fillFit(t, db, total)
		tally := popUntilEmpty(t, db, 8)
		t.Logf("delivered %d, pops cut short %d, failed scans %d", len(tally.delivered), tally.cut, tally.scanFailed)
		tally.check(t, db, total)
	})
}

// onEngines runs fn, in parallel, on a database of each embedded engine:
// memory, and file (see waitDSNs).
func onEngines(t *testing.T, fn func(*testing.T, *sql.DB)) {
	for name, dsn := range waitDSNs(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db, err := sql.Open("fdbqueue", dsn)
			require.NoError(t, err)
			defer db.Close()
			fn(t, db)
		})
	}
}

// queued lists q's rows in pop order (ORDER BY priority DESC), each with
// its id, priority, n and pseudo-columns.
func queued(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query("SELECT id, priority, n, _attempts, _lease, _visible_at FROM q ORDER BY priority DESC")
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, prio, n, attempts, lease int64
		var vis time.Time
		require.NoError(t, rows.Scan(&id, &prio, &n, &attempts, &lease, &vis))
		out = append(out, fmt.Sprintf("n=%d id=%d priority=%d attempts=%d lease=%d visible_at=%d", n, id, prio, attempts, lease, vis.UnixNano()))
	}
	require.NoError(t, rows.Err())
	return out
}

// TestEarlyCloseReturnsUnreadRows: rows of an autocommit pop that the
// program did not read (it closed the rows after one of three, QueryRow
// read one, its context was cancelled before the first) go back to their
// places: the same ids, values, priorities and pseudo-columns, ahead of
// the rows pushed after them.
func TestEarlyCloseReturnsUnreadRows(t *testing.T) {
	t.Parallel()
	onEngines(t, func(t *testing.T, db *sql.DB) {
		_, err := db.Exec(createFit)
		require.NoError(t, err)
		for n := 1; n <= 6; n++ {
			prio := 5
			if n == 6 {
				prio = 1
			}
			_, err := db.Exec("INSERT INTO q VALUES (?, 1, 1, ?)", prio, n)
			require.NoError(t, err)
		}
		// n=2, leased and released: visible, with a lease and an attempt.
		var id2, lease int64
		require.NoError(t, db.QueryRow("SELECT id, _lease FROM q WHERE n = 2 LIMIT 1 FOR LEASE 60").Scan(&id2, &lease))
		_, err = db.Exec("UPDATE q SET _visible_at = NOW() WHERE id = ? AND _lease = ?", id2, lease)
		require.NoError(t, err)
		before := queued(t, db)
		require.Len(t, before, 6)
		require.Contains(t, before[1], "attempts=1")

		const pop3 = "SELECT n FROM q WHERE cpu <= 8 AND mem <= 32 ORDER BY priority DESC LIMIT 3 FOR POP"
		rows, err := db.Query(pop3)
		require.NoError(t, err)
		require.True(t, rows.Next())
		var n int64
		require.NoError(t, rows.Scan(&n))
		require.Equal(t, int64(1), n)
		require.NoError(t, rows.Close())
		require.Equal(t, before[1:], queued(t, db), "n=2 and n=3 back at their places, as they were")

		require.NoError(t, db.QueryRow(pop3).Scan(&n))
		require.Equal(t, int64(2), n, "QueryRow takes the row it reads")
		require.Equal(t, before[2:], queued(t, db))

		ctx, cancel := context.WithCancel(bg)
		rows, err = db.QueryContext(ctx, pop3)
		require.NoError(t, err)
		cancel()
		require.False(t, rows.Next(), "no row is handed over once the context ended")
		require.ErrorIs(t, rows.Err(), context.Canceled)
		require.NoError(t, rows.Close())
		require.Equal(t, before[2:], queued(t, db))

		_, err = db.Exec("INSERT INTO q VALUES (5, 1, 1, 7)")
		require.NoError(t, err)
		var got []int64
		rows, err = db.Query("SELECT n FROM q ORDER BY priority DESC LIMIT 10 FOR POP")
		require.NoError(t, err)
		for rows.Next() {
			require.NoError(t, rows.Scan(&n))
			got = append(got, n)
		}
		require.NoError(t, rows.Err())
		require.Equal(t, []int64{3, 4, 5, 7, 6}, got, "the rows put back come before n=7, pushed after them")
	})
}

// TestPutBackUnderFaults: early Closes under commits that fail with
// not_committed, commit_unknown_result (applied or not) and
// transaction_too_old: every put-back is retried and applied once, so
// every row is delivered once, none lost, none twice. Then the same with
// contexts that end at random moments, under conflicts (a statement
// whose context ends after a commit of unknown outcome reports that it may
// have taken rows: driver.IsMaybeCommitted).
func TestPutBackUnderFaults(t *testing.T) {
	t.Parallel()
	for _, seed := range []int{1, 2, 3} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			db, err := sql.Open("fdbqueue", fmt.Sprintf("memory:?fault_conflict=0.1&fault_unknown=0.3&fault_too_old=0.05&fault_seed=%d", seed))
			require.NoError(t, err)
			defer db.Close()
			const total = 600
			fillFit(t, db, total)
			tally := &popTally{}
			drain(t, 4, func() (int, error) { return popOne(db, tally) }, nil)
			tally.check(t, db, total)
			require.Len(t, tally.delivered, total)
		})
	}
	t.Run("deadlines", func(t *testing.T) {
		t.Parallel()
		db, err := sql.Open("fdbqueue", "memory:?fault_conflict=0.1&fault_unknown=0.2&fault_too_old=0.05&fault_seed=4")
		require.NoError(t, err)
		defer db.Close()
		const total = 1000
		fillFit(t, db, total)
		popUntilEmpty(t, db, 8).check(t, db, total)
	})
}

// popOne pops up to 3 rows, reads the first and closes the rows, which
// puts the others back; it returns how many rows the pop returned.
func popOne(db *sql.DB, tally *popTally) (int, error) {
	rows, err := db.Query("SELECT n FROM q WHERE cpu <= ? AND mem <= ? ORDER BY priority DESC LIMIT 3 FOR POP", 8, 32)
	if err != nil {
		return 0, err
	}
	if !rows.Next() {
		return 0, errors.Join(rows.Err(), rows.Close())
	}
	var n int64
	if err := rows.Scan(&n); err != nil {
		return 0, errors.Join(err, rows.Close())
	}
	tally.deliver(n)
	return 1, rows.Close()
}

// TestPopInTxUnderDeadlines: inside a sql.Tx nothing is put back, and
// nothing needs to be: database/sql rolls the transaction back when its
// context ends, so a row is taken only by a Commit that succeeded (pops in
// transactions conflict, and are run again).
func TestPopInTxUnderDeadlines(t *testing.T) {
	t.Parallel()
	db := open(t)
	const total = 1000
	fillFit(t, db, total)
	tally := &popTally{}
	drain(t, 8, func() (int, error) {
		ctx, cancel := context.WithTimeout(bg, time.Duration(rand.IntN(400))*time.Microsecond)
		defer cancel()
		return popInTx(ctx, db, tally)
	}, func(err error) bool {
		return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, sql.ErrTxDone) || fdbqueue.IsRetryable(err)
	})
	tally.check(t, db, total)
	require.Zero(t, tally.scanFailed, "a failed Scan rolls its transaction back")
}

// popInTx pops up to 3 rows in a transaction, reads them and commits; the
// rows count as delivered once the commit succeeded.
func popInTx(ctx context.Context, db *sql.DB, tally *popTally) (int, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT n FROM q WHERE cpu <= ? AND mem <= ? ORDER BY priority DESC LIMIT 3 FOR POP`, 8, 32)
	if err != nil {
		return 0, err
	}
	var got []int64
	for rows.Next() {
		var n int64
		if err := rows.Scan(&n); err != nil {
			return 0, errors.Join(err, rows.Close())
		}
		got = append(got, n)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, err
	}
	for _, n := range got {
		tally.deliver(n)
	}
	return len(got), nil
}

// TestCloseDatabasePutsBackOpenRows: closing the database (which
// database/sql does without waiting for open rows) puts back the rows that
// open pops did not hand over before it closes the engine, as when a
// program shuts down by cancelling its workers' context and closing the
// database at once; the rows still open fail their next Next.
func TestCloseDatabasePutsBackOpenRows(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const total = 600
	reopen := func() *sql.DB {
		db, err := sql.Open("fdbqueue", "file:"+dir+"?sync=none")
		require.NoError(t, err)
		return db
	}
	db := reopen()
	fillFit(t, db, total)
	rows, err := db.Query("SELECT n FROM q ORDER BY priority DESC LIMIT 3 FOR POP")
	require.NoError(t, err)
	require.True(t, rows.Next())
	var first int64
	require.NoError(t, rows.Scan(&first))

	// Workers pop until their context is cancelled, and the database is
	// closed at once.
	tally := &popTally{}
	tally.deliver(first)
	ctx, cancel := context.WithCancel(bg)
	var wg sync.WaitGroup
	var popped sync.WaitGroup // each worker's first pop is done
	for range 4 {
		wg.Add(1)
		popped.Add(1)
		go func() {
			defer wg.Done()
			once := sync.OnceFunc(popped.Done)
			defer once()
			for ctx.Err() == nil {
				_, _ = popSome(ctx, db, tally)
				once()
			}
		}()
	}
	popped.Wait()
	cancel()
	require.NoError(t, db.Close())
	wg.Wait()

	require.False(t, rows.Next(), "the database closed the rows")
	require.ErrorContains(t, rows.Err(), "the database was closed")
	require.NoError(t, rows.Close())
	db = reopen()
	defer db.Close()
	tally.check(t, db, total)
}

// TestCloseDatabaseEndsWaits: closing the database ends a FOR POP WAIT
// under way (which took nothing) rather than waiting for it.
func TestCloseDatabaseEndsWaits(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("fdbqueue", "memory:")
	require.NoError(t, err)
	_, err = db.Exec(createFit)
	require.NoError(t, err)
	ctx := hangGuard(t)
	waited := make(chan error, 1)
	go func() {
		_, err := db.QueryContext(ctx, "SELECT n FROM q LIMIT 1 FOR POP WAIT 60")
		waited <- err
	}()
	for db.Stats().InUse == 0 {
		runtime.Gosched()
	}
	require.NoError(t, db.Close())
	err = <-waited
	require.Error(t, err)
	require.NotErrorIs(t, err, context.DeadlineExceeded, "the wait ran until the guard's deadline")
}
