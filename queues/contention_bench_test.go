package queues_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/queues"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// BenchmarkContention: consumers pop one queue on the embedded engine with
// a 2 ms commit latency injected (a cluster's commit round trip), exact pops
// ("naive", everyone wants the head) versus spread pops (one of the first
// 2×consumers items of the best priority), in the same run. It reports
// pops/s and retries per pop (conflicts).
func BenchmarkContention(b *testing.B) {
	for _, consumers := range []int{1, 8, 32} {
		for _, mode := range []string{"naive", "spread"} {
			b.Run(fmt.Sprintf("consumers=%d/%s", consumers, mode), func(b *testing.B) {
				db := embedded.Open("", embedded.Config{RetryLimit: -1, Faults: &embedded.Faults{CommitLatency: 2 * time.Millisecond}})
				defer db.Close()
				q := queues.New(tuple.Tuple{"contention"}.Pack(), queues.Priority)
				n := b.N
				for i := 0; i < n; i += 1000 {
					if err := db.Transact(bg, func(tr kv.Transaction) error {
						for j := i; j < i+1000 && j < n; j++ {
							if err := q.Push(tr, queues.Item{ID: int64(j + 1), Priority: int64(j % 3)}); err != nil {
								return err
							}
						}
						return nil
					}); err != nil {
						b.Fatal(err)
					}
				}
				var left, attempts atomic.Int64
				left.Store(int64(n))
				done := make(chan struct{})
				b.ResetTimer()
				start := time.Now()
				for c := 0; c < consumers; c++ {
					go func() {
						defer func() { done <- struct{}{} }()
						for left.Add(-1) >= 0 {
							err := db.Transact(bg, func(tr kv.Transaction) error {
								attempts.Add(1)
								var err error
								if mode == "naive" {
									_, _, err = q.Pop(tr, queues.Max)
								} else {
									_, _, err = q.PopSpread(tr, queues.Max, 2*consumers)
								}
								return err
							})
							if err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				for c := 0; c < consumers; c++ {
					<-done
				}
				elapsed := time.Since(start)
				b.StopTimer()
				b.ReportMetric(float64(n)/elapsed.Seconds(), "pops/s")
				b.ReportMetric(float64(attempts.Load()-int64(n))/float64(n), "retries/pop")
			})
		}
	}
}
