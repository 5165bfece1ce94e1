package driver_test

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkSQL measures statements through database/sql on memory:, with 1
// goroutine and with 32 (b.RunParallel at 16 per GOMAXPROCS=2).
//
//   - push: INSERT of one task;
//   - pop: SELECT ... FOR POP of the best fitting task (the queue is filled
//     with b.N tasks first, outside the timer);
//   - pushpop: one of each.
func BenchmarkSQL(b *testing.B) {
	const insert = "INSERT INTO tasks (priority, cpu, mem, payload) VALUES (?, ?, ?, ?)"
	const pop = "SELECT id, payload FROM tasks WHERE cpu <= ? AND mem <= ? ORDER BY priority DESC LIMIT 1 FOR POP"
	payload := []byte("payload-payload-payload")
	setup := func(b *testing.B, fill int) *sql.DB {
		db, err := sql.Open("fdbqueue", "memory:")
		if err != nil {
			b.Fatal(err)
		}
		db.SetMaxIdleConns(64)
		if _, err := db.Exec(createTasks); err != nil {
			b.Fatal(err)
		}
		tx, _ := db.Begin()
		for i := 0; i < fill; i++ {
			if _, err := tx.Exec(insert, i%10, 1+i%4, 512*(1+i%8), payload); err != nil {
				b.Fatal(err)
			}
			if i%1000 == 999 {
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
				tx, _ = db.Begin()
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		return db
	}
	doPush := func(db *sql.DB, i int) error {
		_, err := db.Exec(insert, i%10, 1+i%4, 512*(1+i%8), payload)
		return err
	}
	doPop := func(db *sql.DB) error {
		var id int64
		var p []byte
		err := db.QueryRow(pop, 4, 4096).Scan(&id, &p)
		if err == sql.ErrNoRows {
			return nil
		}
		return err
	}
	// push100: 100-row INSERTs into a queue of 100,000 tasks; ns/op is per
	// row.
	b.Run("push100/clients=1", func(b *testing.B) {
		db := setup(b, 100_000)
		defer db.Close()
		var q strings.Builder
		q.WriteString("INSERT INTO tasks (priority, cpu, mem, payload) VALUES ")
		for i := range 100 {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?)")
		}
		st, err := db.Prepare(q.String())
		if err != nil {
			b.Fatal(err)
		}
		args := make([]any, 0, 400)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i += 100 {
			args = args[:0]
			for j := i; j < i+100; j++ {
				args = append(args, j%10, 1+j%4, 512*(1+j%8), payload)
			}
			if _, err := st.Exec(args...); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, par := range []int{1, 32} {
		b.Run(fmt.Sprintf("push/clients=%d", par), func(b *testing.B) {
			db := setup(b, 0)
			defer db.Close()
			run(b, par, func(i int) error { return doPush(db, i) })
		})
		b.Run(fmt.Sprintf("pop/clients=%d", par), func(b *testing.B) {
			db := setup(b, b.N)
			defer db.Close()
			run(b, par, func(int) error { return doPop(db) })
		})
		b.Run(fmt.Sprintf("pushpop/clients=%d", par), func(b *testing.B) {
			db := setup(b, 100)
			defer db.Close()
			run(b, par, func(i int) error {
				if err := doPush(db, i); err != nil {
					return err
				}
				return doPop(db)
			})
		})
	}
}

func run(b *testing.B, par int, op func(i int) error) {
	b.ReportAllocs()
	b.ResetTimer()
	if par == 1 {
		for i := 0; i < b.N; i++ {
			if err := op(i); err != nil {
				b.Fatal(err)
			}
		}
		return
	}
	b.SetParallelism(max(1, par/2))
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if err := op(i); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}
