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

// TestChunkedInstallModel checks reads between the chunks of large commits
// (mvcc.go, installChunk) against a model: a reader that starts while a
// commit is half installed, and readers at older versions, see none of it,
// through Get, GetMany, First and range reads in both directions, limited
// or not; and the collector may run between chunks. Once the commit
// returns, a new reader sees all of it. The commits set, clear (moving keys
// to s.dead mid-commit), add to and range-clear keys, some as tombstones.
func TestChunkedInstallModel(t *testing.T) {
	t.Parallel()
	for _, tombs := range []bool{false, true} {
		for seed := range uint64(4) {
			t.Run(fmt.Sprintf("tombstones=%v/%d", tombs, seed), func(t *testing.T) {
				t.Parallel()
				chunkedInstall(t, seed, tombs)
			})
		}
	}
}

func chunkedInstall(t *testing.T, seed uint64, tombs bool) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 11))
	db := Open("", Config{})
	defer db.Close()
	s := db.s
	if tombs {
		s.tombMin, s.tombWait = 1, 0
	}
	const keys = 300
	key := func(i int) []byte { return []byte(fmt.Sprintf("k%04d", i)) }
	model := map[string]string{}
	snapshot := func() map[string]string {
		c := make(map[string]string, len(model))
		for k, v := range model {
			c[k] = v
		}
		return c
	}
	check := func(tr kv.Transaction, want map[string]string) {
		all := make([][]byte, keys)
		for i := range all {
			all[i] = key(i)
		}
		rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		vals, err := kv.GetMany(tr, all)
		require.NoError(t, err)
		for i, k := range all {
			w, ok := want[string(k)]
			require.Equal(t, ok, vals[i] != nil, "key %s", k)
			require.Equal(t, w, string(vals[i]), "key %s", k)
		}
		for range 8 {
			k := key(rng.IntN(keys))
			v, err := tr.Get(k)
			require.NoError(t, err)
			require.Equal(t, want[string(k)], string(v), "key %s", k)
		}
		var sorted []kv.KeyValue
		for k, v := range want {
			sorted = append(sorted, kv.KeyValue{Key: []byte(k), Value: []byte(v)})
		}
		slices.SortFunc(sorted, func(a, b kv.KeyValue) int { return slices.Compare(a.Key, b.Key) })
		for range 4 {
			lo, hi := rng.IntN(keys+1), rng.IntN(keys+1)
			if lo > hi {
				lo, hi = hi, lo
			}
			rg := kv.Range{Begin: key(lo), End: key(hi)}
			var in []kv.KeyValue
			for _, e := range sorted {
				if string(e.Key) >= string(rg.Begin) && string(e.Key) < string(rg.End) {
					in = append(in, e)
				}
			}
			for _, reverse := range []bool{false, true} {
				exp := slices.Clone(in)
				if reverse {
					slices.Reverse(exp)
				}
				limit := 0
				if rng.IntN(2) == 0 {
					limit = 1 + rng.IntN(40)
					exp = exp[:min(limit, len(exp))]
				}
				got, err := kv.Collect(tr.GetRange(rg, kv.RangeOptions{Reverse: reverse, Limit: limit}))
				require.NoError(t, err)
				require.Equal(t, len(exp), len(got), "range %s..%s reverse %v limit %d", rg.Begin, rg.End, reverse, limit)
				for i := range exp {
					require.Equal(t, string(exp[i].Key), string(got[i].Key))
					require.Equal(t, string(exp[i].Value), string(got[i].Value))
				}
				first, ok, err := kv.First(tr, rg, reverse)
				require.NoError(t, err)
				require.Equal(t, len(exp) > 0, ok)
				if ok {
					require.Equal(t, string(exp[0].Key), string(first.Key))
				}
			}
		}
	}
	type reader struct {
		tr   kv.Transaction
		want map[string]string
	}
	var readers []reader
	defer func() {
		for _, r := range readers {
			r.tr.Cancel()
		}
	}()
	var before map[string]string // the model before the commit installing
	chunks := 0
	s.chunkHook = func() {
		chunks++
		// On a goroutine of its own, so that a failure ends it and
		// not the commit's leader, in the middle of the install.
		done := make(chan struct{})
		go func() {
			defer close(done)
			fresh, err := db.CreateTransaction(ctx)
			require.NoError(t, err)
			defer fresh.Cancel()
			check(fresh, before)
			for _, r := range readers {
				check(r.tr, r.want)
			}
			// The collector, as far as the readers let it.
			s.wlock()
			s.collectQueuedLocked(s.cfg.Clock())
			s.mu.Unlock()
		}()
		<-done
	}
	for step := range 30 {
		type op struct{ kind, i, j int }
		var ops []op
		for range 64 + rng.IntN(300) {
			i := rng.IntN(keys)
			ops = append(ops, op{rng.IntN(10), i, min(keys, i+1+rng.IntN(8))})
		}
		before = snapshot()
		require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
			for _, o := range ops {
				switch {
				case o.kind < 5:
					tr.Set(key(o.i), []byte(fmt.Sprintf("v%d.%d", step, o.i)))
				case o.kind < 8:
					tr.Clear(key(o.i))
				case o.kind < 9:
					tr.ClearRange(kv.Range{Begin: key(o.i), End: key(o.j)})
				default:
					tr.Add(key(o.i), 1)
				}
			}
			return nil
		}))
		for _, o := range ops {
			switch {
			case o.kind < 5:
				model[string(key(o.i))] = fmt.Sprintf("v%d.%d", step, o.i)
			case o.kind < 8:
				delete(model, string(key(o.i)))
			case o.kind < 9:
				for i := o.i; i < o.j; i++ {
					delete(model, string(key(i)))
				}
			default: // FoundationDB's ADD: little-endian, as long as the parameter
				v := []byte(model[string(key(o.i))])
				sum, carry := make([]byte, 8), 1
				for b := range sum {
					if b < len(v) {
						carry += int(v[b])
					}
					sum[b], carry = byte(carry), carry>>8
				}
				model[string(key(o.i))] = string(sum)
			}
		}
		fresh, err := db.CreateTransaction(ctx)
		require.NoError(t, err)
		check(fresh, model)
		fresh.Cancel()
		if rng.IntN(3) == 0 || len(readers) == 0 {
			tr, err := db.CreateTransaction(ctx)
			require.NoError(t, err)
			_, err = tr.GetReadVersion()
			require.NoError(t, err)
			readers = append(readers, reader{tr: tr, want: snapshot()})
		}
		if len(readers) > 3 || rng.IntN(5) == 0 {
			i := rng.IntN(len(readers))
			readers[i].tr.Cancel()
			readers = slices.Delete(readers, i, i+1)
		}
	}
	require.Greater(t, chunks, 30, "the commits were installed in chunks")
}

// TestChunkedInstallConcurrent runs large commits from several clients
// while others read: each commit writes a whole generation of its
// client's keys, so a reader that saw part of a commit installed (a chunk
// without the rest) finds keys of two generations. Run with -race.
func TestChunkedInstallConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := Open("", Config{})
	defer db.Close()
	const writers, keysPer, commits = 3, 3 * installChunk, 20
	key := func(w, i int) []byte { return []byte(fmt.Sprintf("w%d/%04d", w, i)) }
	var wg sync.WaitGroup
	var stop atomic.Bool
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
							want := keysPer
							var gen int
							fmt.Sscan(g, &gen)
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
