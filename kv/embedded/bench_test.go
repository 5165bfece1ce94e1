package embedded_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
)

// BenchmarkPushPop is the queue recipe's access pattern on the bare engine:
// a push reads the tail with a snapshot read and sets the next key; a pop
// reads the head serializably and clears it. One op is one push and one pop.
func BenchmarkPushPop(b *testing.B) {
	ctx := context.Background()
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	r := kv.PrefixRange([]byte("q"))
	const backlog = 1000
	push := func() {
		if err := db.Transact(ctx, func(tr kv.Transaction) error {
			last, ok, err := kv.First(tr.Snapshot(), r, true)
			if err != nil {
				return err
			}
			var n uint64
			if ok {
				n = binary.BigEndian.Uint64(last.Key[1:]) + 1
			}
			k := binary.BigEndian.AppendUint64([]byte("q"), n)
			tr.Set(k, []byte("payload"))
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	pop := func() {
		if err := popFirst(ctx, db, r); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < backlog; i++ {
		push()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		push()
		pop()
	}
}

// BenchmarkConcurrentPush runs the queue's push pattern (a snapshot read of
// a tail, a key set, an index key set, an atomic count) from 1, 8 and 32
// goroutines: with more clients than cores, the cost per op shows what the
// engine's locking adds when commits queue up.
func BenchmarkConcurrentPush(b *testing.B) {
	for _, clients := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			ctx := context.Background()
			db := embedded.Open("", embedded.Config{})
			defer db.Close()
			var seq atomic.Uint64
			payload := make([]byte, 64)
			b.ReportAllocs()
			b.ResetTimer()
			runClients(b, clients, func() {
				n := seq.Add(1)
				if err := db.Transact(ctx, func(tr kv.Transaction) error {
					p := byte(n % 10)
					r := kv.PrefixRange([]byte{'q', p})
					if _, _, err := kv.First(tr.Snapshot(), r, true); err != nil {
						return err
					}
					tr.Set(binary.BigEndian.AppendUint64([]byte{'q', p}, n), payload)
					tr.Set(binary.BigEndian.AppendUint64([]byte{'i'}, n), []byte{p})
					tr.Add([]byte("count"), 1)
					return nil
				}); err != nil {
					b.Error(err)
				}
			})
		})
	}
}

// BenchmarkConcurrentPop runs the queue's pop pattern (a serializable read
// of the head, then a clear) from 1, 8 and 32 goroutines on one queue: pops
// conflict, and each retry is part of the cost.
func BenchmarkConcurrentPop(b *testing.B) {
	for _, clients := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			ctx := context.Background()
			db := embedded.Open("", embedded.Config{})
			defer db.Close()
			r := kv.PrefixRange([]byte("q"))
			fill := func(from, n int) {
				for i := from; i < from+n; i += 1000 {
					if err := db.Transact(ctx, func(tr kv.Transaction) error {
						for j := i; j < i+1000 && j < from+n; j++ {
							tr.Set(binary.BigEndian.AppendUint64([]byte("q"), uint64(j)), []byte("payload"))
						}
						return nil
					}); err != nil {
						b.Fatal(err)
					}
				}
			}
			fill(0, b.N+clients)
			b.ReportAllocs()
			b.ResetTimer()
			runClients(b, clients, func() {
				if err := popFirst(ctx, db, r); err != nil {
					b.Error(err)
				}
			})
		})
	}
}

// popFirst clears the first key in r, if any, in one transaction.
func popFirst(ctx context.Context, db kv.Database, r kv.Range) error {
	return db.Transact(ctx, func(tr kv.Transaction) error {
		first, ok, err := kv.First(tr, r, false)
		if err != nil || !ok {
			return err
		}
		tr.Clear(first.Key)
		return nil
	})
}

// runClients calls op b.N times in all from clients goroutines.
func runClients(b *testing.B, clients int, op func()) { runOps(b.N, clients, op) }

// runOps calls op n times in all from clients goroutines.
func runOps(n, clients int, op func()) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				op()
			}
		}()
	}
	wg.Wait()
}

// BenchmarkReads compares reads issued as futures (kv.GetAsync,
// kv.GetRangeAsync), sixteen at a time and then waited for, with the
// synchronous reads they replace, serializable, on 10,000 keys of 100
// bytes: the embedded engine answers a future when it is issued, by the
// synchronous read's own path, so a future must cost no more, allocations
// included. One op is one read; a transaction makes 64 (its creation
// counts: 1 allocation in 64 reads).
func BenchmarkReads(b *testing.B) {
	ctx := context.Background()
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	const n = 10_000
	for i := 0; i < n; i += 1000 {
		if err := db.Transact(ctx, func(tr kv.Transaction) error {
			for j := i; j < i+1000; j++ {
				tr.Set(fmt.Appendf(nil, "k%05d", j), make([]byte, 100))
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	// Keys in a scattered order, and the cell of ten keys each starts (a
	// queue's cell), made before the clock runs.
	keys := make([][]byte, n)
	cells := make([]kv.Range, n)
	for i := range keys {
		k := i * 7919 % n
		keys[i] = fmt.Appendf(nil, "k%05d", k)
		cells[i] = kv.Range{Begin: keys[i], End: fmt.Appendf(nil, "k%05d", k+10)}
	}
	const together = 16
	var values [together]kv.FutureValue
	var ranges [together]kv.FutureRange
	for _, c := range []struct {
		name string
		read func(tr kv.Transaction, i int) error
	}{
		{"Get", func(tr kv.Transaction, i int) error {
			_, err := tr.Get(keys[i%n])
			return err
		}},
		{"GetAsync", func(tr kv.Transaction, i int) error {
			values[i%together] = kv.GetAsync(tr, keys[i%n])
			if i%together != together-1 {
				return nil
			}
			for _, f := range values {
				if _, err := f.Get(); err != nil {
					return err
				}
			}
			return nil
		}},
		{"First", func(tr kv.Transaction, i int) error {
			_, _, err := kv.First(tr, cells[i%n], false)
			return err
		}},
		{"GetRangeAsync/limit=1", func(tr kv.Transaction, i int) error {
			return issueRange(tr, &ranges, cells[i%n], 1, i)
		}},
		{"GetRange/limit=10", func(tr kv.Transaction, i int) error {
			_, err := kv.Collect(tr.GetRange(cells[i%n], kv.RangeOptions{Limit: 10}))
			return err
		}},
		{"GetRangeAsync/limit=10", func(tr kv.Transaction, i int) error {
			return issueRange(tr, &ranges, cells[i%n], 10, i)
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			const perTxn = 64 // a multiple of together
			var tr kv.Transaction
			b.ReportAllocs()
			for i := range b.N {
				if i%perTxn == 0 {
					// Counted in each case alike: stopping the
					// timer reads the memory statistics, which
					// costs more than a read.
					if tr != nil {
						tr.Cancel()
					}
					var err error
					if tr, err = db.CreateTransaction(ctx); err != nil {
						b.Fatal(err)
					}
				}
				if err := c.read(tr, i); err != nil {
					b.Fatal(err)
				}
			}
			tr.Cancel()
		})
	}
}

// issueRange issues read i of a round of range futures, and waits for the
// round once its last read is issued.
func issueRange(tr kv.Transaction, round *[16]kv.FutureRange, r kv.Range, limit, i int) error {
	round[i%len(round)] = kv.GetRangeAsync(tr, r, kv.RangeOptions{Limit: limit})
	if i%len(round) != len(round)-1 {
		return nil
	}
	for _, f := range round {
		if _, err := f.Get(); err != nil {
			return err
		}
	}
	return nil
}
