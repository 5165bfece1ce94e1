package embedded

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// watchModelVal is a key's value at a version: present or not.
type watchModelVal struct {
	ver     uint64
	val     string
	present bool
}

// watchModelRun is one watch a watcher armed: its key, the value it
// compares against, and s.version once its transaction's commit returned
// (at or after the version settleWatches compared at).
type watchModelRun struct {
	key     string
	val     string
	present bool
	after   uint64
	fired   bool
}

// Randomized, fixed seeds: writers commit unique values (never one a key
// had before), deletions and range clears (tombstones and deletions per
// key) to a file database, whose concurrent commits are staged while their
// group's fsync runs and published several versions in one hold; watchers
// arm watches and wait. Two invariants, checked against the writers'
// history by version:
//
//   - no early wake-up: a watch on a present value that fired finds the
//     key changed when it reads at once (values never come back);
//   - no lost wake-up: once every commit returned, a watch that has not
//     fired saw no version after its arming change its key.
//
// The same on a memory database, which stages nothing.
func TestWatchModel(t *testing.T) {
	t.Parallel()
	for _, file := range []bool{true, false} {
		for seed := range uint64(3) {
			t.Run(fmt.Sprint("file=", file, "/seed=", seed), func(t *testing.T) {
				t.Parallel()
				db := openMemoryOrFile(t, file)
				t.Cleanup(func() { _ = db.Close() })
				watchModel(t, db, seed)
			})
		}
	}
}

func watchModel(t *testing.T, db *DB, seed uint64) {
	ctx := context.Background()
	db.s.tombMin, db.s.tombWait = 4, 0

	const nkeys, writers, commits, watchers = 10, 3, 25, 3
	key := func(i int) string { return fmt.Sprintf("k/%02d", i) }
	prefix := kv.PrefixRange([]byte("k/"))

	var histMu sync.Mutex
	hist := map[string][]watchModelVal{} // by key, in version order once sorted
	var uniq atomic.Int64

	// The writers start once a watch is armed (or a watcher gave up):
	// on a loaded machine they could otherwise all commit before any
	// watcher ran, and no watch would see a change.
	armed := make(chan struct{})
	var armOnce sync.Once
	arm := func() { armOnce.Do(func() { close(armed) }) }
	var wg sync.WaitGroup
	writerErrs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-armed
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for range commits {
				tr, err := db.CreateTransaction(ctx)
				if err != nil {
					writerErrs <- err
					return
				}
				changes := map[string]watchModelVal{}
				switch rng.IntN(6) {
				case 0: // a range clear, some keys set again
					tr.ClearRange(prefix)
					for i := range nkeys {
						changes[key(i)] = watchModelVal{}
					}
					for range rng.IntN(3) {
						k := key(rng.IntN(nkeys))
						v := fmt.Sprint("v", uniq.Add(1))
						tr.Set([]byte(k), []byte(v))
						changes[k] = watchModelVal{val: v, present: true}
					}
				case 1: // a deletion
					k := key(rng.IntN(nkeys))
					tr.Clear([]byte(k))
					changes[k] = watchModelVal{}
				default:
					for range 1 + rng.IntN(4) {
						k := key(rng.IntN(nkeys))
						v := fmt.Sprint("v", uniq.Add(1))
						tr.Set([]byte(k), []byte(v))
						changes[k] = watchModelVal{val: v, present: true}
					}
				}
				if rng.IntN(2) == 0 {
					setFiller(tr, stageMin) // staged while its fsync runs
				}
				if err := tr.Commit(); err != nil {
					writerErrs <- err
					return
				}
				ver := tr.(*txn).cver
				histMu.Lock()
				for k, c := range changes {
					c.ver = ver
					hist[k] = append(hist[k], c)
				}
				histMu.Unlock()
			}
		}()
	}
	writersDone := make(chan struct{})
	go func() { wg.Wait(); close(writersDone) }()

	var runsMu sync.Mutex
	var runs []*watchModelRun
	var wwg sync.WaitGroup
	watchErrs := make(chan error, watchers)
	for w := range watchers {
		wwg.Add(1)
		go func() {
			defer wwg.Done()
			defer arm()
			rng := rand.New(rand.NewPCG(seed, 100+uint64(w)))
			for {
				k := key(rng.IntN(nkeys))
				tr, err := db.CreateTransaction(ctx)
				if err != nil {
					watchErrs <- err
					return
				}
				v, err := tr.Get([]byte(k))
				if err != nil {
					watchErrs <- err
					return
				}
				wt := tr.Watch([]byte(k))
				if err := tr.Commit(); err != nil {
					watchErrs <- err
					return
				}
				run := &watchModelRun{key: k, val: string(v), present: v != nil, after: db.s.version.Load()}
				runsMu.Lock()
				runs = append(runs, run)
				runsMu.Unlock()
				arm()
				select {
				case <-wt.Done():
				case <-writersDone:
					select {
					case <-wt.Done():
					default:
						wt.Cancel()
						return
					}
				}
				if err := wt.Err(); err != nil {
					watchErrs <- err
					return
				}
				run.fired = true
				if !run.present {
					continue
				}
				// Read at once, at the newest readable version.
				var now []byte
				if err := db.ReadTransact(ctx, func(rt kv.ReadTransaction) error {
					now, err = rt.Get([]byte(k))
					return err
				}); err != nil {
					watchErrs <- err
					return
				}
				if now != nil && string(now) == run.val {
					watchErrs <- fmt.Errorf("a watch on %s fired before its change was readable: it still reads %q", k, now)
					return
				}
			}
		}()
	}
	wwg.Wait()
	<-writersDone
	close(writerErrs)
	close(watchErrs)
	for err := range writerErrs {
		require.NoError(t, err)
	}
	for err := range watchErrs {
		require.NoError(t, err)
	}
	for k := range hist {
		slices.SortFunc(hist[k], func(a, b watchModelVal) int { return int(a.ver) - int(b.ver) })
	}
	fired := 0
	for _, run := range runs {
		if run.fired {
			fired++
			continue
		}
		for _, c := range hist[run.key] {
			if c.ver > run.after && (c.present != run.present || c.present && c.val != run.val) {
				t.Fatalf("lost wake-up: a watch on %s armed by version %d (value %q, present %v) never fired, though version %d changed it to %q (present %v)",
					run.key, run.after, run.val, run.present, c.ver, c.val, c.present)
			}
		}
	}
	require.NotZero(t, fired)
	t.Logf("%d watches, %d fired", len(runs), fired)
}
