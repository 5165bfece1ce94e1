package driver_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fdbqueue "github.com/fdbqueue/fdbqueue/driver"
	"github.com/fdbqueue/fdbqueue/internal/crashtest"
)

// The child of TestLeaseCrashRecovery runs lcrashWorkers worker goroutines
// on one *sql.DB; each leases a task for lcrashLease, works for up to
// lcrashWork, and acks it: the DELETE of the task and the INSERT of its
// number into acked commit together in one sql.Tx, so the database itself
// says which tasks were acked, and how often. One task in 16 takes longer
// than its lease, so that another worker may lease it again and the slow
// worker's ack finds its lease lost.
const (
	lcrashWorkers = 3
	lcrashLease   = "0.3" // seconds: short, so abandoned tasks come back soon
	lcrashWork    = 20 * time.Millisecond
	lcrashSlow    = 400 * time.Millisecond // one task in 16: longer than the lease
	lcrashBatch   = 30                     // tasks added before each round
)

// errLcrashLost: the ack's DELETE removed nothing, the lease was lost (it
// expired and another worker leased the task again).
var errLcrashLost = errors.New("lease lost")

// lcrashChild is the child process of TestLeaseCrashRecovery. It prints
// "lease T A" once a lease of task T (its attempt A) returned, "ack T A" once
// the ack committed, "lost T A" when the ack found the lease gone. The hold-th
// lease (0: none) prints "hold T A" instead and its worker stops there, mid
// task, for the parent to kill the process. With drain set, a worker that
// finds nothing for WAIT's second stops, and the process exits once all have.
func lcrashChild(dir string, seed uint64, hold int64, drain bool) {
	var mu sync.Mutex // serializes the lines on stdout
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Printf(format+"\n", args...)
	}
	fail := func(err error) {
		say("error %v", err)
		os.Exit(2)
	}
	db, err := sql.Open("fdbqueue", "file:"+dir)
	if err != nil {
		fail(err)
	}
	if err := db.Ping(); err != nil {
		fail(err)
	}
	say("ready")
	var leases atomic.Int64
	var wg sync.WaitGroup
	for w := range lcrashWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			ctx := context.Background()
			for {
				var id, lease, attempts, task int64
				err := db.QueryRowContext(ctx, "SELECT id, _lease, _attempts, task FROM jobs LIMIT 1 FOR LEASE "+lcrashLease+" WAIT 1").
					Scan(&id, &lease, &attempts, &task)
				switch {
				case errors.Is(err, sql.ErrNoRows):
					if drain {
						return
					}
					continue
				case err != nil:
					fail(err)
				}
				if leases.Add(1) == hold {
					say("hold %d %d", task, attempts)
					select {} // mid task until killed
				}
				say("lease %d %d", task, attempts)
				work := time.Duration(r.Int64N(int64(lcrashWork)))
				if r.IntN(16) == 0 {
					work = lcrashSlow // outlives the lease: another worker may take the task
				}
				time.Sleep(work)
				err = fdbqueue.ExecuteTx(ctx, db, nil, func(tx *sql.Tx) error {
					res, err := tx.ExecContext(ctx, "DELETE FROM jobs WHERE id = ? AND _lease = ?", id, lease)
					if err != nil {
						return err
					}
					switch n, err := res.RowsAffected(); {
					case err != nil:
						return err
					case n != 1:
						return errLcrashLost
					}
					_, err = tx.ExecContext(ctx, "INSERT INTO acked (task, attempts) VALUES (?, ?)", task, attempts)
					return err
				})
				switch {
				case errors.Is(err, errLcrashLost):
					say("lost %d %d", task, attempts)
				case err != nil:
					fail(err)
				default:
					say("ack %d %d", task, attempts)
				}
			}
		}()
	}
	wg.Wait()
	say("empty")
	if err := db.Close(); err != nil {
		fail(err)
	}
	os.Exit(0)
}

// lcrashSeen is what children printed, over all rounds: the attempt of
// every lease that returned and of every ack that committed, and the leases
// held mid task when the child was killed.
type lcrashSeen struct {
	leased map[int64]int64 // task -> highest attempt a returned lease had
	acked  map[int64]int64 // task -> attempt of its committed ack
	held   map[int64]int64 // task -> attempt of the lease held at the kill
	lost   map[int64]int64 // task -> highest attempt whose ack found the lease lost
	losses int
}

