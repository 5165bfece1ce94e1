package embedded_test

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
)

// inHook runs f on a goroutine of its own, from a chunk hook, and waits for
// it: a failure ends that goroutine, not the commit's leader between two
// chunks.
func inHook(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	<-done
}

// TestChunkedInstallWatches arms watches between the chunks of a large
// commit, on keys of its first chunk (installed), of its later chunks (not
// yet), on keys its range clear removed (a tombstone, or deletions), and on
// a key it leaves alone. The commit is not readable yet, so each watch
// compares against the value before it; once the commit returns, every
// watch on a key it changed has fired (a watch may fire early, between
// chunks, never not at all), and the other has not.
func TestChunkedInstallWatches(t *testing.T) {
	t.Parallel()
	for _, tombs := range []bool{false, true} {
		t.Run(fmt.Sprintf("tombstones=%v", tombs), func(t *testing.T) {
			t.Parallel()
			chunkedWatches(t, tombs)
		})
	}
}

func chunkedWatches(t *testing.T, tombs bool) {
	ctx := context.Background()
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	if tombs {
		embedded.SetTombMinKeys(db, 1)
	}
	n := 3 * embedded.InstallChunk
	ck := func(i int) []byte { return []byte(fmt.Sprintf("c/%04d", i)) }
	tk := func(i int) []byte { return []byte(fmt.Sprintf("t/%02d", i)) }
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		for i := range n {
			tr.Set(ck(i), []byte("v0"))
		}
		for i := range 10 {
			tr.Set(tk(i), []byte("t0"))
		}
		tr.Set([]byte("u"), []byte("u0"))
		return nil
	}))
	type armed struct {
		key   string
		w     kv.Watch
		fires bool
	}
	var watches []armed
	pauses := 0
	embedded.SetChunkHook(db, func() {
		pauses++
		inHook(func() {
			for _, k := range []struct {
				key, old string
				fires    bool
			}{
				{"c/0000", "v0", true},                              // the first chunk's
				{string(ck(embedded.InstallChunk + 1)), "v0", true}, // the second's
				{string(ck(n - 1)), "v0", true},                     // the last chunk's
				{"t/05", "t0", true},                                // range-cleared first
				{"u", "u0", false},                                  // untouched
			} {
				tr, err := db.CreateTransaction(ctx)
				require.NoError(t, err)
				v, err := tr.Get([]byte(k.key))
				require.NoError(t, err)
				require.Equal(t, k.old, string(v), "%s read between chunks", k.key)
				w := tr.Watch([]byte(k.key))
				require.NoError(t, tr.Commit())
				watches = append(watches, armed{k.key, w, k.fires})
			}
		})
	})
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		tr.ClearRange(kv.Range{Begin: []byte("t/"), End: []byte("t0")})
		for i := range n {
			tr.Set(ck(i), []byte("v1"))
		}
		return nil
	}))
	embedded.SetChunkHook(db, nil)
	require.Equal(t, 2, pauses)
	require.Len(t, watches, 2*5)
	for _, a := range watches {
		select {
		case <-a.w.Done():
			require.True(t, a.fires, "the watch on %s fired, its key unchanged", a.key)
			require.NoError(t, a.w.Err(), a.key)
		default:
			require.False(t, a.fires, "the watch on %s, armed between chunks, did not fire once the commit that changed its key returned", a.key)
			a.w.Cancel()
		}
	}
}

// TestChunkedInstallReaderLivesOn starts transactions between the chunks
// of a large commit and keeps them past it: a reader keeps reading the
// database as before the commit while later commits land and the
// collector runs; one that read a range the commit writes conflicts with
// it at commit, and one that read elsewhere commits.
func TestChunkedInstallReaderLivesOn(t *testing.T) {
	t.Parallel()
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			readerLivesOn(t, seed)
		})
	}
}

