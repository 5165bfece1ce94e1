package queues_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"testing"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/queues"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// The task-queue workloads:
//
//   - random: 10 priority grades, random cpu (1..32) and mem (128..65536 MB)
//     for tasks and consumers;
//   - worst: every task but one exceeds the consumer's limits (cpu 2, mem
//     1024), and the one that fits was pushed last.
//
// Each fit benchmark has a naive twin in the same run: the same transaction
// reading items in queue order until one fits.

type workload struct {
	name  string
	fill  func(r *rand.Rand, i, n int) queues.Item
	limit func(r *rand.Rand) []int64
}

func randomTask(r *rand.Rand) []int64 {
	return []int64{1 + r.Int64N(32), 128 + r.Int64N(65536-128)}
}

var worstLimits = []int64{2, 1024}

var workloads = []workload{
	{
		name: "random",
		fill: func(r *rand.Rand, i, n int) queues.Item {
			return queues.Item{ID: int64(i + 1), Priority: r.Int64N(10), Resources: randomTask(r), Value: []byte("payload")}
		},
		limit: randomTask,
	},
	{
		name: "worst",
		fill: func(r *rand.Rand, i, n int) queues.Item {
			if i == n-1 {
				return queues.Item{ID: int64(i + 1), Priority: r.Int64N(10), Resources: []int64{1, 512}, Value: []byte("the one")}
			}
			for {
				res := randomTask(r)
				if res[0] > worstLimits[0] || res[1] > worstLimits[1] {
					return queues.Item{ID: int64(i + 1), Priority: r.Int64N(10), Resources: res, Value: []byte("payload")}
				}
			}
		},
		limit: func(*rand.Rand) []int64 { return worstLimits },
	},
}

type filled struct {
	db kv.Database
	q  *queues.Queue
}

var (
	fillMu sync.Mutex
	fills  = map[string]*filled{}
)

// fill returns a database holding n tasks of workload w, built once per
// process and shared by the benchmarks that read it.
func fill(b *testing.B, w workload, n int) *filled {
	fillMu.Lock()
	defer fillMu.Unlock()
	key := fmt.Sprint(w.name, n)
	if f, ok := fills[key]; ok {
		return f
	}
	f := fillFresh(b, w, n)
	fills[key] = f
	return f
}

