// Command taskqueue runs a task queue through database/sql on the embedded
// engine: publishers insert tasks with priorities and resource needs, and
// consumers with different capacities pop the highest-priority task that
// fits them.
//
//	go run ./examples/taskqueue
//
// It prints a log of what each consumer took and a summary, and checks that
// every task was taken exactly once.
package main

import (
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"sync"
	"time"

	_ "github.com/fdbqueue/fdbqueue/driver"
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
	db, err := sql.Open("fdbqueue", "memory:")
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE tasks (
		priority INT NOT NULL,
		cpu      INT NOT NULL,
		mem      INT NOT NULL,
		name     TEXT NOT NULL,
		INDEX fit (cpu, mem))`); err != nil {
		return err
	}

	const publishers, perPublisher = 3, 20
	consumers := []consumer{
		{"small (1 cpu, 2 GB)", 1, 2048},
		{"medium (4 cpu, 8 GB)", 4, 8192},
		{"large (16 cpu, 64 GB)", 16, 65536},
	}
	var logMu sync.Mutex
	say := func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Printf(format+"\n", args...)
	}

	// Publishers insert tasks of mixed sizes and priorities.
	var pub sync.WaitGroup
	errs := make(chan error, publishers+len(consumers))
	for p := 0; p < publishers; p++ {
		pub.Add(1)
		go func() {
			defer pub.Done()
			r := rand.New(rand.NewPCG(uint64(p), 1))
			for i := 0; i < perPublisher; i++ {
				_, err := db.Exec(`INSERT INTO tasks (priority, cpu, mem, name) VALUES (?, ?, ?, ?)`,
					r.IntN(3), []int{1, 2, 4, 8, 16}[r.IntN(5)], []int{512, 2048, 8192, 32768}[r.IntN(4)], fmt.Sprintf("job-%d-%02d", p, i))
				if err != nil {
					errs <- fmt.Errorf("publisher %d: %w", p, err)
					return
				}
			}
		}()
	}
	pub.Wait()
	var queued int
	if err := db.QueryRow(`SELECT COUNT(*) FROM tasks`).Scan(&queued); err != nil {
		return err
	}
	say("%d publishers queued %d tasks\n", publishers, queued)

	// Consumers pop what fits them until nothing does.
	const pop = `SELECT name, priority, cpu, mem FROM tasks
		WHERE cpu <= ? AND mem <= ? ORDER BY priority DESC LIMIT 1 FOR POP`
	taken := map[string][]string{}
	seen := map[string]bool{}
	var cons sync.WaitGroup
	for _, c := range consumers {
		cons.Add(1)
		go func() {
			defer cons.Done()
			for {
				var name string
				var prio, cpu, mem int
				err := db.QueryRow(pop, c.cpu, c.mem).Scan(&name, &prio, &cpu, &mem)
				if errors.Is(err, sql.ErrNoRows) {
					return
				}
				if err != nil {
					errs <- fmt.Errorf("%s: %w", c.name, err)
					return
				}
				logMu.Lock()
				dup := seen[name]
				seen[name] = true
				taken[c.name] = append(taken[c.name], name)
				logMu.Unlock()
				if dup {
					errs <- fmt.Errorf("%s was taken twice", name)
					return
				}
				say("%-22s took %s  priority %d  needs %2d cpu %5d MB", c.name, name, prio, cpu, mem)
				time.Sleep(time.Millisecond) // "work"
			}
		}()
	}
	cons.Wait()
	close(errs)
	for err := range errs {
		return err
	}

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
	var left int
	if err := db.QueryRow(`SELECT COUNT(*) FROM tasks`).Scan(&left); err != nil {
		return err
	}
	fmt.Printf("  taken %d of %d, %d left (too big for every consumer), none twice\n", total, queued, left)
	if total+left != queued {
		return fmt.Errorf("lost tasks: %d taken + %d left != %d queued", total, left, queued)
	}
	return nil
}
