package exec_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/exec"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/parser"
)

// counting is a kv.Database that counts the transactions opened through
// it (for a waiting statement: its rounds), their commits (attempts), and
// the commits that failed on a conflict.
type counting struct {
	kv.Database
	txns, commits, conflicts atomic.Int64
}

func (c *counting) CreateTransaction(ctx context.Context) (kv.Transaction, error) {
	tr, err := c.Database.CreateTransaction(ctx)
	if err != nil {
		return nil, err
	}
	c.txns.Add(1)
	return countingTx{Transaction: tr, c: c}, nil
}

type countingTx struct {
	kv.Transaction
	c *counting
}

func (t countingTx) Commit() error {
	err := t.Transaction.Commit()
	t.c.commits.Add(1)
	if kv.Code(err) == kv.CodeNotCommitted {
		t.c.conflicts.Add(1)
	}
	return err
}

// wakeRun has waiters consumers pop with FOR POP WAIT through one executor
// (counted by the returned counting) while a producer, through another,
// pushes pushes rows one at a time, each once the one before was taken and
// settle has passed (time for the other waiters to wait again). It checks
// that every row is taken exactly once, and returns the counts and the time
// from each push's commit to its row's arrival.
func wakeRun(tb testing.TB, db kv.Database, waiters, pushes int, settle time.Duration) (*counting, []time.Duration) {
	tb.Helper()
	c := &counting{Database: db}
	consumer, producer := exec.New(c, nil), exec.New(db, nil)
	parse := func(sql string) *parser.Parsed {
		p, err := parser.Parse(sql)
		require.NoError(tb, err)
		return p
	}
	_, err := producer.Auto(bg, parse("CREATE TABLE w (v INT)"), exec.Args{})
	require.NoError(tb, err)
	pop, push := parse("SELECT v FROM w LIMIT 1 FOR POP WAIT 60"), parse("INSERT INTO w VALUES (?)")

	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	taken := make(chan int64, pushes)
	errs := make(chan error, waiters)
	var wg sync.WaitGroup
	for range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				res, err := consumer.Auto(ctx, pop, exec.Args{})
				if ctx.Err() != nil {
					return
				}
				if err != nil {
					errs <- err
					return
				}
				for _, r := range res.Rows {
					taken <- r[0].(int64)
				}
			}
		}()
	}
	var lat []time.Duration
	seen := map[int64]bool{}
	for i := range int64(pushes) {
		if settle > 0 {
			time.Sleep(settle)
		}
		_, err := producer.Auto(bg, push, exec.Args{Positional: []any{i}})
		require.NoError(tb, err)
		pushed := time.Now()
		select {
		case v := <-taken:
			lat = append(lat, time.Since(pushed))
			require.False(tb, seen[v], "row %d taken twice", v)
			seen[v] = true
		case err := <-errs:
			require.NoError(tb, err)
		case <-time.After(10 * time.Second):
			tb.Fatalf("row %d was not taken", i)
		}
	}
	cancel()
	wg.Wait()
	require.Len(tb, seen, pushes)
	return c, lat
}

// TestWaitWakeups: waiting consumers run no transaction while nothing is
// pushed, and each push wakes each waiter at most once: one takes the row,
// the others (after at most one conflict with it) wait again. A waiter
// that polled, or retried in a loop, would run more rounds than that.
func TestWaitWakeups(t *testing.T) {
	t.Parallel()
	const waiters, pushes = 8, 40
	db := embedded.Open("", embedded.Config{})
	defer db.Close()

	// Idle: each waiter runs its first round, then nothing.
	c := &counting{Database: db}
	e := exec.New(c, nil)
	mustRun(t, e, "CREATE TABLE idle (v INT)")
	ctx, cancel := context.WithCancel(bg)
	p, err := parser.Parse("SELECT v FROM idle LIMIT 1 FOR POP WAIT 60")
	require.NoError(t, err)
	var wg sync.WaitGroup
	for range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := e.Auto(ctx, p, exec.Args{})
			if !errors.Is(err, context.Canceled) {
				panic(fmt.Sprintf("want context.Canceled, got %v", err))
			}
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for c.txns.Load() < 1+waiters { // the CREATE, and a round each
		require.True(t, time.Now().Before(deadline), "the waiters did not start")
		time.Sleep(time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	require.EqualValues(t, 1+waiters, c.txns.Load(), "waiters ran transactions while nothing was pushed")
	cancel()
	wg.Wait()

	c, _ = wakeRun(t, db, waiters, pushes, 0)
	require.LessOrEqual(t, c.txns.Load(), int64(waiters*(pushes+1)), "rounds: one a waiter, then at most one a push each")
	require.LessOrEqual(t, c.conflicts.Load(), int64((waiters-1)*pushes+waiters), "conflicts: at most one per losing waiter and push")
}

// BenchmarkWaitWake: a push into a table that waiters wait on, until one
// of them has the row, with how many rounds (transactions) and conflicts
// each push costs the waiters. Memory and file (sync=none); pushes
// back-to-back (the next once the row was taken: woken waiters are still
// in their rounds), or settled (2 ms later: every waiter waits again, the
// worst case, where a push wakes them all). ns/op includes the settling.
func BenchmarkWaitWake(b *testing.B) {
	for _, engine := range []string{"memory", "file"} {
		for _, tc := range []struct {
			waiters int
			settle  time.Duration
		}{{1, 0}, {32, 0}, {32, 2 * time.Millisecond}} {
			mode := "back-to-back"
			if tc.settle > 0 {
				mode = "settled"
			}
			b.Run(fmt.Sprintf("%s/waiters=%d/%s", engine, tc.waiters, mode), func(b *testing.B) {
				var db kv.Database
				if engine == "memory" {
					db = embedded.Open("", embedded.Config{})
				} else {
					fdb, err := embedded.OpenFile(b.TempDir(), embedded.FileConfig{Sync: embedded.SyncNone})
					require.NoError(b, err)
					db = fdb
				}
				defer db.Close()
				b.ResetTimer()
				c, lat := wakeRun(b, db, tc.waiters, b.N, tc.settle)
				b.StopTimer()
				b.ReportMetric(float64(c.txns.Load())/float64(b.N), "rounds/push")
				b.ReportMetric(float64(c.conflicts.Load())/float64(b.N), "conflicts/push")
				var sum time.Duration
				for _, d := range lat {
					sum += d
				}
				b.ReportMetric(float64(sum.Microseconds())/float64(len(lat)), "us-commit-to-row")
			})
		}
	}
}

// TestWaitTooManyWatches: when the database holds as many watches as it
// may (kv.MaxWatches; here 1), a waiter whose watch fails with
// too_many_watches still waits, by polling, and gets its row.
func TestWaitTooManyWatches(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{MaxWatches: 1})
	defer db.Close()
	e := exec.New(db, nil)
	mustRun(t, e, "CREATE TABLE w (v INT)")
	p, err := parser.Parse("SELECT v FROM w LIMIT 1 FOR POP WAIT 30")
	require.NoError(t, err)
	const waiters = 3
	got := make(chan error, waiters)
	for range waiters {
		go func() {
			res, err := e.Auto(bg, p, exec.Args{})
			if err == nil && len(res.Rows) != 1 {
				err = fmt.Errorf("%d rows", len(res.Rows))
			}
			got <- err
		}()
	}
	time.Sleep(50 * time.Millisecond) // the waiters wait, all but one polling
	for i := range waiters {
		mustRun(t, e, "INSERT INTO w VALUES (?)", int64(i))
	}
	for range waiters {
		select {
		case err := <-got:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("a waiter did not get its row")
		}
	}
}
