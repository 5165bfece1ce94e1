package queues_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/queues"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// BenchmarkFitPopConsumers: consumers each doing committed fit pops with
// random limits (cpu 1..8, mem 1..32, drawn per pop) on 100,000 tasks
// (priority 0..9, cpu 1..8, mem 1..32, a 64-byte payload) in the memory
// engine, at 1, 8 and 32 consumers. It reports pops/s, conflicts per pop
// (attempts that did not commit), and sameitem/pop: failed attempts whose
// item another consumer took, the conflicts that exact-order pops cannot
// avoid. b.N pops in all; run it with a fixed count, -benchtime=5000x, so
// that the queue stays near its size. claims=true runs the pops in
// attempts of one Claims (claims.go), as exec does. sediment=true puts
// 2,000 tasks that only the largest consumers take (cpu 8, mem 32) ahead
// of the others, at priority 10, as a queue that has run for a while
// under consumers of mixed sizes has them: most pops then search the fit
// index.
func BenchmarkFitPopConsumers(b *testing.B) {
	const tasks, sediment = 100_000, 2_000
	for _, sedimented := range []bool{false, true} {
		for _, claimed := range []bool{false, true} {
			for _, consumers := range []int{1, 8, 32} {
				benchFitPopConsumers(b, tasks, sediment, sedimented, claimed, consumers)
			}
		}
	}
}

func benchFitPopConsumers(b *testing.B, tasks, sediment int, sedimented, claimed bool, consumers int) {
	b.Run(fmt.Sprintf("sediment=%v/claims=%v/consumers=%d", sedimented, claimed, consumers), func(b *testing.B) {
		if b.N > tasks/2 {
			b.Skipf("b.N = %d pops would empty a queue of %d: use -benchtime=5000x", b.N, tasks)
		}
		db := embedded.Open("", embedded.Config{RetryLimit: -1})
		defer db.Close()
		q := queues.New(tuple.Tuple{"consumers"}.Pack(), queues.Priority, "cpu", "mem")
		r := rand.New(rand.NewPCG(7, 11))
		payload := make([]byte, 64)
		if sedimented {
			if err := db.Transact(bg, func(tr kv.Transaction) error {
				for j := range sediment {
					it := queues.Item{ID: int64(tasks + j + 1), Priority: 10, Resources: []int64{8, 32}, Value: payload}
					if err := q.Push(tr, it); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				b.Fatal(err)
			}
		}
		pushFitTasks(b, db, q, r, tasks, payload)
		var left, attempts atomic.Int64
		var mu sync.Mutex
		committedBy := map[int64]int{} // item id -> consumer
		var lostIDs []struct {
			id int64
			c  int
		}
		left.Store(int64(b.N))
		transact := db.Transact
		if claimed {
			claims := queues.NewClaims()
			transact = func(ctx context.Context, fn func(kv.Transaction) error) error {
				return claims.Transact(ctx, db, fn)
			}
		}
		var wg sync.WaitGroup
		b.ResetTimer()
		start := time.Now()
		for c := range consumers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(c), 3))
				for left.Add(-1) >= 0 {
					limits := []int64{1 + r.Int64N(8), 1 + r.Int64N(32)}
					var ok bool
					var picks []int64
					err := transact(bg, func(tr kv.Transaction) error {
						attempts.Add(1)
						var err error
						var it queues.Item
						it, ok, err = q.PopFit(tr, queues.Max, limits)
						picks = append(picks, it.ID)
						return err
					})
					mu.Lock()
					committedBy[picks[len(picks)-1]] = c
					for _, id := range picks[:len(picks)-1] {
						lostIDs = append(lostIDs, struct {
							id int64
							c  int
						}{id, c})
					}
					mu.Unlock()
					if err != nil || !ok {
						b.Error("pop:", ok, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		elapsed := time.Since(start)
		b.StopTimer()
		b.ReportMetric(float64(b.N)/elapsed.Seconds(), "pops/s")
		b.ReportMetric(float64(attempts.Load()-int64(b.N))/float64(b.N), "conflicts/pop")
		same := 0
		for _, l := range lostIDs {
			if c, ok := committedBy[l.id]; ok && c != l.c {
				same++
			}
		}
		b.ReportMetric(float64(same)/float64(b.N), "sameitem/pop")
	})
}

// pushFitTasks pushes tasks tasks to q (priority 0..9, cpu 1..8, mem
// 1..32, drawn from r, with payload), ids 1 to tasks, 1,000 a transaction.
func pushFitTasks(b *testing.B, db kv.Database, q *queues.Queue, r *rand.Rand, tasks int, payload []byte) {
	for i := 0; i < tasks; i += 1000 {
		if err := db.Transact(bg, func(tr kv.Transaction) error {
			for j := i; j < min(i+1000, tasks); j++ {
				it := queues.Item{ID: int64(j + 1), Priority: r.Int64N(10), Resources: []int64{1 + r.Int64N(8), 1 + r.Int64N(32)}, Value: payload}
				if err := q.Push(tr, it); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
}