// lcrashRun runs one child and records its lines in seen. It SIGKILLs the
// child when it holds a lease mid task (hold > 0), or killAfter after it is
// ready (killAfter > 0); otherwise it waits for it to exit. It reports
// whether it killed the child.
func lcrashRun(t *testing.T, dir string, seed uint64, hold int64, drain bool, killAfter time.Duration, seen *lcrashSeen) bool {
	t.Helper()
	env := []string{"FDBQUEUE_LCRASH_CHILD=" + dir, fmt.Sprint("FDBQUEUE_LCRASH_SEED=", seed), fmt.Sprint("FDBQUEUE_LCRASH_HOLD=", hold)}
	if drain {
		env = append(env, "FDBQUEUE_LCRASH_DRAIN=1")
	}
	child := crashtest.Start(t, "TestLeaseCrashRecovery", env...)
	var errLine string
	child.Read(t, func(l string) {
		f := strings.Fields(l)
		switch {
		case f[0] == "error":
			errLine = l
		case f[0] == "ready" && killAfter > 0:
			child.KillAfter(killAfter)
		case len(f) == 3:
			task, _ := strconv.ParseInt(f[1], 10, 64)
			attempts, _ := strconv.ParseInt(f[2], 10, 64)
			switch f[0] {
			case "lease":
				seen.leased[task] = max(seen.leased[task], attempts)
			case "hold":
				seen.leased[task] = max(seen.leased[task], attempts)
				seen.held[task] = attempts
				child.Kill(t)
			case "ack":
				prev, twice := seen.acked[task]
				require.False(t, twice, "task %d acked twice: attempts %d and %d", task, prev, attempts)
				seen.acked[task] = attempts
			case "lost":
				seen.lost[task] = max(seen.lost[task], attempts)
				seen.losses++
			}
		}
	})
	err := child.Wait()
	require.Empty(t, errLine, "the child failed")
	if !child.Killed {
		require.NoError(t, err, "the child exited badly")
	}
	if t.Failed() {
		t.FailNow()
	}
	return child.Killed
}

// TestLeaseCrashRecovery: worker processes that lease tasks on file: are
// SIGKILLed at random moments, and mid task; the next worker process goes
// on, and takes the abandoned tasks again once their leases expire. In the
// end every task has been acked exactly once: the database (the acks are
// recorded in the same transaction as the DELETE) holds each task's ack
// once, and no task twice or lost, and every task held at a kill came back
// for another attempt. FDBQUEUE_CRASH_ROUNDS sets the number of kills
// (scripts/soak-crash.sh).
func TestLeaseCrashRecovery(t *testing.T) {
	if dir := os.Getenv("FDBQUEUE_LCRASH_CHILD"); dir != "" {
		seed, _ := strconv.ParseUint(os.Getenv("FDBQUEUE_LCRASH_SEED"), 10, 64)
		hold, _ := strconv.ParseInt(os.Getenv("FDBQUEUE_LCRASH_HOLD"), 10, 64)
		lcrashChild(dir, seed, hold, os.Getenv("FDBQUEUE_LCRASH_DRAIN") != "")
		return
	}
	t.Parallel()
	rounds := 4
	if s := os.Getenv("FDBQUEUE_CRASH_ROUNDS"); s != "" {
		var err error
		rounds, err = strconv.Atoi(s)
		require.NoError(t, err, "FDBQUEUE_CRASH_ROUNDS")
	}
	dir := t.TempDir()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 3))
	seen := &lcrashSeen{leased: map[int64]int64{}, acked: map[int64]int64{}, held: map[int64]int64{}, lost: map[int64]int64{}}
	tasks := int64(0)

	db, err := sql.Open("fdbqueue", "file:"+dir)
	require.NoError(t, err)
	_, err = db.Exec("CREATE TABLE jobs (task INT NOT NULL)")
	require.NoError(t, err)
	_, err = db.Exec("CREATE TABLE acked (task INT NOT NULL, attempts INT NOT NULL)")
	require.NoError(t, err)
	require.NoError(t, db.Close())

	kills := 0
	for round := range rounds {
		// Between children: check what the database holds, and add tasks.
		db, err := sql.Open("fdbqueue", "file:"+dir)
		require.NoError(t, err)
		lcrashCheck(t, db, tasks, seen, false)
		for range lcrashBatch {
			_, err := db.Exec("INSERT INTO jobs (task) VALUES (?)", tasks)
			require.NoError(t, err)
			tasks++
		}
		require.NoError(t, db.Close())

		// Even rounds kill a worker mid task (it leased, and stops before
		// its ack), odd ones at a random moment.
		var hold int64
		var after time.Duration
		if round%2 == 0 {
			hold = 1 + r.Int64N(8)
		} else {
			after = time.Duration(10+r.IntN(300)) * time.Millisecond
		}
		held := len(seen.held)
		if lcrashRun(t, dir, r.Uint64(), hold, false, after, seen) {
			kills++
		}
		t.Logf("round %d: %d tasks, %d acks and %d leases seen, %d held at a kill (+%d), %d lost", round, tasks, len(seen.acked), len(seen.leased), len(seen.held), len(seen.held)-held, seen.losses)
	}

	// A last child drains the table, and is not killed.
	lcrashRun(t, dir, r.Uint64(), 0, true, 0, seen)
	db, err = sql.Open("fdbqueue", "file:"+dir)
	require.NoError(t, err)
	defer db.Close()
	retried, maxAttempts := lcrashCheck(t, db, tasks, seen, true)
	t.Logf("%d tasks, %d kills, %d held at a kill, %d acks lost their lease, %d tasks acked on a retry, at most %d attempts", tasks, kills, len(seen.held), seen.losses, retried, maxAttempts)
	if len(seen.held) > 0 {
		require.Positive(t, retried, "tasks abandoned mid task were never retried")
	}
}