func readerLivesOn(t *testing.T, seed uint64) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 13))
	start := time.Now()
	db := embedded.Open("", embedded.Config{Clock: func() time.Time { return start }})
	defer db.Close()
	const keys = 300
	model := map[string]string{}
	for step := range 3 {
		ops := randomOps(rng, 200, keys)
		require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
			applyOps(tr, ops, step)
			return nil
		}))
		modelApply(model, ops, step)
	}
	before := maps.Clone(model)
	var reader, wide, narrow kv.Transaction
	embedded.SetChunkHook(db, func() {
		if reader != nil {
			return
		}
		inHook(func() {
			var err error
			reader, err = db.CreateTransaction(ctx)
			require.NoError(t, err)
			checkModel(t, rng, reader, before, keys, 40)
			wide, err = db.CreateTransaction(ctx)
			require.NoError(t, err)
			_, err = kv.Collect(wide.GetRange(kv.Range{Begin: modelKey(0), End: modelKey(keys)}, kv.RangeOptions{}))
			require.NoError(t, err)
			wide.Set([]byte("wide"), []byte("1"))
			narrow, err = db.CreateTransaction(ctx)
			require.NoError(t, err)
			_, err = narrow.Get([]byte("elsewhere"))
			require.NoError(t, err)
			narrow.Set([]byte("narrow"), []byte("1"))
		})
	})
	ops := randomOps(rng, 4*embedded.InstallChunk, keys)
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		applyOps(tr, ops, 3)
		return nil
	}))
	modelApply(model, ops, 3)
	embedded.SetChunkHook(db, nil)
	require.NotNil(t, reader, "the commit was installed in chunks")
	defer reader.Cancel()
	require.ErrorIs(t, wide.Commit(), kv.ErrNotCommitted, "a read between chunks of keys the commit writes")
	require.NoError(t, narrow.Commit())
	for step := 4; step < 10; step++ {
		ops := randomOps(rng, 1+rng.IntN(2*embedded.InstallChunk), keys)
		require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
			applyOps(tr, ops, step)
			return nil
		}))
		modelApply(model, ops, step)
		embedded.Collect(db)
		checkModel(t, rng, reader, before, keys, 40)
		fresh, err := db.CreateTransaction(ctx)
		require.NoError(t, err)
		checkModel(t, rng, fresh, model, keys, 40)
		fresh.Cancel()
	}
}

// TestChunkedInstallTombsBetween removes the keys under older tombstones
// between the chunks of a commit (tombSlice, as the tombstone worker and
// the commits that made them do, the store's lock let go), while the
// commit writes keys those tombstones cover and makes tombstones of its
// own: readers between chunks see the database as before the commit, and
// after it, as after.
func TestChunkedInstallTombsBetween(t *testing.T) {
	t.Parallel()
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			tombsBetween(t, seed)
		})
	}
}

func tombsBetween(t *testing.T, seed uint64) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 17))
	start := time.Now()
	db := embedded.Open("", embedded.Config{Clock: func() time.Time { return start }})
	defer db.Close()
	embedded.SetTombMinKeys(db, 1)
	const keys = 300
	model := map[string]string{}
	var before map[string]string // nil but while the commit checked is installed
	var holder kv.Transaction    // keeps the last tombstones' keys in the tree
	pauses, collected := 0, 0
	embedded.SetChunkHook(db, func() {
		if before == nil {
			return // the fill
		}
		pauses++
		inHook(func() {
			if holder != nil {
				holder.Cancel()
				holder = nil
			}
			n := embedded.Tombs(db)
			embedded.CollectTombs(db)
			if embedded.Tombs(db) < n {
				collected++
			}
			fresh, err := db.CreateTransaction(ctx)
			require.NoError(t, err)
			defer fresh.Cancel()
			checkModel(t, rng, fresh, before, keys, 40)
		})
	})
	commit := func(ops []modelOp, step int) {
		require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
			applyOps(tr, ops, step)
			return nil
		}))
		modelApply(model, ops, step)
	}
	for step := 0; step < 60; step += 3 {
		// Fill the keys, then clear wide ranges of them (tombstones)
		// while a reader keeps them in the tree.
		var fill []modelOp
		for i := range keys {
			if rng.IntN(2) == 0 {
				fill = append(fill, modelOp{kind: 0, i: i})
			}
		}
		commit(fill, step)
		var err error
		holder, err = db.CreateTransaction(ctx)
		require.NoError(t, err)
		_, err = holder.GetReadVersion()
		require.NoError(t, err)
		var clears []modelOp
		for range 3 {
			i := rng.IntN(keys)
			clears = append(clears, modelOp{kind: 4, i: i, j: min(keys, i+20+rng.IntN(60))})
		}
		commit(clears, step)
		// Some keys back under the tombstones, before the commit.
		var back []modelOp
		for _, c := range clears {
			for i := c.i; i < c.j; i += 1 + rng.IntN(3) {
				back = append(back, modelOp{kind: 1, i: i})
			}
		}
		commit(back[:min(len(back), embedded.InstallChunk-1)], step+1)
		before = maps.Clone(model)
		commit(randomOps(rng, 2*embedded.InstallChunk+rng.IntN(2*embedded.InstallChunk), keys), step+2)
		before = nil
		if holder != nil {
			holder.Cancel()
			holder = nil
		}
		fresh, err := db.CreateTransaction(ctx)
		require.NoError(t, err)
		checkModel(t, rng, fresh, model, keys, 40)
		fresh.Cancel()
	}
	require.GreaterOrEqual(t, pauses, 20)
	require.Positive(t, collected, "tombstones were collected between chunks")
}

