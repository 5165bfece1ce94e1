package driver_test

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/tuple"
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

// BenchmarkMemoryPerRow reports the heap a queued row takes on memory:, for
// the rows of `fdbqueue bench` (priority 0..9, cpu 1..8, mem 1..32, a
// 64-byte random payload) pushed by 100-row INSERTs into a table with a fit
// index: 1,000,000 rows (10,000 with -short). Beside the heap a row
// takes (B/row): the bytes of its records (records-B/row: keys, values and
// an 8-byte header a key), the unused space of the slabs holding them
// (slack-B/row), the rest of the heap (tree-B/row: the B-tree's nodes, 8
// bytes a key at full nodes), and the keys a row has (keys/row). Of the
// records, by the queue's key (queues/layout.go), with their headers: the
// items (item-B/row), the id index (ids-B/row), the fit index by cell
// (cells-B/row) and by shape (shapes-B/row).
func BenchmarkMemoryPerRow(b *testing.B) {
	benchMemoryPerRow(b, fitTable, func(r *rand.Rand) int { return 1 + r.IntN(32) })
}

// BenchmarkMemoryPerRowNoFit is BenchmarkMemoryPerRow for a table without
// the fit index: the indexes of PostgreSQL's table in docs/benchmarks.md
// (its rows by id and by priority), which a fit pop would scan.
func BenchmarkMemoryPerRowNoFit(b *testing.B) {
	benchMemoryPerRow(b, "CREATE TABLE t (priority INT NOT NULL, cpu INT NOT NULL, mem INT NOT NULL, payload BLOB)",
		func(r *rand.Rand) int { return 1 + r.IntN(32) })
}

// fitTable is the table of `fdbqueue bench`, with its fit index.
const fitTable = "CREATE TABLE t (priority INT NOT NULL, cpu INT NOT NULL, mem INT NOT NULL, payload BLOB, INDEX fit (cpu, mem))"

// BenchmarkMemoryPerRowByMem is BenchmarkMemoryPerRow with mem drawn from
// 1..15 and 17..31, where every row's cell is its exact shape (3 keys a
// row), and from 33..47, where every row is filed under its shape too (4
// keys a row): what docs/sql.md says of resource values of 32 or more.
func BenchmarkMemoryPerRowByMem(b *testing.B) {
	for _, lo := range []int{1, 17, 33} {
		b.Run(fmt.Sprintf("mem=%d..%d", lo, lo+14), func(b *testing.B) {
			benchMemoryPerRow(b, fitTable, func(r *rand.Rand) int { return lo + r.IntN(15) })
		})
	}
}

func benchMemoryPerRow(b *testing.B, schema string, mem func(*rand.Rand) int) {
	n := 1_000_000
	if testing.Short() {
		n = 10_000
	}
	r := rand.New(rand.NewPCG(1, 1))
	payload := make([]byte, 64)
	for i := range payload {
		payload[i] = byte(r.IntN(256))
	}
	insert := "INSERT INTO t (priority, cpu, mem, payload) VALUES " + strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?), ", 100), ", ")
	for b.Loop() {
		// A name without the sub-benchmark's slash: a memory: DSN's name
		// takes none.
		name := fmt.Sprintf("mem-per-row-%d", r.Int64())
		// A second handle on the named database, for its engine's counters.
		eng := embedded.Open(name, embedded.Config{})
		db, err := sql.Open("fdbqueue", "memory:"+name)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := db.Exec(schema); err != nil {
			b.Fatal(err)
		}
		st0 := eng.Stats()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		args := make([]any, 0, 400)
		for i := 0; i < n; i += 100 {
			args = args[:0]
			for range 100 {
				args = append(args, r.IntN(10), 1+r.IntN(8), mem(r), payload)
			}
			if _, err := db.Exec(insert, args...); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		st := eng.Stats()
		heap := float64(after.HeapAlloc) - float64(before.HeapAlloc)
		slabs := float64(st.SlabBytes - st0.SlabBytes)
		recs := float64(st.RecordBytes - st0.RecordBytes)
		b.ReportMetric(heap/float64(n), "B/row")
		b.ReportMetric(recs/float64(n), "records-B/row")
		b.ReportMetric((slabs-recs)/float64(n), "slack-B/row")
		b.ReportMetric((heap-slabs)/float64(n), "tree-B/row")
		b.ReportMetric(float64(st.LiveKeys-st0.LiveKeys)/float64(n), "keys/row")
		byTag := map[int64]int{}
		if err := eng.ReadTransact(b.Context(), func(tr kv.ReadTransaction) error {
			it := tr.GetRange(kv.Range{Begin: tuple.Tuple{"t"}.Pack(), End: tuple.Tuple{"u"}.Pack()}, kv.RangeOptions{Mode: kv.StreamingModeWantAll})
			for it.Next() {
				e := it.KeyValue()
				// ("t", table id, tag, ...)
				if k, err := tuple.Unpack(e.Key); err == nil && len(k) >= 3 {
					if tag, ok := k[2].(int64); ok {
						byTag[tag] += len(e.Key) + len(e.Value) + 8
					}
				}
			}
			return it.Err()
		}); err != nil {
			b.Fatal(err)
		}
		for tag, name := range map[int64]string{0: "item", 1: "ids", 3: "cells", 5: "shapes"} {
			b.ReportMetric(float64(byTag[tag])/float64(n), name+"-B/row")
		}
		_ = db.Close()
		_ = eng.Close()
	}
}
