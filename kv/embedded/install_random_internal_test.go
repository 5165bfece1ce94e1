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

// randomBatch is queueBatch with the resources of a `fdbqueue bench`
// push: each row a random priority 0..9, cpu 1..8 and mem 1..32, so that
// a batch's fit-index entries land in ~100 cells and shapes across the
// tree, as realistic INSERTs do (queueBatch's follow the id).
func randomBatch(rng *rand.Rand, prefix []byte, first int64) *batch {
	key := func(e ...any) []byte {
		k, err := tuple.Tuple(e).AppendPack(append([]byte{}, prefix...))
		if err != nil {
			panic(err)
		}
		return k
	}
	payload := make([]byte, 64)
	b := &batch{}
	for id := first; id < first+100; id++ {
		prio, cpu, mem := rng.Int64N(10), 1+rng.Int64N(8), 1+rng.Int64N(32)
		b.writes = append(b.writes,
			&write{key: key(0, prio, id, id), base: baseSet, val: payload},
			&write{key: key(1, id), base: baseSet, val: tuple.Tuple{prio, id}.Pack()},
			&write{key: key(3, cpu/2, mem/4, prio, id, id), base: baseSet, val: tuple.Tuple{cpu, mem}.Pack()},
			&write{key: key(5, cpu, mem, prio, id, id), base: baseSet, val: nil})
	}
	slices.SortFunc(b.writes, func(x, y *write) int { return bytes.Compare(x.key, y.key) })
	return b
}

// BenchmarkApplyRandom is BenchmarkApplyBatch with randomBatch's rows,
// into a store of 300,000 rows (1.2M keys) under the prefix of a table,
// P = ("fdbqueue", "t", 1): the tree the realistic 100-row INSERTs of a
// `fdbqueue bench` push install into. ns/op and thread-cpu-ns/op are per
// row (4 keys).
func BenchmarkApplyRandom(b *testing.B) {
	s := newStore("", Config{})
	prefix := tuple.Tuple{"fdbqueue", "t", 1}.Pack()
	rng := rand.New(rand.NewPCG(1, 2))
	install := func(bt *batch) {
		s.nextVer++
		s.mu.Lock()
		s.installLocked(time.Time{}, s.nextVer, bt)
		s.mu.Unlock()
	}
	const rows = 300_000
	for i := range int64(rows / 100) {
		install(randomBatch(rng, prefix, 100*i))
	}
	batches := make([]*batch, (b.N+99)/100)
	for i := range batches {
		batches[i] = randomBatch(rng, prefix, rows+100*int64(i))
		batches[i].pre = s.prebuild(batches[i])
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	b.ResetTimer()
	before, _ := cputime.Thread()
	for _, bt := range batches {
		install(bt)
	}
	if after, ok := cputime.Thread(); ok {
		b.ReportMetric(float64(after-before)/float64(b.N), "thread-cpu-ns/op")
	}
}
