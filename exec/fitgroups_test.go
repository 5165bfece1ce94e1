package exec_test

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/exec"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// TestFitPopGroupsExactlyOnce: consumers pop with random limits through
// the fit index while producers insert small batches, so that pops and
// INSERTs combine into groups (one attempt, several fit pops sharing
// their reads and the cell directory), with injected conflicts and
// slow commits: every row comes out once, within its pop's
// limits, and none is lost.
func TestFitPopGroupsExactlyOnce(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{Faults: &embedded.Faults{Seed: 5, Conflict: 0.05, CommitLatency: 100 * time.Microsecond}})
	defer db.Close()
	e := exec.New(certain{db}, tuple.Tuple{"fg"}.Pack())
	mustRun(t, e, "CREATE TABLE t (priority INT NOT NULL, cpu INT NOT NULL, mem INT NOT NULL, INDEX fit (cpu, mem))")
	var groups atomic.Int64
	e.OnGroup(func(n int) {
		if n > 1 {
			groups.Add(1)
		}
	})
	const producers, batches, rows, consumers = 3, 60, 3, 8
	var pushed atomic.Int64
	var mu sync.Mutex
	got := map[int64]bool{}
	var done atomic.Bool
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(p), 1))
			for range batches {
				var args []any
				sql := "INSERT INTO t (priority, cpu, mem) VALUES "
				for i := range rows {
					if i > 0 {
						sql += ", "
					}
					sql += "(?, ?, ?)"
					args = append(args, r.Int64N(4), 1+r.Int64N(4), 1+r.Int64N(8))
				}
				_, err := run(t, e, sql, args...)
				require.NoError(t, err)
				pushed.Add(rows)
			}
		})
	}
	pop := func(r *rand.Rand, cpu, mem int64) int {
		res, err := run(t, e, "SELECT id, cpu, mem FROM t WHERE cpu <= ? AND mem <= ? ORDER BY priority LIMIT 1 FOR POP", cpu, mem)
		require.NoError(t, err)
		return takePopped(t, res.Rows, &mu, got, cpu, mem)
	}
	var cw sync.WaitGroup
	for c := range consumers {
		cw.Go(func() {
			r := rand.New(rand.NewPCG(uint64(c), 2))
			for !done.Load() {
				pop(r, 1+r.Int64N(4), 1+r.Int64N(8))
			}
		})
	}
	wg.Wait()
	done.Store(true)
	cw.Wait()
	// Drain: whatever is left fits the largest limits.
	r := rand.New(rand.NewPCG(9, 9))
	for pop(r, 4, 8) > 0 {
	}
	require.Len(t, got, int(pushed.Load()), "every row pushed popped once")
	t.Logf("%d rows, %d groups", len(got), groups.Load())
}

// takePopped checks that each of rows (id, then one column a limit) fits
// limits and was not popped before, records its id in got under mu, and
// returns how many rows there were.
func takePopped(t *testing.T, rows [][]any, mu *sync.Mutex, got map[int64]bool, limits ...int64) int {
	t.Helper()
	for _, row := range rows {
		id := row[0].(int64)
		for i, limit := range limits {
			require.LessOrEqual(t, row[1+i].(int64), limit)
		}
		mu.Lock()
		require.False(t, got[id], "id %d popped twice", id)
		got[id] = true
		mu.Unlock()
	}
	return len(rows)
}
