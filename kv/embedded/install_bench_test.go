package embedded_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fdbqueue/fdbqueue/internal/cputime"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// BenchmarkInstall100 commits 100-row batches shaped like a 100-row INSERT
// into a queue (queues/layout.go), from 1 and 8 goroutines, on memory and
// on a file database (sync=full), into a store filled with 100,000 rows
// first: each row writes its item P (0, priority, seq, id), its id index P
// (1, id) and its fit-index entry P (3, cpu, mem, priority, seq, id) under
// a packed tuple prefix P, and the batch adds to the count P (2). Keys
// arrive sorted per tag. ns/op is per row.
func BenchmarkInstall100(b *testing.B) {
	for _, mode := range []string{"memory", "file"} {
		for _, clients := range []int{1, 8} {
			b.Run(fmt.Sprintf("%s/clients=%d", mode, clients), func(b *testing.B) {
				var db *embedded.DB
				if mode == "memory" {
					db = embedded.Open("", embedded.Config{})
				} else {
					var err error
					db, err = embedded.OpenFile(b.TempDir(), embedded.FileConfig{})
					if err != nil {
						b.Fatal(err)
					}
				}
				defer db.Close()
				prefix := tuple.Tuple{"fdbqueue", "bench_tasks"}.Pack()
				var ids atomic.Int64
				payload := make([]byte, 64)
				push := func() {
					first := ids.Add(100) - 100
					if err := db.Transact(context.Background(), func(tr kv.Transaction) error {
						for id := first; id < first+100; id++ {
							prio, cpu, mem := id%10, 1+id%8, 1+id%32
							tr.Set(packed(prefix, 0, prio, id, id), payload)
							tr.Set(packed(prefix, 1, id), tuple.Tuple{prio, id}.Pack())
							tr.Set(packed(prefix, 3, cpu, mem, prio, id, id), tuple.Tuple{cpu, mem}.Pack())
						}
						tr.Add(packed(prefix, 2), 100)
						return nil
					}); err != nil {
						b.Error(err)
					}
				}
				for range 1000 {
					push()
				}
				b.ReportAllocs()
				b.ResetTimer()
				clock := startCPU()
				runOps((b.N+99)/100, clients, push)
				clock.report(b)
			})
		}
	}
}

// packed returns prefix followed by the packed tuple of elems, in a new slice.
func packed(prefix []byte, elems ...any) []byte {
	k, err := tuple.Tuple(elems).AppendPack(append([]byte{}, prefix...))
	if err != nil {
		panic(err)
	}
	return k
}

// cpuClock reads the process's CPU time (user and system), which other
// processes' load on the machine does not inflate as it does wall time.
type cpuClock struct{ start time.Duration }

func startCPU() cpuClock {
	t, _ := cputime.Process()
	return cpuClock{t}
}

// report adds the CPU time per op (cpu-ns/op) to b's results.
func (c cpuClock) report(b *testing.B) {
	if t, ok := cputime.Process(); ok {
		b.ReportMetric(float64(t-c.start)/float64(b.N), "cpu-ns/op")
	}
}
