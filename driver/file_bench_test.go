package driver_test

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"
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
