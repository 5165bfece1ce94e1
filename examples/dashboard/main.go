// Command dashboard serves fdbqueue's dashboard (package ui) mounted under
// /queues/ of a service's mux, over a database with some traffic: emails
// pushed and popped at a rate that rises and falls, jobs worked by the
// worker package (some fail, retry after their backoff, and die into
// jobs_dead), and reports delayed for later. Open the URL it prints.
//
//	go run ./examples/dashboard                  # until Ctrl-C
//	go run ./examples/dashboard --for 5s         # stop after 5 s
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"

	_ "github.com/fdbqueue/fdbqueue/driver"
	"github.com/fdbqueue/fdbqueue/ui"
	"github.com/fdbqueue/fdbqueue/worker"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "the address to serve on")
	runFor := flag.Duration("for", 0, "stop after this long (0: at Ctrl-C)")
	flag.Parse()
	if err := run(*listen, *runFor); err != nil {
		fmt.Fprintln(os.Stderr, "dashboard:", err)
		os.Exit(1)
	}
}

func run(listen string, runFor time.Duration) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if runFor > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, runFor)
		defer cancel()
	}
	db, err := sql.Open("fdbqueue", "memory:")
	if err != nil {
		return err
	}
	defer db.Close()
	for _, ddl := range []string{
		`CREATE TABLE emails (recipient TEXT NOT NULL, subject TEXT)`,
		`CREATE TABLE jobs (priority INT NOT NULL, kind TEXT NOT NULL, payload TEXT) MAX_ATTEMPTS=3 BACKOFF=CONSTANT(2 SECOND)`,
		`CREATE TABLE reports (name TEXT NOT NULL)`,
	} {
		if _, err := db.ExecContext(ctx, ddl); err != nil {
			return err
		}
	}
	for i := range 12 {
		if _, err := db.ExecContext(ctx, `INSERT INTO reports (name, _visible_at) VALUES (?, NOW() + INTERVAL ? MINUTE)`,
			fmt.Sprintf("daily-%02d", i), 5*(i+1)); err != nil {
			return err
		}
	}
	go traffic(ctx, db)

	// The two lines a service adds: the dashboard, mounted under a prefix.
	d := ui.Handler(db)
	defer d.Close()
	mux := http.NewServeMux()
	mux.Handle("/queues/", http.StripPrefix("/queues", d))

	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("the dashboard is at http://%s/queues/\n", ln.Addr())
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// traffic pushes emails and jobs and works them until ctx ends.
func traffic(ctx context.Context, db *sql.DB) {
	start := time.Now()
	// Emails: pushed at 20 to 60 a second, popped at up to 30 a second:
	// a backlog builds and drains.
	go every(ctx, 50*time.Millisecond, func() {
		rate := 40 + 20*math.Sin(time.Since(start).Seconds()/20)
		for range int(rate / 20) {
			_, _ = db.ExecContext(ctx, `INSERT INTO emails (recipient, subject) VALUES (?, 'Welcome')`,
				fmt.Sprintf("user%d@example.com", rand.IntN(100000)))
		}
	})
	go every(ctx, 100*time.Millisecond, func() {
		rows, err := db.QueryContext(ctx, `SELECT recipient FROM emails LIMIT 3 FOR POP`)
		if err != nil {
			return
		}
		defer rows.Close()
		for rows.Next() { // sent
		}
	})
	// Jobs: 8 a second; a fifth of the attempts fail.
	go every(ctx, 125*time.Millisecond, func() {
		kinds := []string{"resize", "transcode", "index"}
		_, _ = db.ExecContext(ctx, `INSERT INTO jobs (priority, kind, payload) VALUES (?, ?, ?)`,
			rand.IntN(3), kinds[rand.IntN(len(kinds))], fmt.Sprintf("object-%d", rand.IntN(1000)))
	})
	w := worker.New(db, worker.Config{Table: "jobs", Columns: []string{"kind"}, OrderBy: "priority DESC",
		Lease: 5 * time.Second, Concurrency: 4})
	_ = w.Run(ctx, func(ctx context.Context, j *worker.Job) error {
		var kind string
		if err := j.Scan(&kind); err != nil {
			return err
		}
		select {
		case <-time.After(time.Duration(200+rand.IntN(400)) * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
		if rand.IntN(5) == 0 {
			return fmt.Errorf("%s: upstream timed out", kind)
		}
		return nil
	})
}

// every calls f every d until ctx ends.
func every(ctx context.Context, d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}