// lcrashCheck checks the database against what children printed: every
// task numbered below tasks is either in jobs or in acked (drained: in
// acked), never both, never twice; an ack that was reported is there with
// its attempt; a lease that was reported counted its attempt; a task held at
// a kill was not acked on that attempt; a task whose ack found its lease
// lost was leased again, and not acked on that attempt. It returns how many
// tasks were acked on an attempt above the first, and the highest attempt.
func lcrashCheck(t *testing.T, db *sql.DB, tasks int64, seen *lcrashSeen, drained bool) (retried int, maxAttempts int64) {
	t.Helper()
	read := func(q string) map[int64]int64 {
		rows, err := db.Query(q)
		require.NoError(t, err)
		defer rows.Close()
		got := map[int64]int64{}
		for rows.Next() {
			var task, attempts int64
			require.NoError(t, rows.Scan(&task, &attempts))
			_, twice := got[task]
			require.False(t, twice, "%s: task %d twice", q, task)
			require.True(t, task >= 0 && task < tasks, "%s: task %d was never added", q, task)
			got[task] = attempts
		}
		require.NoError(t, rows.Err())
		return got
	}
	queued := read("SELECT task, _attempts FROM jobs")
	acked := read("SELECT task, attempts FROM acked")
	if drained {
		require.Empty(t, queued, "tasks left after the drain")
	}
	for task := range tasks {
		q, inJobs := queued[task]
		a, isAcked := acked[task]
		require.True(t, inJobs != isAcked, "task %d: in jobs %v, acked %v", task, inJobs, isAcked)
		attempts := q
		if isAcked {
			attempts = a
			if a > 1 {
				retried++
			}
		}
		maxAttempts = max(maxAttempts, attempts)
		if want, ok := seen.acked[task]; ok {
			require.True(t, isAcked, "task %d: its reported ack is gone", task)
			require.Equal(t, want, a, "task %d: acked on another attempt than reported", task)
		}
		if l, ok := seen.leased[task]; ok {
			require.GreaterOrEqual(t, attempts, l, "task %d: a reported lease's attempt is not counted", task)
		}
		if h, ok := seen.held[task]; ok && isAcked {
			require.Greater(t, a, h, "task %d: acked on the attempt held at a kill", task)
		}
		if l, ok := seen.lost[task]; ok {
			require.Greater(t, attempts, l, "task %d: an ack found its lease lost, and no later lease took the task", task)
			if isAcked {
				require.Greater(t, a, l, "task %d: acked on an attempt whose ack found its lease lost", task)
			}
		}
	}
	return retried, maxAttempts
}
