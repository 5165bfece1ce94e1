// Command taskqueue runs a task queue on the embedded engine: publishers
// push tasks with priorities and resource needs, and consumers with
// different capacities pop the highest-priority task that fits them.
//
//	go run ./examples/taskqueue
//
// It prints a log of what each consumer took and a summary, and checks that
// every task was taken exactly once.
package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/queues"
	"github.com/fdbqueue/fdbqueue/tuple"
)

type consumer struct {
	name     string
	cpu, mem int64
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "taskqueue:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	q := queues.New(tuple.Tuple{"tasks"}.Pack(), queues.Priority, "cpu", "mem")

	const publishers, perPublisher = 3, 20
	consumers := []consumer{
		{"small (1 cpu, 2 GB)", 1, 2048},
		{"medium (4 cpu, 8 GB)", 4, 8192},
		{"large (16 cpu, 64 GB)", 16, 65536},
	}

	var log sync.Mutex
	say := func(format string, args ...any) {
		log.Lock()
		defer log.Unlock()
		fmt.Printf(format+"\n", args...)
	}

	// Publishers: each pushes tasks of mixed sizes and priorities.
	var pub sync.WaitGroup
	for p := 0; p < publishers; p++ {
		pub.Add(1)
		go func() {
			defer pub.Done()
			r := rand.New(rand.NewPCG(uint64(p), 1))
			for i := 0; i < perPublisher; i++ {
				it := queues.Item{
					ID:        queues.NewID(), // made outside the transaction: a retry pushes the same id
					Priority:  r.Int64N(3),
					Resources: []int64{[]int64{1, 2, 4, 8, 16}[r.IntN(5)], []int64{512, 2048, 8192, 32768}[r.IntN(4)]},
					Value:     []byte(fmt.Sprintf("job-%d-%02d", p, i)),
				}
				if err := db.Transact(ctx, func(tr kv.Transaction) error { return q.Push(tr, it) }); err != nil {
					say("publisher %d: %v", p, err)
					return
				}
			}
		}()
	}
	pub.Wait()
	var queued int64
	if err := db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		var err error
		queued, err = q.Count(tr)
		return err
	}); err != nil {
		return err
	}
	say("%d publishers queued %d tasks\n", publishers, queued)

	// Consumers: each pops what fits it until nothing does.
	taken := map[string][]string{}
	seen := map[string]bool{}
	var cons sync.WaitGroup
	for _, c := range consumers {
		cons.Add(1)
		go func() {
			defer cons.Done()
			for {
				var it queues.Item
				var ok bool
				err := db.Transact(ctx, func(tr kv.Transaction) error {
					var err error
					it, ok, err = q.PopFit(tr, queues.Max, []int64{c.cpu, c.mem})
					return err
				})
				if err != nil {
					say("%s: %v", c.name, err)
					return
				}
				if !ok {
					return
				}
				log.Lock()
				if seen[string(it.Value)] {
					log.Unlock()
					say("BUG: %s taken twice", it.Value)
					return
				}
				seen[string(it.Value)] = true
				taken[c.name] = append(taken[c.name], string(it.Value))
				log.Unlock()
				say("%-22s took %s  priority %d  needs %2d cpu %5d MB", c.name, it.Value, it.Priority, it.Resources[0], it.Resources[1])
				time.Sleep(time.Millisecond) // "work"
			}
		}()
	}
	cons.Wait()

	fmt.Println("\nsummary")
	names := make([]string, 0, len(taken))
	for n := range taken {
		names = append(names, n)
	}
	sort.Strings(names)
	total := 0
	for _, n := range names {
		fmt.Printf("  %-22s %3d tasks\n", n, len(taken[n]))
		total += len(taken[n])
	}
	var left int64
	if err := db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		if err := q.Check(tr); err != nil {
			return err
		}
		var err error
		left, err = q.Count(tr)
		return err
	}); err != nil {
		return err
	}
	fmt.Printf("  taken %d of %d, %d left (too big for every consumer), none twice\n", total, queued, left)
	if int64(total)+left != queued {
		return fmt.Errorf("lost tasks: %d taken + %d left != %d queued", total, left, queued)
	}
	return nil
}
