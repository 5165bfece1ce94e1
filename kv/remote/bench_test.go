package remote_test

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/kv/remote"
)

// The cost of a round trip: each benchmark runs on a memory database,
// directly ("embedded") and through a client and a server on a Unix
// socket in the same process ("remote").
//
//	go test ./kv/remote -run '^$' -bench . -benchmem -count 5

// engines runs b's body on each engine.
func engines(b *testing.B, body func(b *testing.B, db kv.Database)) {
	b.Run("embedded", func(b *testing.B) {
		db := embedded.Open("", embedded.Config{})
		defer db.Close()
		seed(b, db)
		body(b, db)
	})
	b.Run("remote", func(b *testing.B) {
		mem := embedded.Open("", embedded.Config{})
		defer mem.Close()
		seed(b, mem)
		s := serve(b, mem)
		body(b, s.dial(b, remote.Options{}))
	})
}

func seed(b *testing.B, db kv.Database) {
	require.NoError(b, db.Transact(bg, func(tr kv.Transaction) error {
		for i := range 100 {
			tr.Set([]byte(fmt.Sprintf("k%03d", i)), []byte("value"))
		}
		return nil
	}))
}

// renewEvery is how many operations a benchmark's transaction does before
// it is replaced, within the 5-second limit.
const renewEvery = 10_000

// txnLoop gives body a transaction, a new one every renewEvery calls.
func txnLoop(b *testing.B, db kv.Database, body func(tr kv.Transaction)) {
	tr, err := db.CreateTransaction(bg)
	require.NoError(b, err)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if i > 0 && i%renewEvery == 0 {
			tr.Cancel()
			tr, _ = db.CreateTransaction(bg)
		}
		body(tr)
	}
	b.StopTimer()
	tr.Cancel()
}

// BenchmarkGet: one Get, waited for: a round trip.
func BenchmarkGet(b *testing.B) {
	engines(b, func(b *testing.B, db kv.Database) {
		key := []byte("k042")
		txnLoop(b, db, func(tr kv.Transaction) {
			if _, err := tr.Get(key); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// BenchmarkGetAsync10: ten GetAsync, then their Gets: one round trip for
// the ten, pipelined.
func BenchmarkGetAsync10(b *testing.B) {
	engines(b, func(b *testing.B, db kv.Database) {
		keys := make([][]byte, 10)
		for i := range keys {
			keys[i] = []byte(fmt.Sprintf("k%03d", i*7))
		}
		fs := make([]kv.FutureValue, len(keys))
		txnLoop(b, db, func(tr kv.Transaction) {
			for i, k := range keys {
				fs[i] = kv.GetAsync(tr, k)
			}
			for _, f := range fs {
				if _, err := f.Get(); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}

// BenchmarkTransact: a small read-write transaction (a Get, a Set, the
// commit): two round trips remote (the read, with the transaction's
// begin; the commit, the write going ahead of it unanswered).
func BenchmarkTransact(b *testing.B) {
	engines(b, func(b *testing.B, db kv.Database) {
		var n atomic.Int64
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			transact(b, db, &n)
		}
	})
}

func transact(b *testing.B, db kv.Database, n *atomic.Int64) {
	key := []byte(fmt.Sprintf("t%08d", n.Add(1)))
	err := db.Transact(bg, func(tr kv.Transaction) error {
		if _, err := tr.Get(key); err != nil {
			return err
		}
		tr.Set(key, []byte("v"))
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkTransact8: BenchmarkTransact on 8 goroutines at once, sharing
// the DB (remote: one connection); ns/op is the time per transaction
// over all of them.
func BenchmarkTransact8(b *testing.B) {
	engines(b, func(b *testing.B, db kv.Database) {
		var n atomic.Int64
		b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0)))
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				transact(b, db, &n)
			}
		})
	})
}

// BenchmarkTransact8Conns: as BenchmarkTransact8, each goroutine with a
// DB (a connection) of its own, as 8 client processes would be. The
// embedded engine's figure is BenchmarkTransact8's.
func BenchmarkTransact8Conns(b *testing.B) {
	mem := embedded.Open("", embedded.Config{})
	defer mem.Close()
	s := serve(b, mem)
	dbs := make(chan kv.Database, 8)
	for range 8 {
		dbs <- s.dial(b, remote.Options{})
	}
	var n atomic.Int64
	b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		db := <-dbs
		defer func() { dbs <- db }()
		for pb.Next() {
			transact(b, db, &n)
		}
	})
}
