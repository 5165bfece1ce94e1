package queues_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/queues"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// BenchmarkInvisible times a pop and a lease (plain and fit, Max order) in
// a queue of 1,000 visible tasks of the random workload, next to 0 or
// 1,000,000 invisible ones (delayed: pushed with a visible_at an hour
// ahead; a leased task is stored the same way). Each runs in a transaction
// that is then cancelled, so every iteration sees the same queue. The
// issue's bound: with the invisible tasks, within 2x of without.
//
//	go test ./queues/ -run '^$' -bench BenchmarkInvisible -benchtime 3000x
func BenchmarkInvisible(b *testing.B) {
	invisible := []int{0, 1_000_000}
	if testing.Short() {
		invisible = []int{0, 10_000}
	}
	const visible = 1000
	for _, n := range invisible {
		var db kv.Database
		var q *queues.Queue
		for _, op := range []string{"pop", "fitpop", "lease", "fitlease"} {
			b.Run(fmt.Sprintf("invisible=%d/%s", n, op), func(b *testing.B) {
				if db == nil {
					db, q = fillInvisible(b, n, visible)
				}
				r := rand.New(rand.NewPCG(9, 9))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					tr, err := db.CreateTransaction(bg)
					if err != nil {
						b.Fatal(err)
					}
					var ok bool
					switch op {
					case "pop":
						_, ok, err = q.Pop(tr, queues.Max)
					case "fitpop":
						_, ok, err = q.PopFit(tr, queues.Max, randomTask(r))
					case "lease":
						var items []queues.Item
						items, err = q.Lease(tr, queues.LeaseRequest{Order: queues.Max, N: 1, For: time.Minute})
						ok = len(items) == 1
					case "fitlease":
						var items []queues.Item
						items, err = q.Lease(tr, queues.LeaseRequest{Order: queues.Max, Limits: randomTask(r), N: 1, For: time.Minute})
						ok = len(items) == 1
					}
					if err != nil || (!ok && (op == "pop" || op == "lease")) {
						b.Fatalf("ok=%v err=%v", ok, err)
					}
					tr.Cancel()
				}
			})
		}
		if db != nil {
			_ = db.Close()
		}
	}
}

// fillInvisible builds a queue of invisible delayed tasks, then visible
// ones.
func fillInvisible(b *testing.B, invisible, visible int) (kv.Database, *queues.Queue) {
	db := embedded.Open("", embedded.Config{})
	q := queues.New(tuple.Tuple{"bench-invisible"}.Pack(), queues.Priority, "cpu", "mem")
	later := time.Now().Add(time.Hour)
	const batch = 2000
	// Each kind from its own generator, so that the visible tasks are the
	// same whatever the number of invisible ones.
	add := func(n int, at time.Time) {
		r := rand.New(rand.NewPCG(42, uint64(n)))
		for i := 0; i < n; i += batch {
			items := make([]queues.Item, 0, batch)
			for j := i; j < i+batch && j < n; j++ {
				items = append(items, queues.Item{ID: queues.NewID(), Priority: r.Int64N(10), Resources: randomTask(r), Value: []byte("payload"), VisibleAt: at})
			}
			if err := db.Transact(bg, func(tr kv.Transaction) error {
				_, err := q.PushAll(tr, queues.Token{}, items)
				return err
			}); err != nil {
				b.Fatal(err)
			}
		}
	}
	add(invisible, later)
	add(visible, time.Time{})
	return db, q
}
