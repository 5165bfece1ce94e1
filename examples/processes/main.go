// Command processes shows the usual deployment on one host, without a
// server to run: a web process enqueues jobs into a file: database, and
// worker processes (this program again, started with "worker") take them
// from the same database at the same time. The first process to open the
// database serves it to the others; if it exits or dies, another takes
// over. Every job is done once.
//
//	go run ./examples/processes            # a database in a temporary directory
//	go run ./examples/processes DIR        # or in DIR
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	_ "github.com/fdbqueue/fdbqueue/driver"
)

const (
	workers = 2
	jobs    = 50
)

func main() {
	var err error
	if len(os.Args) == 3 && os.Args[1] == "worker" {
		err = worker(os.Args[2])
	} else {
		err = web()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "processes:", err)
		os.Exit(1)
	}
}

// web plays the web process: it creates the tables, starts the workers,
// enqueues jobs, and checks every job was done exactly once.
func web() error {
	dir := ""
	if len(os.Args) == 2 {
		dir = os.Args[1]
	} else {
		tmp, err := os.MkdirTemp("", "fdbqueue-processes-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp + "/db"
	}
	db, err := sql.Open("fdbqueue", "file:"+dir)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx := context.Background()
	for _, ddl := range []string{
		`CREATE TABLE IF NOT EXISTS jobs (priority INT NOT NULL, payload TEXT)`,
		`CREATE TABLE IF NOT EXISTS results (payload TEXT, result TEXT, worker INT)`,
	} {
		if _, err := db.ExecContext(ctx, ddl); err != nil {
			return err
		}
	}

	// The workers are processes of their own, on the same database.
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var procs []*exec.Cmd
	for range workers {
		cmd := exec.Command(self, "worker", dir)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Start(); err != nil {
			return err
		}
		procs = append(procs, cmd)
	}

	// Enqueue while they work: each INSERT wakes a worker waiting in
	// FOR LEASE ... WAIT, whichever process it is in.
	for i := range jobs {
		if _, err := db.ExecContext(ctx, `INSERT INTO jobs (priority, payload) VALUES (?, ?)`, 1, fmt.Sprint("job ", i)); err != nil {
			return err
		}
		time.Sleep(2 * time.Millisecond)
	}
	// One stop job a worker, after every job (priority 0 comes later in a
	// DESC queue).
	for range workers {
		if _, err := db.ExecContext(ctx, `INSERT INTO jobs (priority, payload) VALUES (0, 'stop')`); err != nil {
			return err
		}
	}
	for _, p := range procs {
		if err := p.Wait(); err != nil {
			return fmt.Errorf("a worker failed: %w", err)
		}
	}

	var done, distinct int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM results`).Scan(&done); err != nil {
		return err
	}
	seen := map[string]bool{}
	rows, err := db.QueryContext(ctx, `SELECT payload FROM results`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return err
		}
		seen[p] = true
	}
	if err := rows.Err(); err != nil {
		return err
	}
	distinct = len(seen)
	if done != jobs || distinct != jobs {
		return fmt.Errorf("%d results, %d distinct, for %d jobs", done, distinct, jobs)
	}
	fmt.Printf("%d jobs done once each by %d worker processes\n", jobs, workers)
	return nil
}

// worker leases jobs, records each one's result and acks it in one
// transaction, until it takes a stop job.
func worker(dir string) error {
	db, err := sql.Open("fdbqueue", "file:"+dir)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx := context.Background()
	me := os.Getpid()
	for {
		var id, lease int64
		var payload string
		err := db.QueryRowContext(ctx, `SELECT id, _lease, payload FROM jobs
		        ORDER BY priority DESC LIMIT 1 FOR LEASE 30 WAIT 10`).Scan(&id, &lease, &payload)
		if errors.Is(err, sql.ErrNoRows) {
			return errors.New("no job for 10 s")
		}
		if err != nil {
			return err
		}
		if payload == "stop" {
			_, err := db.ExecContext(ctx, `DELETE FROM jobs WHERE id = ? AND _lease = ?`, id, lease)
			return err
		}
		// The work, then its result and the ack together: a worker that
		// dies before the commit leaves the job leased, and it comes back
		// when the lease ends.
		result := strings.ToUpper(payload)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(`INSERT INTO results (payload, result, worker) VALUES (?, ?, ?)`, payload, result, me); err != nil {
			tx.Rollback()
			return err
		}
		res, err := tx.Exec(`DELETE FROM jobs WHERE id = ? AND _lease = ?`, id, lease)
		if err != nil {
			tx.Rollback()
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			tx.Rollback() // the lease ended and another worker has the job
			continue
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
}