// TestChunkedInstallWaiters has consumers wait for rows (FOR POP WAIT)
// while 100-row INSERTs are installed in chunks: the push signal's watch
// may fire between two chunks, before the rows are readable, and the woken
// consumer, finding nothing at the version it reads, must wait again and
// be woken again once they are (never sleep through the push). Every row
// is popped once.
func TestChunkedInstallWaiters(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	name := fmt.Sprintf("chunkwait%d", rand.Uint64())
	store := embedded.Open(name, embedded.Config{})
	defer store.Close()
	db, err := sql.Open("fdbqueue", "memory:"+name)
	require.NoError(t, err)
	defer db.Close()
	_, err = db.ExecContext(ctx, `CREATE TABLE waited (priority INT NOT NULL, ref INT UNIQUE)`)
	require.NoError(t, err)
	const consumers, inserts, rows = 3, 6, 100
	var popped atomic.Int64
	var wg sync.WaitGroup
	// consume pops with FOR POP WAIT, once or until every row is popped.
	consume := func(once bool) {
		defer wg.Done()
		defer func() {
			if t.Failed() {
				cancel() // and the INSERTs wait for no consumer
			}
		}()
		for popped.Load() < inserts*rows {
			got, err := db.QueryContext(ctx, "SELECT id FROM waited LIMIT 1000 FOR POP WAIT 60")
			if ctx.Err() != nil {
				return
			}
			require.NoError(t, err)
			n := 0
			for got.Next() {
				n++
			}
			require.NoError(t, got.Close())
			if popped.Add(int64(n)) >= inserts*rows {
				cancel() // the other consumers wait no more
			}
			if once {
				return
			}
		}
	}
	var pauses atomic.Int64
	embedded.SetChunkHook(store, func() {
		pauses.Add(1)
		// A consumer that starts between two chunks, after the one of
		// the push signal (not readable yet), finds nothing and arms
		// its watch then.
		wg.Add(1)
		go consume(true)
		// Let it run between the chunks.
		for range 50 {
			runtime.Gosched()
		}
	})
	for range consumers {
		wg.Add(1)
		go consume(false)
	}
	// The unique index's keys sort after the push signal's: the signal is
	// installed in an earlier chunk than the last.
	insert := "INSERT INTO waited (priority, ref) VALUES " +
		strings.TrimSuffix(strings.Repeat("(?, ?), ", rows), ", ")
	for i := range inserts {
		// Every consumer waits: the INSERT's push signal wakes them.
		for embedded.ArmedWatches(store) < consumers && ctx.Err() == nil {
			runtime.Gosched()
		}
		args := make([]any, 0, 2*rows)
		for r := range rows {
			args = append(args, (i+r)%10, i*rows+r)
		}
		_, err := db.ExecContext(context.Background(), insert, args...)
		require.NoError(t, err)
	}
	wg.Wait()
	require.Equal(t, int64(inserts*rows), popped.Load())
	require.Positive(t, pauses.Load(), "the INSERTs were installed in chunks")
}

// TestChunkedInstallMetadataVersion bumps the metadata version in a commit
// installed in chunks: a transaction that starts between two chunks reads
// the metadata version before it, with the keys before it, and conflicts
// with it at commit; once it returns, a new one reads the new metadata
// version.
func TestChunkedInstallMetadataVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	n := 3 * embedded.InstallChunk
	ck := func(i int) []byte { return []byte(fmt.Sprintf("m/%04d", i)) }
	mdv := func() []byte {
		var v []byte
		require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
			var err error
			v, err = kv.MetadataVersion(tr)
			return err
		}))
		return v
	}
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		kv.BumpMetadataVersion(tr)
		for i := range n {
			tr.Set(ck(i), []byte("v0"))
		}
		return nil
	}))
	old := mdv()
	require.NotNil(t, old)
	var between kv.Transaction
	embedded.SetChunkHook(db, func() {
		if between != nil {
			return
		}
		inHook(func() {
			tr, err := db.CreateTransaction(ctx)
			require.NoError(t, err)
			between = tr
			v, err := kv.MetadataVersion(tr)
			require.NoError(t, err)
			require.Equal(t, old, v, "the metadata version read between chunks")
			got, err := tr.Get(ck(0))
			require.NoError(t, err)
			require.Equal(t, "v0", string(got))
			tr.Set([]byte("other"), []byte("1"))
		})
	})
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		kv.BumpMetadataVersion(tr)
		for i := range n {
			tr.Set(ck(i), []byte("v1"))
		}
		return nil
	}))
	embedded.SetChunkHook(db, nil)
	require.NotNil(t, between, "the commit was installed in chunks")
	require.ErrorIs(t, between.Commit(), kv.ErrNotCommitted, "a read of the metadata version between chunks")
	now := mdv()
	require.Greater(t, string(now), string(old))
}

