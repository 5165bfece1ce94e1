package exec_test

import (
	"fmt"
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

// TestFitPopGroupsExactlyOnceShapes is TestFitPopGroupsExactlyOnce over
// another shape: three resources, a UNIQUE column (its index written and
// cleared in the pops' transaction), rows made visible a little later
// (promoted by the groups' pops), pops in both priority orders, and a
// head of tasks only the largest consumers take: every row comes out once,
// within its pop's limits, and none is lost.
func TestFitPopGroupsExactlyOnceShapes(t *testing.T) {
	t.Parallel()
	for _, faults := range []bool{false, true} {
		t.Run(fmt.Sprintf("faults=%v", faults), func(t *testing.T) {
			t.Parallel()
			cfg := embedded.Config{}
			if faults {
				cfg.Faults = &embedded.Faults{Seed: 7, Conflict: 0.05, CommitLatency: 100 * time.Microsecond}
			}
			db := embedded.Open("", cfg)
			defer db.Close()
			e := exec.New(certain{db}, tuple.Tuple{"fgs"}.Pack())
			mustRun(t, e, "CREATE TABLE t (priority INT NOT NULL, cpu INT NOT NULL, mem INT NOT NULL, gpu INT NOT NULL, ref TEXT UNIQUE, INDEX fit (cpu, mem, gpu))")
			var groups atomic.Int64
			e.OnGroup(func(n int) {
				if n > 1 {
					groups.Add(1)
				}
			})
			var pushed atomic.Int64
			// The sediment: large tasks first, at the head.
			for i := range 40 {
				mustRun(t, e, "INSERT INTO t (priority, cpu, mem, gpu, ref) VALUES (0, 4, 8, 2, ?)", fmt.Sprint("s", i))
				pushed.Add(1)
			}
			const producers, batches, rows, consumers = 3, 50, 3, 8
			var mu sync.Mutex
			got := map[int64]bool{}
			var done atomic.Bool
			var wg sync.WaitGroup
			for p := range producers {
				wg.Go(func() {
					r := rand.New(rand.NewPCG(uint64(p), 11))
					for b := range batches {
						var args []any
						sql := "INSERT INTO t (priority, cpu, mem, gpu, ref, _visible_at) VALUES "
						for i := range rows {
							if i > 0 {
								sql += ", "
							}
							delay := 0
							if r.IntN(6) == 0 {
								delay = 5 + r.IntN(20)
							}
							sql += fmt.Sprintf("(?, ?, ?, ?, ?, NOW() + INTERVAL %d.%03d SECOND)", 0, delay)
							args = append(args, r.Int64N(6), 1+r.Int64N(4), 1+r.Int64N(8), r.Int64N(3), fmt.Sprint(p, "-", b, "-", i))
						}
						_, err := run(t, e, sql, args...)
						require.NoError(t, err)
						pushed.Add(rows)
					}
				})
			}
			pop := func(desc bool, cpu, mem, gpu int64) int {
				sql := "SELECT id, cpu, mem, gpu FROM t WHERE cpu <= ? AND mem <= ? AND gpu <= ? ORDER BY priority LIMIT 1 FOR POP"
				if desc {
					sql = "SELECT id, cpu, mem, gpu FROM t WHERE cpu <= ? AND mem <= ? AND gpu <= ? ORDER BY priority DESC LIMIT 1 FOR POP"
				}
				res, err := run(t, e, sql, cpu, mem, gpu)
				require.NoError(t, err)
				return takePopped(t, res.Rows, &mu, got, cpu, mem, gpu)
			}
			var cw sync.WaitGroup
			for c := range consumers {
				cw.Go(func() {
					r := rand.New(rand.NewPCG(uint64(c), 12))
					for !done.Load() {
						pop(r.IntN(4) == 0, 1+r.Int64N(4), 1+r.Int64N(8), r.Int64N(3))
					}
				})
			}
			wg.Wait()
			done.Store(true)
			cw.Wait()
			// Drain: whatever is left fits the largest limits, once the
			// last delays (at most 25ms) ended.
			for empty := 0; len(got) < int(pushed.Load()); {
				if pop(false, 4, 8, 2) == 0 {
					empty++
					require.Less(t, empty, 1000, "rows left that no pop finds")
					time.Sleep(5 * time.Millisecond)
					mu.Lock()
					n := len(got)
					mu.Unlock()
					res := mustRun(t, e, "SELECT id FROM t")
					if len(res.Rows) == 0 {
						require.Equal(t, int(pushed.Load()), n, "every row pushed popped once")
					}
				}
			}
			require.Len(t, got, int(pushed.Load()), "every row pushed popped once")
			t.Logf("%d rows, %d groups", len(got), groups.Load())
		})
	}
}
