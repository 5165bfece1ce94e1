package worker_test

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	_ "github.com/fdbqueue/fdbqueue/driver"
	"github.com/fdbqueue/fdbqueue/worker"
)

func Example() {
	db, err := sql.Open("fdbqueue", "memory:")
	if err != nil {
		panic(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE jobs (priority INT NOT NULL, payload TEXT) MAX_ATTEMPTS=5`); err != nil {
		panic(err)
	}
	if _, err := db.Exec(`INSERT INTO jobs (priority, payload) VALUES (1, 'low'), (9, 'urgent'), (5, 'normal')`); err != nil {
		panic(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := 0
	w := worker.New(db, worker.Config{
		Table: "jobs", Columns: []string{"payload"}, OrderBy: "priority DESC",
		Lease: 30 * time.Second, Wait: 20 * time.Second, ShutdownTimeout: 10 * time.Second,
		Hooks: worker.Hooks{OnSuccess: func(context.Context, *worker.Job, time.Duration) {
			if done++; done == 3 {
				cancel() // a real worker runs until it is told to stop
			}
		}},
	})
	err = w.Run(ctx, func(ctx context.Context, j *worker.Job) error {
		var payload string
		if err := j.Scan(&payload); err != nil {
			return err
		}
		fmt.Println("did", payload, "attempt", j.Attempts)
		return nil // ack; an error would release the task for a retry
	})
	fmt.Println("Run:", err)
	// Output:
	// did urgent attempt 1
	// did normal attempt 1
	// did low attempt 1
	// Run: <nil>
}