// TestChunkedInstallConcurrentTombs is TestChunkedInstallConcurrent with
// tombstones: each commit clears its client's whole range (a tombstone)
// and writes a generation of keys in it, while other clients read and
// remove the keys under older tombstones (tombSlice) between the chunks.
// A reader finds one generation, whole. Run with -race.
func TestChunkedInstallConcurrentTombs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	embedded.SetTombMinKeys(db, 1)
	const writers, keysPer, commits = 2, 3 * embedded.InstallChunk, 15
	key := func(w, i int) []byte { return []byte(fmt.Sprintf("w%d/%04d", w, i)) }
	span := func(w int) kv.Range { return kv.Range{Begin: key(w, 0), End: key(w, keysPer)} }
	// want is how many keys generation gen holds: every other one of the
	// upper half of them in odd generations.
	want := func(gen int) int {
		if gen%2 == 1 {
			return keysPer - keysPer/4
		}
		return keysPer
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for gen := range commits {
				require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
					tr.ClearRange(span(w))
					for i := range keysPer {
						if gen%2 == 1 && i >= keysPer/2 && i%2 == 1 {
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
	var others sync.WaitGroup
	others.Add(1)
	go func() {
		defer others.Done()
		for !stop.Load() {
			embedded.CollectTombs(db)
			runtime.Gosched()
		}
	}()
	var reads atomic.Int64
	for r := range 2 {
		others.Add(1)
		go func() {
			defer others.Done()
			for !stop.Load() {
				require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
					for w := range writers {
						got, err := kv.Collect(tr.GetRange(span(w), kv.RangeOptions{Reverse: r == 1}))
						if err != nil {
							return err
						}
						if len(got) == 0 {
							continue // before the first commit
						}
						gen := string(got[0].Value)
						for _, e := range got {
							require.Equal(t, gen, string(e.Value), "writer %d: keys of two generations", w)
						}
						var g int
						_, err = fmt.Sscan(gen, &g)
						require.NoError(t, err)
						require.Equal(t, want(g), len(got), "writer %d generation %d", w, g)
						// A key the odd generations skip, read alone.
						v, err := tr.Get(key(w, keysPer-1))
						require.NoError(t, err)
						if g%2 == 1 {
							require.Nil(t, v, "writer %d generation %d", w, g)
						} else {
							require.Equal(t, gen, string(v), "writer %d", w)
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
	others.Wait()
	require.Positive(t, reads.Load())
}

// TestChunkedInstallFarBehind reads between the chunks of a large commit
// from a reader more than a hundred commits old, whose range reads take
// the keys deleted since from the deleted keys' tree rather than from the
// commits since (deadSinceLocked): the commit's deletions so far are among
// them.
func TestChunkedInstallFarBehind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 19))
	start := time.Now()
	db := embedded.Open("", embedded.Config{Clock: func() time.Time { return start }})
	defer db.Close()
	const keys = 300
	model := map[string]string{}
	commit := func(ops []modelOp, step int) {
		require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
			applyOps(tr, ops, step)
			return nil
		}))
		modelApply(model, ops, step)
	}
	var fill []modelOp
	for i := range keys {
		fill = append(fill, modelOp{kind: 0, i: i})
	}
	commit(fill, 0)
	old, err := db.CreateTransaction(ctx)
	require.NoError(t, err)
	defer old.Cancel()
	_, err = old.GetReadVersion()
	require.NoError(t, err)
	oldWant := maps.Clone(model)
	for step := 1; step <= 130; step++ {
		commit(randomOps(rng, 1+rng.IntN(4), keys), step)
	}
	before := maps.Clone(model)
	checked := 0
	embedded.SetChunkHook(db, func() {
		checked++
		inHook(func() {
			checkModel(t, rng, old, oldWant, keys, 40)
			fresh, err := db.CreateTransaction(ctx)
			require.NoError(t, err)
			defer fresh.Cancel()
			checkModel(t, rng, fresh, before, keys, 40)
		})
	})
	var clears []modelOp
	for i := range keys {
		if rng.IntN(3) > 0 {
			clears = append(clears, modelOp{kind: 2, i: i})
		}
	}
	commit(clears, 131)
	embedded.SetChunkHook(db, nil)
	require.Positive(t, checked)
	checkModel(t, rng, old, oldWant, keys, 40)
}
