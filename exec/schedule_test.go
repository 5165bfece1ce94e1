package exec_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/exec"
	"github.com/fdbqueue/fdbqueue/internal/fdbmodel"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/parser"
)

// Two processes fire the same schedule at once, on every step of the
// stopped clock, while the engine fails commits with not_committed and
// commit_unknown_result (applied or not): every occurrence is inserted
// exactly once. A firing retried after an applied 1021 reads the advanced
// next-run key and inserts nothing.
func TestScheduleFiresOnceUnderFaults(t *testing.T) {
	t.Parallel()
	for _, seed := range []uint64{1, 2, 3} {
		for name, wrap := range map[string]func(kv.Database) kv.Database{
			"memory":   func(db kv.Database) kv.Database { return db },
			"fdbmodel": func(db kv.Database) kv.Database { return fdbmodel.Wrap(db, fdbmodel.Config{}) },
		} {
			t.Run(fmt.Sprintf("%s/seed%d", name, seed), func(t *testing.T) {
				t.Parallel()
				db := wrap(embedded.Open("", embedded.Config{Faults: &embedded.Faults{
					Seed: seed, Conflict: 0.1, UnknownApplied: 0.15, UnknownNotApplied: 0.15,
				}}))
				t.Cleanup(func() { _ = db.Close() })
				start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
				a := exec.New(db, []byte("s"))
				a.Deterministic(start)
				b := a.Second()
				ctx := context.Background()
				run := func(sql string) *exec.Result {
					p, err := parser.Parse(sql)
					require.NoError(t, err)
					res, err := a.Auto(ctx, p, exec.Args{})
					require.NoError(t, err, sql)
					return res
				}
				run("CREATE TABLE jobs (kind TEXT NOT NULL, at TIMESTAMP NOT NULL)")
				run("CREATE SCHEDULE tick ON jobs EVERY 1 SECOND STARTING NOW() INSERT (kind, at) VALUES ('tick', NOW())")

				const steps = 40
				fired := 0
				for step := 0; step <= steps; step++ {
					var wg sync.WaitGroup
					var mu sync.Mutex
					for _, e := range []*exec.Executor{a, b, a, b} {
						wg.Go(func() {
							n, err := e.FireDue(ctx)
							require.NoError(t, err)
							mu.Lock()
							fired += n
							mu.Unlock()
						})
					}
					wg.Wait()
					a.Advance(time.Second)
				}
				rows := run("SELECT at FROM jobs").Rows
				// A FireDue that reports an occurrence committed it; one
				// whose commit was unknown but applied may not know it
				// did, so fired counts at most the occurrences.
				require.LessOrEqual(t, fired, steps+1)
				require.Len(t, rows, steps+1, "one row per occurrence")
				seen := map[time.Time]bool{}
				for _, r := range rows {
					at := r[0].(time.Time)
					require.False(t, seen[at], "occurrence %v inserted twice", at)
					seen[at] = true
				}
			})
		}
	}
}

// Missed runs: with nobody firing for 5 intervals and a half, one
// occurrence fires (the first missed, whose time NOW() is), and the next
// run is the first slot after now, on the schedule's grid.
func TestScheduleMissedRunsFireOnce(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{})
	t.Cleanup(func() { _ = db.Close() })
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	e := exec.New(db, []byte("s"))
	e.Deterministic(start)
	ctx := context.Background()
	for _, sql := range []string{
		"CREATE TABLE jobs (at TIMESTAMP NOT NULL)",
		"CREATE SCHEDULE m ON jobs EVERY 1 MINUTE INSERT (at) VALUES (NOW())",
	} {
		p, err := parser.Parse(sql)
		require.NoError(t, err)
		_, err = e.Auto(ctx, p, exec.Args{})
		require.NoError(t, err)
	}
	n, err := e.FireDue(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "the first run is one interval after CREATE")

	e.Advance(5*time.Minute + 30*time.Second)
	for range 3 {
		n, err = e.FireDue(ctx)
		require.NoError(t, err)
		require.LessOrEqual(t, n, 1)
	}
	s, err := e.Schedules(ctx)
	require.NoError(t, err)
	require.Len(t, s, 1)
	require.Equal(t, start.Add(6*time.Minute), s[0].Next)

	p, err := parser.Parse("SELECT at FROM jobs")
	require.NoError(t, err)
	res, err := e.Auto(ctx, p, exec.Args{})
	require.NoError(t, err)
	require.Equal(t, [][]any{{start.Add(time.Minute)}}, res.Rows)
}
