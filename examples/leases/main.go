// Command leases shows a task queue with leases, worked by the worker
// package: four handlers at a time lease a task (FOR LEASE ... WAIT), work
// on it while the package renews the lease (a heartbeat), and return nil
// to ack it (DELETE ... AND _lease = ?) or an error to release it for a
// retry after the table's BACKOFF, recording the error in _error. A worker
// that dies simply stops: its lease expires and the task comes back at its
// place for another worker. Every task is done once.
//
//	go run ./examples/leases
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	_ "github.com/fdbqueue/fdbqueue/driver"
	"github.com/fdbqueue/fdbqueue/worker"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "leases:", err)
		os.Exit(1)
	}
}

const leaseFor = 500 * time.Millisecond

func run() error {
	db, err := sql.Open("fdbqueue", "memory:")
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A failed attempt comes back after 50 ms; a task failing 5 times
	// would move to jobs_dead.
	if _, err := db.ExecContext(ctx, `CREATE TABLE jobs (priority INT NOT NULL, payload TEXT)
	                                  MAX_ATTEMPTS=5 BACKOFF=CONSTANT(0.05 SECOND)`); err != nil {
		return err
	}
	const tasks = 40
	for i := range tasks {
		if _, err := db.ExecContext(ctx, `INSERT INTO jobs (priority, payload) VALUES (?, ?)`, i%3, fmt.Sprintf("task %d", i)); err != nil {
			return err
		}
	}
	// A worker of another process leases a task and dies holding it: no
	// ack, no release. The task comes back when the lease ends.
	if _, err := db.ExecContext(ctx, `SELECT id FROM jobs ORDER BY priority DESC LIMIT 1 FOR LEASE ?`, leaseFor); err != nil {
		return err
	}

	var mu sync.Mutex
	done := map[string]int{}
	failed := 0
	w := worker.New(db, worker.Config{
		Table: "jobs", Columns: []string{"payload"}, OrderBy: "priority DESC",
		Lease: leaseFor, Heartbeat: leaseFor / 3, Wait: 2 * leaseFor,
		Concurrency: 4, ShutdownTimeout: time.Second,
		Hooks: worker.Hooks{
			OnSuccess: func(_ context.Context, j *worker.Job, _ time.Duration) {
				var payload string
				_ = j.Scan(&payload)
				mu.Lock()
				defer mu.Unlock()
				if done[payload]++; len(done) == tasks {
					cancel() // all done: shut down
				}
			},
			OnFailure: func(_ context.Context, j *worker.Job, err error, _ time.Duration) {
				mu.Lock()
				defer mu.Unlock()
				failed++
			},
		},
	})
	err = w.Run(ctx, func(ctx context.Context, j *worker.Job) error {
		var payload string
		if err := j.Scan(&payload); err != nil {
			return err
		}
		switch {
		case j.ID%7 == 0 && j.Attempts == 1:
			return errors.New("flaky: try again") // released, back after the backoff
		case j.ID%11 == 0 && j.Attempts == 1:
			panic("a bug") // recovered, and released as an error
		case j.ID%13 == 0:
			// Longer than a lease: the heartbeat keeps the task ours.
			select {
			case <-time.After(leaseFor + leaseFor/2):
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		return nil // ack
	})
	if err != nil {
		return err
	}
	for payload, n := range done {
		if n != 1 {
			return fmt.Errorf("%s was done %d times", payload, n)
		}
	}
	if len(done) != tasks {
		return fmt.Errorf("%d tasks done, %d pushed", len(done), tasks)
	}
	fmt.Printf("%d tasks done once each; 1 abandoned by a dying worker came back, and %d failed attempts were retried\n", len(done), failed)
	return nil
}
