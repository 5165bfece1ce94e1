package embedded_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// headCells fills a memory database with 100,000 keys shaped as a fit
// index's (queues/layout.go: P (3, cpu, mem, priority, seq, id), a packed
// resources value) in 8 x 32 cells, and returns it with the cells' ranges
// of a thousand searches: for random limits, every cell that fits, in key
// order, as a fit pop reads their heads.
func headCells(b *testing.B) (kv.Database, [][]kv.Range) {
	ctx := context.Background()
	db := embedded.Open("", embedded.Config{})
	b.Cleanup(func() { db.Close() })
	prefix := tuple.Tuple{"t", "fit"}.Pack()
	cell := func(cpu, mem int64) []byte {
		return tuple.AppendInt(tuple.AppendInt(tuple.AppendInt(append([]byte{}, prefix...), 3), cpu), mem)
	}
	r := rand.New(rand.NewPCG(1, 2))
	const n = 100_000
	for i := 0; i < n; i += 1000 {
		if err := db.Transact(ctx, func(tr kv.Transaction) error {
			for j := i; j < i+1000; j++ {
				cpu, mem := 1+r.Int64N(8), 1+r.Int64N(32)
				k := tuple.AppendInt(tuple.AppendInt(tuple.AppendInt(cell(cpu, mem), r.Int64N(10)), int64(j)), int64(j))
				tr.Set(k, tuple.Tuple{cpu, mem}.Pack())
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	searches := make([][]kv.Range, 1000)
	for i := range searches {
		cpu, mem := 1+r.Int64N(8), 1+r.Int64N(32)
		var rs []kv.Range
		for c := int64(1); c <= cpu; c++ {
			for m := int64(1); m <= mem; m++ {
				rs = append(rs, kv.PrefixRange(cell(c, m)))
			}
		}
		slices.SortFunc(rs, func(a, b kv.Range) int { return slices.Compare(a.Begin, b.Begin) })
		searches[i] = rs
	}
	return db, searches
}

// BenchmarkHeadReads is a fit pop's reads of the heads of the cells that
// fit its limits (headCells), serializable, in one transaction a search,
// which has written nothing yet: one op is one one-row range read, by
// kv.First or by kv.GetRangeAsync with Limit 1 (each waited for before
// the next is issued, as a search takes them). The transaction's
// creation counts, once in about 66 reads.
func BenchmarkHeadReads(b *testing.B) {
	db, searches := headCells(b)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		read func(rd kv.ReadTransaction, r kv.Range) error
	}{
		{"First", func(rd kv.ReadTransaction, r kv.Range) error {
			_, _, err := kv.First(rd, r, false)
			return err
		}},
		{"GetRangeAsync", func(rd kv.ReadTransaction, r kv.Range) error {
			_, err := kv.GetRangeAsync(rd, r, kv.RangeOptions{Limit: 1}).Get()
			return err
		}},
	} {
		for _, snapshot := range []bool{false, true} {
			name := c.name
			if snapshot {
				name += "/snapshot"
			}
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				cpu := processCPU()
				s, i := 0, 0
				var tr kv.Transaction
				for range b.N {
					if tr == nil {
						var err error
						if tr, err = db.CreateTransaction(ctx); err != nil {
							b.Fatal(err)
						}
					}
					var rd kv.ReadTransaction = tr
					if snapshot {
						rd = tr.Snapshot()
					}
					if err := c.read(rd, searches[s][i]); err != nil {
						b.Fatal(err)
					}
					if i++; i == len(searches[s]) {
						tr.Cancel()
						tr, s, i = nil, (s+1)%len(searches), 0
					}
				}
				if tr != nil {
					tr.Cancel()
				}
				if cpu >= 0 {
					// The process's CPU time a read: steadier than
					// ns/op on a shared machine.
					b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
				}
			})
		}
	}
}
