// Command leases shows a task queue with leases: workers lease a task
// (FOR LEASE), work on it while renewing the lease (a heartbeat), then ack
// it (DELETE ... AND _lease = ?); a worker that fails releases its task
// for a retry, and one that dies simply stops: its lease expires and the
// task comes back at its place for another worker. Every task is done
// once.
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
	"sync/atomic"
	"time"

	_ "github.com/fdbqueue/fdbqueue/driver"
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
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE jobs (priority INT NOT NULL, payload TEXT)`); err != nil {
		return err
	}
	const tasks = 40
	for i := range tasks {
		if _, err := db.ExecContext(ctx, `INSERT INTO jobs (priority, payload) VALUES (?, ?)`, i%3, fmt.Sprintf("task %d", i)); err != nil {
			return err
		}
	}

	var mu sync.Mutex
	done := map[string]int{}
	var died, retried atomic.Int64
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				switch err := work(ctx, db, w, n, &died, &retried, func(payload string) {
					mu.Lock()
					done[payload]++
					mu.Unlock()
				}); {
				case errors.Is(err, sql.ErrNoRows):
					return // nothing left, and nothing leased that could come back
				case err != nil:
					fmt.Fprintln(os.Stderr, "worker", w, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for payload, n := range done {
		if n != 1 {
			return fmt.Errorf("%s was done %d times", payload, n)
		}
	}
	if len(done) != tasks {
		return fmt.Errorf("%d tasks done, %d pushed", len(done), tasks)
	}
	fmt.Printf("%d tasks done once each; %d abandoned by a dying worker and %d released after a failure came back\n", len(done), died.Load(), retried.Load())
	return nil
}

// work leases one task, works on it with a heartbeat, and acks it.
func work(ctx context.Context, db *sql.DB, worker, n int, died, retried *atomic.Int64, did func(string)) error {
	var id, lease, attempts int64
	var payload string
	// Lease the most urgent task (the highest priority), waiting up to twice the lease for one: a task a
	// dead worker held comes back when its lease expires.
	err := db.QueryRowContext(ctx, `SELECT id, _lease, _attempts, payload FROM jobs
	                                ORDER BY priority DESC LIMIT 1 FOR LEASE ? WAIT ?`, leaseFor, 2*leaseFor).
		Scan(&id, &lease, &attempts, &payload)
	if err != nil {
		return err
	}
	switch {
	case worker == 0 && n == 2:
		died.Add(1)
		return nil // this worker "dies" holding the lease: no ack, no release
	case worker == 1 && attempts == 1 && n%5 == 0:
		// The work failed: release the task now for a retry (a real
		// worker would add a backoff: NOW() + INTERVAL n SECOND).
		retried.Add(1)
		_, err := db.ExecContext(ctx, `UPDATE jobs SET _visible_at = NOW() WHERE id = ? AND _lease = ?`, id, lease)
		return err
	}
	// Work, renewing the lease half-way: a heartbeat keeps the task ours.
	time.Sleep(leaseFor / 4)
	res, err := db.ExecContext(ctx, `UPDATE jobs SET _visible_at = NOW() + INTERVAL 1 SECOND WHERE id = ? AND _lease = ?`, id, lease)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil // the lease was lost: another worker has the task now
	}
	// Ack: only the holder of the current lease removes the task.
	res, err = db.ExecContext(ctx, `DELETE FROM jobs WHERE id = ? AND _lease = ?`, id, lease)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 1 {
		did(payload)
	}
	return nil
}