// fillFresh builds a database holding n tasks of workload w.
func fillFresh(b *testing.B, w workload, n int) *filled {
	db := embedded.Open("", embedded.Config{})
	q := queues.New(tuple.Tuple{"bench"}.Pack(), queues.Priority, "cpu", "mem")
	r := rand.New(rand.NewPCG(42, uint64(n)))
	const batch = 1000
	for i := 0; i < n; i += batch {
		if err := db.Transact(bg, func(tr kv.Transaction) error {
			for j := i; j < i+batch && j < n; j++ {
				if err := q.Push(tr, w.fill(r, j, n)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	return &filled{db: db, q: q}
}

// sizes are the queue sizes the benchmarks fill: 10,000 with -short;
// 10,000 and 1,000,000; and also 5,000,000 with
// FDBQUEUE_BENCH_LARGE=1 (about 8 GB of memory and a few minutes).
func sizes() []int {
	switch {
	case testing.Short():
		return []int{10_000}
	case os.Getenv("FDBQUEUE_BENCH_LARGE") != "":
		return []int{10_000, 1_000_000, 5_000_000}
	}
	return []int{10_000, 1_000_000}
}

// BenchmarkMemoryPerTask reports the heap a queued task takes in the
// memory engine (item, id index, fit index entries, push marker and their
// B-tree entries), for a task of the random workload with a 7-byte value,
// pushed one by one with Push: live heap after a GC, before and after
// filling, divided by the tasks (B/task). Of those: the bytes of the
// records (records-B/task: keys, values, an 8-byte header a key), the
// unused space of their slabs (slack-B/task), and the rest
// (tree-B/task: the B-tree's nodes, 8 bytes a key at full nodes); and the
// keys a task has (keys/task). The random workload's mem (128..65536)
// makes about every task's shape one of its own, with a directory key of
// its own; driver's BenchmarkMemoryPerRow measures the rows of
// `fdbqueue bench`.
func BenchmarkMemoryPerTask(b *testing.B) {
	for _, n := range sizes() {
		b.Run(fmt.Sprint("n=", n), func(b *testing.B) {
			for b.Loop() {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				f := fillFresh(b, workloads[0], n)
				runtime.GC()
				runtime.ReadMemStats(&after)
				st := f.db.(*embedded.DB).Stats()
				heap, slabs, recs := float64(after.HeapAlloc-before.HeapAlloc), float64(st.SlabBytes), float64(st.RecordBytes)
				b.ReportMetric(heap/float64(n), "B/task")
				b.ReportMetric(recs/float64(n), "records-B/task")
				b.ReportMetric((slabs-recs)/float64(n), "slack-B/task")
				b.ReportMetric((heap-slabs)/float64(n), "tree-B/task")
				b.ReportMetric(float64(st.LiveKeys)/float64(n), "keys/task")
				_ = f.db.Close()
			}
		})
	}
}

// BenchmarkFitPop times one get-task: find the best fitting task and remove
// it, in a transaction that is then cancelled, so every iteration sees the
// same queue. "index" is the package's PopFit; "naive" scans in queue order.
func BenchmarkFitPop(b *testing.B) {
	for _, w := range workloads {
		for _, n := range sizes() {
			for _, impl := range []string{"index", "naive"} {
				b.Run(fmt.Sprintf("%s/n=%d/%s", w.name, n, impl), func(b *testing.B) {
					f := fill(b, w, n)
					r := rand.New(rand.NewPCG(7, 7))
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						limits := w.limit(r)
						tr, err := f.db.CreateTransaction(bg)
						if err != nil {
							b.Fatal(err)
						}
						var ok bool
						if impl == "index" {
							_, ok, err = f.q.PopFit(tr, queues.Max, limits)
						} else {
							ok, err = naivePopFit(tr, f.q, limits)
						}
						if impl == "naive" && errors.Is(err, kv.ErrTransactionTooOld) {
							// At 5,000,000 tasks the scan for the worst case
							// outlives a transaction: that is the result.
							b.Skipf("the naive scan did not finish within a transaction's 5 s: %v", err)
						}
						if err != nil || (!ok && w.name == "worst") {
							b.Fatalf("ok=%v err=%v", ok, err)
						}
						tr.Cancel()
					}
				})
			}
		}
	}
}

// naivePopFit is the baseline: read the queue in order until a task fits,
// then remove it.
func naivePopFit(tr kv.Transaction, q *queues.Queue, limits []int64) (bool, error) {
	var found queues.Item
	ok := false
	err := q.Scan(tr, queues.Max, func(it queues.Item) (bool, error) {
		for i, r := range it.Resources {
			if r > limits[i] {
				return true, nil
			}
		}
		found, ok = it, true
		return false, nil
	})
	if err != nil || !ok {
		return false, err
	}
	_, _, err = q.Remove(tr, found.ID)
	return true, err
}

// BenchmarkPush times a committed push into a queue of n tasks.
func BenchmarkPush(b *testing.B) {
	for _, n := range sizes() {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			f := fill(b, workloads[0], n)
			q := queues.New(tuple.Tuple{"bench-push", n}.Pack(), queues.Priority, "cpu", "mem")
			r := rand.New(rand.NewPCG(3, 3))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				it := queues.Item{ID: queues.NewID(), Priority: r.Int64N(10), Resources: randomTask(r), Value: []byte("payload")}
				if err := f.db.Transact(bg, func(tr kv.Transaction) error { return q.Push(tr, it) }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPopPush times a committed pop (Max order, or a fit pop with
// random limits) followed by a committed push of the same task, so the
// queue keeps its size.
func BenchmarkPopPush(b *testing.B) {
	for _, n := range sizes() {
		for _, fit := range []bool{false, true} {
			b.Run(fmt.Sprintf("n=%d/fit=%v", n, fit), func(b *testing.B) {
				f := fill(b, workloads[0], n)
				r := rand.New(rand.NewPCG(5, 5))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					var it queues.Item
					var ok bool
					if err := f.db.Transact(bg, func(tr kv.Transaction) error {
						var err error
						if fit {
							it, ok, err = f.q.PopFit(tr, queues.Max, randomTask(r))
						} else {
							it, ok, err = f.q.Pop(tr, queues.Max)
						}
						return err
					}); err != nil {
						b.Fatal(err)
					}
					if !ok {
						continue
					}
					// Pushed back under a new id: the old id's push marker
					// would make the push a no-op and drain the queue.
					it.ID = queues.NewID()
					if err := f.db.Transact(bg, func(tr kv.Transaction) error { return f.q.Push(tr, it) }); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
