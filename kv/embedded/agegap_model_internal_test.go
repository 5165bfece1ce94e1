package embedded

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// yieldingClock advances by tick at every reading, and yields the core a
// few times after it: the goroutine that read it acts on the reading
// late, as one waiting for a core does. Readers reach the 5-second limit
// within a few thousand readings, and the collector's clock (a commit's)
// passes it between a reader's age check and its read.
type yieldingClock struct {
	n    atomic.Int64
	base time.Time
}

const yieldingTick = 2 * time.Millisecond

func (c *yieldingClock) Now() time.Time {
	n := c.n.Add(1)
	for range n % 4 {
		runtime.Gosched()
	}
	return c.base.Add(time.Duration(n) * yieldingTick)
}

// Randomized, fixed seeds: readers hold their read versions up to and
// past the 5-second limit (by a clock that yields), read a key each way
// the engine reads, while writers set it and a read-modify-write counter
// is incremented; every commit collects. A read that succeeds returns
// the value at its read version, and no increment is lost.
func TestAgeGapModel(t *testing.T) {
	t.Parallel()
	for seed := range uint64(2) {
		for _, readers := range []int{0, 2} {
			t.Run(fmt.Sprint("seed=", seed, "/readers=", readers), func(t *testing.T) {
				t.Parallel()
				ageGapModel(t, seed, readers)
			})
		}
	}
}

func ageGapModel(t *testing.T, seed uint64, readers int) {
	ctx := context.Background()
	clock := &yieldingClock{base: time.Now()}
	db := Open("", Config{Clock: clock.Now})
	t.Cleanup(func() { _ = db.Close() })
	k := []byte("k")
	r := kv.Range{Begin: k, End: []byte("l")}
	c := []byte("c")

	type obs struct {
		rv  uint64
		val string
		how string
	}
	var (
		mu       sync.Mutex
		vals     = map[uint64]string{} // k's value by the version that set it
		seen     []obs
		stop     atomic.Bool
		wg       sync.WaitGroup
		errs     = make(chan error, 8)
		adds     atomic.Int64
		tooOld   atomic.Int64
		setCount = 3000
	)
	fail := func(err error) {
		select {
		case errs <- err:
		default:
		}
		stop.Store(true)
	}
	wg.Add(1)
	go func() { // the writer of k
		defer wg.Done()
		defer stop.Store(true)
		for i := 1; i <= setCount && !stop.Load(); i++ {
			tr, err := db.CreateTransaction(ctx)
			if err != nil {
				fail(err)
				return
			}
			tr.Set(k, []byte(strconv.Itoa(i)))
			if err := tr.Commit(); err != nil {
				// Under the yielding clock, a loaded machine can age even
				// a blind write past the limit between its read version
				// and its commit: that one fails whole, as on
				// FoundationDB, and is written again.
				if kv.Code(err) == kv.CodeTransactionTooOld {
					i--
					continue
				}
				fail(err)
				return
			}
			mu.Lock()
			vals[tr.(*txn).cver] = strconv.Itoa(i)
			mu.Unlock()
		}
	}()
	for w := range 3 { // incrementers: each reads c, then sets it one more
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for !stop.Load() {
				err := db.Transact(ctx, func(tr kv.Transaction) error {
					v, err := tr.Get(c)
					if err != nil {
						return err
					}
					var n uint64
					if v != nil {
						n = binary.LittleEndian.Uint64(v)
					}
					// Commit just before the limit, by its clock, now and then.
					hold := time.Duration(rng.IntN(200)) * yieldingTick
					if rng.IntN(2) == 0 {
						hold = kv.MaxTransactionAge - time.Duration(rng.IntN(100))*yieldingTick
					}
					for start := clock.Now(); clock.Now().Sub(start) < hold; {
						runtime.Gosched()
					}
					tr.Set(c, binary.LittleEndian.AppendUint64(nil, n+1))
					return nil
				})
				if err != nil {
					fail(err)
					return
				}
				adds.Add(1)
			}
		}()
	}
	reads := []struct {
		how  string
		read func(kv.Transaction) ([]byte, error)
	}{
		{"Get", func(tr kv.Transaction) ([]byte, error) { return tr.Get(k) }},
		{"snapshot Get", func(tr kv.Transaction) ([]byte, error) { return tr.Snapshot().Get(k) }},
		{"GetMany", func(tr kv.Transaction) ([]byte, error) {
			vs, err := kv.GetMany(tr, [][]byte{k, c})
			if err != nil {
				return nil, err
			}
			return vs[0], nil
		}},
		{"GetRange", func(tr kv.Transaction) ([]byte, error) {
			kvs, err := kv.Collect(tr.GetRange(r, kv.RangeOptions{Reverse: true}))
			if err != nil || len(kvs) == 0 {
				return nil, err
			}
			return kvs[0].Value, nil
		}},
		{"GetRangeAsync", func(tr kv.Transaction) ([]byte, error) {
			kvs, err := kv.GetRangeAsync(tr, kv.Range{Begin: []byte("a"), End: r.End}, kv.RangeOptions{}).Get()
			for _, e := range kvs {
				if string(e.Key) == "k" {
					return e.Value, err
				}
			}
			return nil, err
		}},
		{"First", func(tr kv.Transaction) ([]byte, error) {
			e, _, err := kv.First(tr, r, false)
			return e.Value, err
		}},
	}
	for w := range readers { // holding their read version long
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 10+uint64(w)))
			for !stop.Load() {
				tr, err := db.CreateTransaction(ctx)
				if err != nil {
					fail(err)
					return
				}
				rv, err := tr.GetReadVersion()
				if err != nil {
					fail(err)
					return
				}
				for !stop.Load() {
					rd := reads[rng.IntN(len(reads))]
					v, err := rd.read(tr)
					if err != nil {
						if kv.Code(err) != kv.CodeTransactionTooOld {
							fail(fmt.Errorf("%s: %w", rd.how, err))
						}
						tooOld.Add(1)
						break
					}
					mu.Lock()
					seen = append(seen, obs{uint64(rv), string(v), rd.how})
					mu.Unlock()
					for range rng.IntN(50) {
						runtime.Gosched()
					}
				}
				tr.Cancel()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	vers := make([]uint64, 0, len(vals))
	for v := range vals {
		vers = append(vers, v)
	}
	sort.Slice(vers, func(i, j int) bool { return vers[i] < vers[j] })
	for _, o := range seen {
		i := sort.Search(len(vers), func(i int) bool { return vers[i] > o.rv })
		want := ""
		if i > 0 {
			want = vals[vers[i-1]]
		}
		require.Equal(t, want, o.val, "%s at read version %d", o.how, o.rv)
	}
	var n uint64
	require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		v, err := tr.Get(c)
		if v != nil {
			n = binary.LittleEndian.Uint64(v)
		}
		return err
	}))
	require.Equal(t, uint64(adds.Load()), n, "increments lost")
	t.Logf("%d reads checked, %d too old, %d increments, clock %v", len(seen), tooOld.Load(), n, time.Duration(clock.n.Load())*yieldingTick)
}
