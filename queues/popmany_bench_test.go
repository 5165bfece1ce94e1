package queues_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/queues"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// manyWorkloads are the queues a multi-row pop of n rows reads: "all", 2n
// tasks that all fit; "quarter", 4n tasks of which about a quarter fit
// (cpu 1..8 and mem 1..32 against limits 4 and 16), spread over 10
// priorities.
var manyWorkloads = []struct {
	name   string
	fill   int // tasks per popped row
	limits []int64
}{
	{"all", 2, []int64{8, 32}},
	{"quarter", 4, []int64{4, 16}},
}

// BenchmarkFitPopMany times popping n fitting rows in one transaction (then
// cancelled, so every iteration sees the same queue): "loop" is n calls to
// PopFit, as a SELECT ... LIMIT n FOR POP did; "batch" is PopFitN. It
// reports microseconds per popped row.
func BenchmarkFitPopMany(b *testing.B) {
	for _, w := range manyWorkloads {
		for _, n := range []int{1_000, 10_000} {
			db := embedded.Open("", embedded.Config{})
			q := queues.New(tuple.Tuple{"many"}.Pack(), queues.Priority, "cpu", "mem")
			r := rand.New(rand.NewPCG(1, 2))
			for i := 0; i < w.fill*n; i += 1000 {
				if err := db.Transact(bg, func(tr kv.Transaction) error {
					for j := i; j < i+1000 && j < w.fill*n; j++ {
						it := queues.Item{ID: int64(j + 1), Priority: r.Int64N(10), Resources: []int64{1 + r.Int64N(8), 1 + r.Int64N(32)}}
						if err := q.Push(tr, it); err != nil {
							return err
						}
					}
					return nil
				}); err != nil {
					b.Fatal(err)
				}
			}
			for _, impl := range []string{"loop", "batch"} {
				b.Run(fmt.Sprintf("%s/n=%d/%s", w.name, n, impl), func(b *testing.B) {
					rows := 0
					for b.Loop() {
						tr, err := db.CreateTransaction(bg)
						if err != nil {
							b.Fatal(err)
						}
						got, err := popMany(tr, q, impl, w.limits, n)
						if errors.Is(err, kv.ErrTransactionTooOld) {
							b.Skipf("%d pops did not finish within a transaction's 5 s: %v", n, err)
						}
						if err != nil {
							b.Fatal(err)
						}
						rows += got
						tr.Cancel()
					}
					b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(rows), "µs/row")
				})
			}
			_ = db.Close()
		}
	}
}

// popMany pops up to n fitting items and returns how many it popped.
func popMany(tr kv.Transaction, q *queues.Queue, impl string, limits []int64, n int) (int, error) {
	if impl == "batch" {
		items, err := q.PopFitN(tr, queues.Max, limits, n)
		return len(items), err
	}
	for i := 0; i < n; i++ {
		_, ok, err := q.PopFit(tr, queues.Max, limits)
		if err != nil || !ok {
			return i, err
		}
	}
	return n, nil
}
