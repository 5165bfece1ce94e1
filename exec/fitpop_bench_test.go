package exec_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fdbqueue/fdbqueue/exec"
	"github.com/fdbqueue/fdbqueue/internal/cputime"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/parser"
)

// BenchmarkFitPopSQL is fdbqueue bench's pop workload through the
// executor, without database/sql: 100,000 tasks (priority 0..9, cpu 1..8,
// mem 1..32, a 64-byte payload), then b.N autocommit single-row fit pops
// by 1, 8 and 32 consumers, with random limits (cpu 1..8, mem 1..32) or
// limits every task fits (any). It reports pops/s. Run it with a fixed
// count that leaves the queue near its size:
//
//	go test -run - -bench FitPopSQL -benchtime 20000x ./exec/
func BenchmarkFitPopSQL(b *testing.B) {
	for _, mode := range []string{"random", "any"} {
		for _, consumers := range []int{1, 8, 32} {
			b.Run(fmt.Sprintf("%s/consumers=%d", mode, consumers), func(b *testing.B) {
				benchFitPopSQL(b, mode, consumers)
			})
		}
	}
}

func benchFitPopSQL(b *testing.B, mode string, consumers int) {
	const tasks = 100_000
	if b.N > tasks/2 {
		b.Skipf("b.N = %d pops would empty a queue of %d: use -benchtime=20000x", b.N, tasks)
	}
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	e := exec.New(db, nil)
	ctx := context.Background()
	parse := func(sql string) *parser.Parsed {
		p, err := parser.Parse(sql)
		if err != nil {
			b.Fatal(err)
		}
		return p
	}
	if _, err := e.Auto(ctx, parse("CREATE TABLE t (priority INT NOT NULL, cpu INT NOT NULL, mem INT NOT NULL, payload BLOB, INDEX fit (cpu, mem))"), exec.Args{}); err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	payload := make([]byte, 64)
	insert := parse("INSERT INTO t (priority, cpu, mem, payload) VALUES " + strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?), ", 100), ", "))
	for i := 0; i < tasks; i += 100 {
		args := make([]any, 0, 400)
		for range 100 {
			args = append(args, r.Int64N(10), 1+r.Int64N(8), 1+r.Int64N(32), payload)
		}
		if _, err := e.Auto(ctx, insert, exec.Args{Positional: args}); err != nil {
			b.Fatal(err)
		}
	}
	var groups, grouped atomic.Int64
	e.OnGroup(func(n int) {
		groups.Add(1)
		grouped.Add(int64(n))
	})
	pop := parse("SELECT id, payload FROM t WHERE cpu <= ? AND mem <= ? ORDER BY priority LIMIT 1 FOR POP")
	var left, empty atomic.Int64
	left.Store(int64(b.N))
	// consume pops until b.N pops were made, with limits drawn from its
	// own source.
	consume := func(r *rand.Rand) {
		for left.Add(-1) >= 0 {
			cpu, mem := int64(8), int64(32)
			if mode == "random" {
				cpu, mem = 1+r.Int64N(8), 1+r.Int64N(32)
			}
			res, err := e.Auto(ctx, pop, exec.Args{Positional: []any{cpu, mem}})
			if err != nil {
				b.Error(err)
				return
			}
			if len(res.Rows) == 0 {
				empty.Add(1)
			}
		}
	}
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	cpuStart, cpuOK := cputime.Process()
	for c := range consumers {
		wg.Go(func() { consume(rand.New(rand.NewPCG(uint64(c), 3))) })
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpuEnd, _ := cputime.Process()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "pops/s")
	if cpuOK {
		// CPU time a pop, the process's, whatever else the machine runs:
		// steadier than pops/s on a shared machine.
		b.ReportMetric((cpuEnd-cpuStart).Seconds()*1e6/float64(b.N), "cpu-µs/pop")
	}
	b.ReportMetric(float64(empty.Load()), "empty")
	if g := groups.Load(); g > 0 {
		b.ReportMetric(float64(grouped.Load())/float64(g), "pops/group")
	}
}
