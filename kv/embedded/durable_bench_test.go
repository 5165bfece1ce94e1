package embedded_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/queues"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// Sizes for the durability benchmarks: 1M items by default, 5M with
// FDBQUEUE_BENCH_LARGE=1 (about 2 GB of memory and a few minutes).
func durableSizes() []int {
	if os.Getenv("FDBQUEUE_BENCH_LARGE") != "" {
		return []int{1_000_000, 5_000_000}
	}
	if testing.Short() {
		return []int{100_000}
	}
	return []int{1_000_000}
}

func fillQueue(b *testing.B, db kv.Database, q *queues.Queue, n int) {
	ctx := context.Background()
	val := []byte("payload-of-a-typical-queue-item")
	for i := 0; i < n; i += 10_000 {
		if err := db.Transact(ctx, func(tr kv.Transaction) error {
			for j := i; j < i+10_000 && j < n; j++ {
				if err := q.Push(tr, queues.Item{ID: int64(j + 1), Priority: int64(j % 10), Value: val}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
}

func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			n += info.Size()
		}
		return nil
	})
	return n
}

// BenchmarkRecovery times reopening a file database holding n queued items
// (a checkpoint plus the log written after it), and reports the disk bytes
// per item. Run it with -benchtime 1x.
func BenchmarkRecovery(b *testing.B) {
	for _, n := range durableSizes() {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			db, err := embedded.OpenFile(dir, embedded.FileConfig{Sync: embedded.SyncNone})
			if err != nil {
				b.Fatal(err)
			}
			q := queues.New(tuple.Tuple{"q"}.Pack(), queues.Priority)
			fillQueue(b, db, q, n)
			if err := db.Close(); err != nil {
				b.Fatal(err)
			}
			diskPerItem := float64(dirBytes(dir)) / float64(n)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				db, err := embedded.OpenFile(dir, embedded.FileConfig{})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				rec := db.Recovery()
				b.ReportMetric(float64(rec.Records), "records-replayed")
				b.ReportMetric(diskPerItem, "disk-B/item")
				if err := db.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkHeadHealth pops single items (each its own committed
// transaction) at the start, then pops all but the last few thousand items
// in batches, then pops single items again: the head of a queue popped
// millions of times must cost what it did at the start. It reports both
// medians; sync=none keeps the figures about finding the head, not fsync.
func BenchmarkHeadHealth(b *testing.B) {
	for _, n := range durableSizes() {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			ctx := context.Background()
			db, err := embedded.OpenFile(b.TempDir(), embedded.FileConfig{Sync: embedded.SyncNone})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			q := queues.New(tuple.Tuple{"q"}.Pack(), queues.Priority)
			fillQueue(b, db, q, n)
			popOne := func() time.Duration {
				start := time.Now()
				if err := db.Transact(ctx, func(tr kv.Transaction) error {
					_, _, err := q.Pop(tr, queues.Min)
					return err
				}); err != nil {
					b.Fatal(err)
				}
				return time.Since(start)
			}
			median := func(k int) time.Duration {
				d := make([]time.Duration, k)
				for i := range d {
					d[i] = popOne()
				}
				sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
				return d[k/2]
			}
			const sample = 2000
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := median(sample)
				// Pop the bulk in batches of 1,000 per transaction.
				for left := n - 3*sample; left > 0; left -= 1000 {
					if err := db.Transact(ctx, func(tr kv.Transaction) error {
						_, err := q.PopN(tr, queues.Min, min(1000, left))
						return err
					}); err != nil {
						b.Fatal(err)
					}
				}
				end := median(sample)
				b.ReportMetric(float64(start.Nanoseconds())/1e3, "start-µs/pop")
				b.ReportMetric(float64(end.Nanoseconds())/1e3, "end-µs/pop")
				st := db.Stats()
				b.ReportMetric(float64(st.Keys-st.LiveKeys), "tombstones")
			}
		})
	}
}
