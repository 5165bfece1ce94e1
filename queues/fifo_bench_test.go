package queues_test

import (
	"testing"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/queues"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// BenchmarkQueuePushPop is one committed push and one committed pop per op
// on a plain queue holding a small backlog: the queue layer's own cost over
// the engine's (compare kv/embedded's BenchmarkPushPop).
func BenchmarkQueuePushPop(b *testing.B) {
	for _, kind := range []queues.Kind{queues.FIFO, queues.Priority} {
		b.Run(kind.String(), func(b *testing.B) {
			db := embedded.Open("", embedded.Config{})
			defer db.Close()
			q := queues.New(tuple.Tuple{"q"}.Pack(), kind)
			val := []byte("payload")
			for i := 0; i < 1000; i++ {
				it := queues.Item{ID: queues.NewID(), Priority: int64(i % 10), Value: val}
				if err := db.Transact(bg, func(tr kv.Transaction) error { return q.Push(tr, it) }); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				it := queues.Item{ID: queues.NewID(), Priority: int64(i % 10), Value: val}
				if err := db.Transact(bg, func(tr kv.Transaction) error { return q.Push(tr, it) }); err != nil {
					b.Fatal(err)
				}
				if err := db.Transact(bg, func(tr kv.Transaction) error {
					_, _, err := q.Pop(tr, queues.Max)
					return err
				}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
