package embedded_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
)

// TestChunkedInstallModel checks reads between the chunks of large commits
// (mvcc.go, installChunk) against a model: a reader that starts while a
// commit is half installed, and readers at older versions, see none of it,
// through Get, GetMany, First and range reads in both directions, limited
// or not; and the collector may run between chunks. Once the commit
// returns, a new reader sees all of it. The commits set, clear (moving keys
// to the deleted keys mid-commit), add to and range-clear keys, some as
// tombstones.
func TestChunkedInstallModel(t *testing.T) {
	t.Parallel()
	eachModelRun(t, 4, chunkedInstall)
}

func chunkedInstall(t *testing.T, seed uint64, tombs bool) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 11))
	// A stopped clock: the old readers live through many checks, which
	// take longer than the 5-second limit under -race on a busy machine.
	start := time.Now()
	db := embedded.Open("", embedded.Config{Clock: func() time.Time { return start }})
	defer db.Close()
	if tombs {
		embedded.SetTombMinKeys(db, 1)
	}
	const keys = 300
	model := map[string]string{}
	var readers oldReaders
	defer func() { readers.cancel() }()
	var before map[string]string // the model before the commit being installed
	chunks := 0
	embedded.SetChunkHook(db, func() {
		chunks++
		// On a goroutine of its own, so that a failure ends it and
		// not the commit's leader, in the middle of the install.
		done := make(chan struct{})
		go func() {
			defer close(done)
			fresh, err := db.CreateTransaction(ctx)
			require.NoError(t, err)
			defer fresh.Cancel()
			checkModel(t, rng, fresh, before, keys, 40)
			readers.check(t, rng, keys, 40)
			embedded.Collect(db)
		}()
		<-done
	})
	for step := range 30 {
		ops := randomOps(rng, 2*embedded.InstallChunk+rng.IntN(4*embedded.InstallChunk), keys)
		before = maps.Clone(model)
		require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
			applyOps(tr, ops, step)
			return nil
		}))
		modelApply(model, ops, step)
		fresh, err := db.CreateTransaction(ctx)
		require.NoError(t, err)
		checkModel(t, rng, fresh, model, keys, 40)
		fresh.Cancel()
		readers.churn(t, rng, db, model, 3)
	}
	require.GreaterOrEqual(t, chunks, 30, "the commits were installed in chunks")
}

// TestChunkedInstallConcurrent runs large commits from several clients
// while others read: each commit writes a whole generation of its
// client's keys, so a reader that saw part of a commit installed (a chunk
// without the rest) finds keys of two generations. Run with -race.
func TestChunkedInstallConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	const writers, keysPer, commits = 3, 3 * embedded.InstallChunk, 20
	key := func(w, i int) []byte { return []byte(fmt.Sprintf("w%d/%04d", w, i)) }
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for gen := range commits {
				require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
					for i := range keysPer {
						if gen%4 == 3 && i%2 == 1 {
							tr.Clear(key(w, i)) // a generation of half the keys
							continue
						}
						tr.Set(key(w, i), []byte(fmt.Sprint(gen)))
					}
					return nil
				}))
			}
		}()
	}
	var stop atomic.Bool
	var readers sync.WaitGroup
	var reads atomic.Int64
	for r := range 3 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for !stop.Load() {
				require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
					for w := range writers {
						rg := kv.Range{Begin: key(w, 0), End: key(w, keysPer)}
						got, err := kv.Collect(tr.GetRange(rg, kv.RangeOptions{Reverse: r == 1}))
						if err != nil {
							return err
						}
						gens := map[string]int{}
						for _, e := range got {
							gens[string(e.Value)]++
						}
						require.LessOrEqual(t, len(gens), 1, "writer %d: keys of several generations: %v", w, gens)
						for g, n := range gens {
							var gen int
							_, err := fmt.Sscan(g, &gen)
							require.NoError(t, err)
							want := keysPer
							if gen%4 == 3 {
								want = keysPer / 2
							}
							require.Equal(t, want, n, "writer %d generation %s", w, g)
						}
					}
					return nil
				}))
				reads.Add(1)
			}
		}()
	}
	wg.Wait()
	stop.Store(true)
	readers.Wait()
	require.Positive(t, reads.Load())
}
