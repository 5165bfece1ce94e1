package queues_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/fdbqueue/fdbqueue/internal/cputime"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/queues"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// BenchmarkFitPopGroups: the pops of exec's combined groups without exec
// and without goroutines: groups of 5 and 15 fit pops with random limits
// (cpu 1..8, mem 1..32, drawn per pop), each group one attempt of several
// pops (Attempt.Several) of one Claims, committed, and lone pops, one
// attempt each (group=1, as a lone consumer's), on 100,000 tasks
// (priority 0..9, cpu 1..8, mem 1..32, a 64-byte payload) in the memory
// engine, in Min order as SQL's ORDER BY priority. One goroutine makes it
// steadier than BenchmarkFitPopConsumers on a shared machine. It reports
// the process's CPU time a pop. b.N pops; run it with a fixed count that
// leaves the queue near its size:
//
//	go test -run - -bench FitPopGroups -benchtime 20000x ./queues/
func BenchmarkFitPopGroups(b *testing.B) {
	for _, n := range []int{1, 5, 15} {
		b.Run(fmt.Sprintf("group=%d", n), func(b *testing.B) {
			const tasks = 100_000
			if b.N > tasks/2 {
				b.Skipf("b.N = %d pops would empty a queue of %d: use -benchtime=20000x", b.N, tasks)
			}
			db := embedded.Open("", embedded.Config{RetryLimit: -1})
			defer db.Close()
			q := queues.New(tuple.Tuple{"groups"}.Pack(), queues.Priority, "cpu", "mem")
			r := rand.New(rand.NewPCG(7, 11))
			payload := make([]byte, 64)
			pushFitTasks(b, db, q, r, tasks, payload)
			claims := queues.NewClaims()
			b.ReportAllocs()
			b.ResetTimer()
			cpuStart, cpuOK := cputime.Process()
			for left := b.N; left > 0; left -= n {
				err := claims.Transact(bg, db, func(tr kv.Transaction) error {
					if n > 1 {
						tr.(*queues.Attempt).Several()
					}
					for range min(n, left) {
						limits := []int64{1 + r.Int64N(8), 1 + r.Int64N(32)}
						if _, ok, err := q.PopFit(tr, queues.Min, limits); err != nil || !ok {
							return fmt.Errorf("pop: %v %w", ok, err)
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			cpuEnd, _ := cputime.Process()
			b.StopTimer()
			if cpuOK {
				b.ReportMetric((cpuEnd-cpuStart).Seconds()*1e6/float64(b.N), "cpu-µs/pop")
			}
		})
	}
}
