package embedded

import (
	"bytes"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/fdbqueue/fdbqueue/internal/cputime"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// queueBatch returns the batch of a 100-row INSERT into a queue under
// prefix (queues/layout.go), rows first..first+99, writes sorted by key:
// each row's item P (0, priority, seq, id) with a 200-byte value, id index
// P (1, id), fit index entries by cell P (3, cell..., priority, seq, id) and
// by shape P (5, cpu, mem, priority, seq, id): the shape of a `fdbqueue
// bench` row's keys (driver's BenchmarkMemoryPerRow).
func queueBatch(prefix []byte, first int64) *batch {
	return rowsBatch(prefix, first, 200, func(id int64) (prio, seq, cpu, mem int64) {
		return id % 10, id, 1 + id%8, 1 + id%32
	})
}

// randomBatch is queueBatch with the resources of a `fdbqueue bench`
// push: each row a random priority 0..9, cpu 1..8 and mem 1..32, so that
// a batch's fit-index entries land in ~100 cells and shapes across the
// tree, as realistic INSERTs do (queueBatch's follow the id), and a
// 64-byte value.
func randomBatch(rng *rand.Rand, prefix []byte, first int64) *batch {
	return rowsBatch(prefix, first, 64, func(id int64) (prio, seq, cpu, mem int64) {
		return rng.Int64N(10), id, 1 + rng.Int64N(8), 1 + rng.Int64N(32)
	})
}

// rowsBatch returns the batch of rows first..first+99 with values of
// size bytes and the priority, seq and resources res gives each id, writes
// sorted by key.
func rowsBatch(prefix []byte, first int64, size int, res func(id int64) (prio, seq, cpu, mem int64)) *batch {
	key := func(e ...any) []byte {
		k, err := tuple.Tuple(e).AppendPack(append([]byte{}, prefix...))
		if err != nil {
			panic(err)
		}
		return k
	}
	payload := make([]byte, size)
	b := &batch{}
	for id := first; id < first+100; id++ {
		prio, seq, cpu, mem := res(id)
		b.writes = append(b.writes,
			&write{key: key(0, prio, seq, id), base: baseSet, val: payload},
			&write{key: key(1, id), base: baseSet, val: tuple.Tuple{prio, seq}.Pack()},
			&write{key: key(3, cpu/2, mem/4, prio, seq, id), base: baseSet, val: tuple.Tuple{cpu, mem}.Pack()},
			&write{key: key(5, cpu, mem, prio, seq, id), base: baseSet, val: nil})
	}
	slices.SortFunc(b.writes, func(x, y *write) int { return bytes.Compare(x.key, y.key) })
	return b
}

// BenchmarkApplyBatch installs 100-row INSERT batches (queueBatch) into a
// store of 100,000 rows, in commit order, under the store's lock, as a
// commit group's leader does: the part of a commit no other client can
// run meanwhile. ns/op is per row (4 keys).
func BenchmarkApplyBatch(b *testing.B) {
	benchApply(b, tuple.Tuple{"fdbqueue", "bench_tasks"}.Pack(), 100_000, queueBatch)
}

// BenchmarkApplyRandom is BenchmarkApplyBatch with randomBatch's rows,
// into a store of 300,000 rows (1.2M keys) under the prefix of a table,
// P = ("fdbqueue", "t", 1): the tree the realistic 100-row INSERTs of a
// `fdbqueue bench` push install into.
func BenchmarkApplyRandom(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	benchApply(b, tuple.Tuple{"fdbqueue", "t", 1}.Pack(), 300_000, func(prefix []byte, first int64) *batch {
		return randomBatch(rng, prefix, first)
	})
}

// BenchmarkApplyYoung is BenchmarkApplyRandom into a new store: a young
// queue's tree, small enough for the cache, where a search costs little
// more than a finger (fingerMinTree). Run it with -benchtime 20000x, the
// rows of the peers script's runs.
func BenchmarkApplyYoung(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	benchApply(b, tuple.Tuple{"t", 1}.Pack(), 0, func(prefix []byte, first int64) *batch {
		return randomBatch(rng, prefix, first)
	})
}

// BenchmarkApplyPaired is BenchmarkApplyRandom with the seqs of
// concurrent pushes: two 100-row INSERTs in flight together read the same
// tail seq of each priority and number their rows of it from there, told
// apart by their ids (queues/layout.go), so that the second one's items
// interleave with the first's, one key in two. It is the install of a
// commit group of 8 clients' INSERTs, in pairs.
func BenchmarkApplyPaired(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	prefix := tuple.Tuple{"fdbqueue", "t", 1}.Pack()
	// Each priority's last seq, and the tails the pair in flight read.
	var tails, read [10]int64
	benchApply(b, prefix, 300_000, func(prefix []byte, first int64) *batch {
		if first%200 == 0 {
			read = tails
		}
		seqs := read
		bt := seqBatch(rng, prefix, first, &seqs)
		for p, s := range seqs {
			tails[p] = max(tails[p], s)
		}
		return bt
	})
}

// seqBatch is randomBatch with each row's seq the next of its priority in
// seqs, which it advances, rather than its id.
func seqBatch(rng *rand.Rand, prefix []byte, first int64, seqs *[10]int64) *batch {
	return rowsBatch(prefix, first, 64, func(int64) (prio, seq, cpu, mem int64) {
		prio = rng.Int64N(10)
		seqs[prio]++
		return prio, seqs[prio], 1 + rng.Int64N(8), 1 + rng.Int64N(32)
	})
}

// installNext installs bt into s at the next version, under s's lock, as a
// commit group's leader does.
func installNext(s *store, bt *batch) {
	s.nextVer++
	s.mu.Lock()
	s.installLocked(time.Time{}, s.nextVer, bt)
	s.mu.Unlock()
}

// benchApply installs b.N rows of batches mk makes into a store of rows
// rows first, and reports the thread's CPU time a row.
func benchApply(b *testing.B, prefix []byte, rows int64, mk func(prefix []byte, first int64) *batch) {
	s := newStore("", Config{})
	for i := range rows / 100 {
		installNext(s, mk(prefix, 100*i))
	}
	batches := make([]*batch, (b.N+99)/100)
	for i := range batches {
		batches[i] = mk(prefix, rows+100*int64(i))
		// As the committing client does, before the lock.
		batches[i].pre = s.prebuild(batches[i], nil)
	}
	// The thread's CPU time, beside the wall time: other processes'
	// load on the machine does not inflate it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	b.ResetTimer()
	before, _ := cputime.Thread()
	for _, bt := range batches {
		installNext(s, bt)
	}
	if after, ok := cputime.Thread(); ok {
		b.ReportMetric(float64(after-before)/float64(b.N), "thread-cpu-ns/op")
	}
}
