package driver_test

import (
	"bytes"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkFile measures statements on file: with sync=full (a commit
// returns once its log record is fsynced), with 1, 8 and 32 clients, next
// to the machine's own fsync latency measured in the same run.
func BenchmarkFile(b *testing.B) {
	b.Run("fsync", func(b *testing.B) {
		f, err := os.Create(filepath.Join(b.TempDir(), "probe"))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		buf := make([]byte, 128)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := f.Write(buf); err != nil {
				b.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
		}
	})
	const insert = "INSERT INTO tasks (priority, cpu, mem, payload) VALUES (?, ?, ?, ?)"
	const pop = "SELECT id, payload FROM tasks WHERE cpu <= ? AND mem <= ? ORDER BY priority DESC LIMIT 1 FOR POP"
	payload := []byte("payload-payload-payload")
	open := func(b *testing.B) *sql.DB {
		db, err := sql.Open("fdbqueue", "file:"+b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		db.SetMaxIdleConns(64)
		if _, err := db.Exec(createTasks); err != nil {
			b.Fatal(err)
		}
		return db
	}
	for _, clients := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("push/clients=%d", clients), func(b *testing.B) {
			db := open(b)
			defer db.Close()
			run(b, clients, func(i int) error {
				_, err := db.Exec(insert, i%10, 1+i%4, 512*(1+i%8), payload)
				return err
			})
		})
		b.Run(fmt.Sprintf("pop/clients=%d", clients), func(b *testing.B) {
			db := open(b)
			defer db.Close()
			// Fill in large transactions, outside the timer.
			for done := 0; done < b.N; {
				tx, err := db.Begin()
				if err != nil {
					b.Fatal(err)
				}
				for j := 0; j < 1000 && done < b.N; j, done = j+1, done+1 {
					if _, err := tx.Exec(insert, done%10, 1+done%4, 512*(1+done%8), payload); err != nil {
						b.Fatal(err)
					}
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
			}
			run(b, clients, func(int) error {
				var id int64
				var p []byte
				err := db.QueryRow(pop, 4, 4096).Scan(&id, &p)
				if err == sql.ErrNoRows {
					return nil
				}
				return err
			})
		})
	}
}

// BenchmarkFileRestarts reproduces a program that restarts:
// four runs, each opening the database, pushing 100,000 rows of 200 bytes
// in 100-row INSERTs, popping them all and closing it; then it times a
// fifth open and a COUNT(*). It reports the bytes in the directory after
// each run (MB-after-run-N), which for an empty queue are what the log
// and checkpoints keep, the most seen during the runs (peak-MB, sampled
// every 100 statements), and the runs' mean time (s/run). Run it with
// -benchtime 1x.
func BenchmarkFileRestarts(b *testing.B) {
	const rows, batch = 100_000, 100
	payload := bytes.Repeat([]byte("p"), 200)
	insert := "INSERT INTO q (payload) VALUES " + strings.TrimSuffix(strings.Repeat("(?), ", batch), ", ")
	args := make([]any, batch)
	for i := range args {
		args[i] = payload
	}
	open := func(dir string) *sql.DB {
		db, err := sql.Open("fdbqueue", "file:"+dir)
		if err != nil {
			b.Fatal(err)
		}
		return db
	}
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := b.TempDir()
		var peak int64
		sample := func(n int) {
			if n%100 == 0 {
				peak = max(peak, dirSize(b, dir))
			}
		}
		start := time.Now()
		for run := 1; run <= 4; run++ {
			db := open(dir)
			if _, err := db.Exec("CREATE TABLE IF NOT EXISTS q (payload BLOB)"); err != nil {
				b.Fatal(err)
			}
			for n := 0; n < rows; n += batch {
				if _, err := db.Exec(insert, args...); err != nil {
					b.Fatal(err)
				}
				sample(n / batch)
			}
			for popped, n := 0, 0; popped < rows; n++ {
				sample(n)
				r, err := db.Query("SELECT payload FROM q LIMIT 1000 FOR POP")
				if err != nil {
					b.Fatal(err)
				}
				for r.Next() {
					popped++
				}
				if err := r.Err(); err != nil {
					b.Fatal(err)
				}
			}
			if err := db.Close(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(dirSize(b, dir))/1e6, fmt.Sprintf("MB-after-run-%d", run))
		}
		b.ReportMetric(time.Since(start).Seconds()/4, "s/run")
		b.ReportMetric(float64(peak)/1e6, "peak-MB")
		b.StartTimer()
		db := open(dir)
		var n int
		if err := db.QueryRow("SELECT COUNT(*) FROM q").Scan(&n); err != nil || n != 0 {
			b.Fatal(n, err)
		}
		b.StopTimer()
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// dirSize returns the bytes of the files in dir.
func dirSize(b *testing.B, dir string) int64 {
	entries, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			b.Fatal(err)
		}
		n += info.Size()
	}
	return n
}
