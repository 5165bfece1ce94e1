package fdbmodel_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/internal/fdbmodel"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
)

var bg = context.Background()

// open returns an empty modeled database over the embedded engine.
func open(t *testing.T, cfg fdbmodel.Config) *fdbmodel.DB {
	t.Helper()
	db := fdbmodel.Wrap(embedded.Open("", embedded.Config{}), cfg)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// transact runs fn in one transaction and returns what it cost.
func transact(t *testing.T, db kv.Database, fn func(tr kv.Transaction)) fdbmodel.Counts {
	t.Helper()
	var c fdbmodel.Collector
	require.NoError(t, db.Transact(fdbmodel.WithCollector(bg, &c), func(tr kv.Transaction) error {
		fn(tr)
		return nil
	}))
	return c.Counts()
}

// waits returns c's waits by kind, for comparing.
func waits(c fdbmodel.Counts) [3]int { return [3]int{c.GRV, c.Reads, c.Commits} }

func key(i int) []byte { return []byte(fmt.Sprintf("k%09d", i)) }

// hundred fills db with n rows of 100 bytes as a batch counts them: a
// 10-byte key, a 58-byte value and the row's 32 bytes.
func hundred(t *testing.T, db kv.Database, n int) {
	t.Helper()
	transact(t, db, func(tr kv.Transaction) {
		for i := range n {
			tr.Set(key(i), make([]byte, 58))
		}
	})
}

var ks = kv.Range{Begin: []byte("k"), End: []byte("l")}

func drain(t *testing.T, it kv.Iterator) int {
	t.Helper()
	n := 0
	for it.Next() {
		n++
	}
	require.NoError(t, it.Err())
	return n
}

func TestBlindWrite(t *testing.T) {
	t.Parallel()
	db := open(t, fdbmodel.Config{})
	c := transact(t, db, func(tr kv.Transaction) { tr.Set([]byte("x"), nil) })
	require.Equal(t, [3]int{1, 0, 1}, waits(c), "a read version at commit, then the commit")
	c = transact(t, db, func(tr kv.Transaction) { tr.Add([]byte("n"), 1) })
	require.Equal(t, [3]int{1, 0, 1}, waits(c), "an atomic operation is a blind write")
	c = transact(t, db, func(tr kv.Transaction) { require.NoError(t, tr.AddWriteConflictKey([]byte("w"))) })
	require.Equal(t, [3]int{1, 0, 1}, waits(c), "a write conflict key commits too")
}

func TestGetTwiceReadOnly(t *testing.T) {
	t.Parallel()
	db := open(t, fdbmodel.Config{})
	hundred(t, db, 10)
	c := transact(t, db, func(tr kv.Transaction) {
		_, err := tr.Get(key(1))
		require.NoError(t, err)
		_, err = tr.Snapshot().Get(key(1))
		require.NoError(t, err)
	})
	require.Equal(t, [3]int{1, 1, 0}, waits(c), "the second Get is the cache's; a read-only commit is free")
	require.Equal(t, 1, c.Gets)
	require.Equal(t, 1, c.Cached)
	require.Equal(t, 1, c.Attempts)
}

func TestGetManyAndWrittenKey(t *testing.T) {
	t.Parallel()
	db := open(t, fdbmodel.Config{})
	hundred(t, db, 10)
	c := transact(t, db, func(tr kv.Transaction) {
		tr.Set([]byte("y"), []byte("v"))
		v, err := tr.Get([]byte("y"))
		require.NoError(t, err)
		require.Equal(t, "v", string(v))
		vals, err := kv.GetMany(tr, [][]byte{key(2), key(3), []byte("y"), key(4)})
		require.NoError(t, err)
		require.Len(t, vals, 4)
	})
	require.Equal(t, [3]int{1, 1, 1}, waits(c))
	require.Equal(t, fdbmodel.Counts{Attempts: 1, GRV: 1, Reads: 1, Commits: 1, GetManys: 1, GetManyKeys: 3, Cached: 2, Modeled: c.Modeled}, c)
}

// TestRangeBatches: 1,000 rows of 100 bytes in the iterator mode take
// batches of 4,096, 6,144, 9,216, 13,824, 20,736, 31,104 and 46,656 bytes,
// each with the row that spends it: 41, 62, 93, 139, 208, 312 and the last
// 145 rows; a second read of them is the cache's.
func TestRangeBatches(t *testing.T) {
	t.Parallel()
	db := open(t, fdbmodel.Config{})
	hundred(t, db, 1000)
	c := transact(t, db, func(tr kv.Transaction) {
		require.Equal(t, []int{41, 62, 93, 139, 208, 312, 145}, fdbmodel.BatchSizes(tr.GetRange(ks, kv.RangeOptions{})))
		require.Equal(t, 10, drain(t, tr.GetRange(ks, kv.RangeOptions{Limit: 10})))
		require.Equal(t, 1000, drain(t, tr.Snapshot().GetRange(ks, kv.RangeOptions{Reverse: true})))
		_, err := tr.Get(key(500))
		require.NoError(t, err)
	})
	require.Equal(t, [3]int{1, 7, 0}, waits(c))
	require.Equal(t, 7, c.Batches)
	require.Equal(t, 1+7+1, c.Cached, "the limit-10 read's batch, the reverse read's 7, the Get")
}

func TestFirstIsOneRead(t *testing.T) {
	t.Parallel()
	db := open(t, fdbmodel.Config{})
	hundred(t, db, 100)
	c := transact(t, db, func(tr kv.Transaction) {
		e, ok, err := kv.First(tr, ks, false)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, key(0), e.Key)
		e, ok, err = kv.First(tr, ks, true)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, key(99), e.Key)
	})
	require.Equal(t, [3]int{1, 2, 0}, waits(c), "no fast path: each a range read of one row, one batch")
	require.Equal(t, 2, c.Batches)
}

// TestSpentBatchAtRangeEnd: a range holding exactly the rows that spend
// the first batch costs a second request, which finds nothing.
func TestSpentBatchAtRangeEnd(t *testing.T) {
	t.Parallel()
	db := open(t, fdbmodel.Config{})
	hundred(t, db, 100)
	c := transact(t, db, func(tr kv.Transaction) {
		require.Equal(t, 41, drain(t, tr.GetRange(kv.Range{Begin: key(0), End: key(41)}, kv.RangeOptions{})))
	})
	require.Equal(t, [3]int{1, 2, 0}, waits(c))
	// One row less: the batch ends at the range's end.
	c = transact(t, db, func(tr kv.Transaction) {
		require.Equal(t, 40, drain(t, tr.GetRange(kv.Range{Begin: key(0), End: key(40)}, kv.RangeOptions{})))
	})
	require.Equal(t, [3]int{1, 1, 0}, waits(c))
	// A row limit that ends the batch ends the read.
	c = transact(t, db, func(tr kv.Transaction) {
		require.Equal(t, 41, drain(t, tr.GetRange(ks, kv.RangeOptions{Limit: 41})))
	})
	require.Equal(t, [3]int{1, 1, 0}, waits(c))
}

func TestStreamingModesAndRoot(t *testing.T) {
	t.Parallel()
	db := open(t, fdbmodel.Config{})
	hundred(t, db, 1000)
	transact(t, db, func(tr kv.Transaction) {
		require.Equal(t, []int{800, 200}, fdbmodel.BatchSizes(tr.GetRange(ks, kv.RangeOptions{Mode: kv.StreamingModeWantAll})))
		require.Equal(t, []int{3, 3, 3, 1}, fdbmodel.BatchSizes(tr.Snapshot().GetRange(kv.Range{Begin: key(0), End: key(10)}, kv.RangeOptions{Mode: kv.StreamingModeSmall})))
	})
	// Under a 20-byte root prefix, rows cost 120 bytes.
	rooted := fdbmodel.Wrap(embedded.Open("", embedded.Config{}), fdbmodel.Config{RootLen: 20})
	t.Cleanup(func() { _ = rooted.Close() })
	hundred(t, rooted, 100)
	transact(t, rooted, func(tr kv.Transaction) {
		require.Equal(t, []int{35, 52, 13}, fdbmodel.BatchSizes(tr.GetRange(ks, kv.RangeOptions{})))
	})
}

// TestCache: what the read-your-writes cache knows, and what it does not.
func TestCache(t *testing.T) {
	t.Parallel()
	db := open(t, fdbmodel.Config{})
	hundred(t, db, 100)
	c := transact(t, db, func(tr kv.Transaction) {
		tr.Add(key(1), 1)
		_, err := tr.Get(key(1))
		require.NoError(t, err)
	})
	require.Equal(t, [3]int{1, 1, 1}, waits(c), "an atomic operation leaves its key unknown")

	c = transact(t, db, func(tr kv.Transaction) {
		tr.ClearRange(kv.Range{Begin: key(10), End: key(20)})
		require.Equal(t, 0, drain(t, tr.GetRange(kv.Range{Begin: key(12), End: key(18)}, kv.RangeOptions{})))
		v, err := tr.Get(key(15))
		require.NoError(t, err)
		require.Nil(t, v)
		tr.Clear(key(30))
		_, err = kv.GetMany(tr, [][]byte{key(30), key(10)})
		require.NoError(t, err)
	})
	require.Equal(t, [3]int{1, 0, 1}, waits(c), "cleared keys are known: no read, a blind write")
	require.Equal(t, 4, c.Cached)

	c = transact(t, db, func(tr kv.Transaction) {
		tr.Set(key(50), []byte("mine"))
		require.Equal(t, 3, drain(t, tr.GetRange(kv.Range{Begin: key(49), End: key(52)}, kv.RangeOptions{})))
		_, _, err := kv.First(tr, kv.Range{Begin: key(50), End: key(60)}, false)
		require.NoError(t, err)
		_, err = tr.Get(key(51))
		require.NoError(t, err)
	})
	require.Equal(t, [3]int{1, 1, 1}, waits(c), "a written key does not make the range around it known; the range read does")

	// A range read's span is known up to its last row, not beyond.
	c = transact(t, db, func(tr kv.Transaction) {
		require.Equal(t, 5, drain(t, tr.GetRange(ks, kv.RangeOptions{Limit: 5})))
		_, err := tr.Get(key(4))
		require.NoError(t, err)
		_, err = tr.Get(key(5))
		require.NoError(t, err)
	})
	require.Equal(t, [3]int{1, 2, 0}, waits(c))
}

// TestRetryStartsAfresh: OnError starts an attempt with a new read version
// and an empty cache; each attempt counts.
func TestRetryStartsAfresh(t *testing.T) {
	t.Parallel()
	db := open(t, fdbmodel.Config{})
	hundred(t, db, 10)
	runs := 0
	c := transact(t, db, func(tr kv.Transaction) {
		runs++
		_, err := tr.Get(key(1))
		require.NoError(t, err)
		_, err = tr.Get(key(1))
		require.NoError(t, err)
		if runs == 1 { // another transaction changes what this one read
			transact(t, db, func(tr kv.Transaction) { tr.Set(key(1), []byte("changed")) })
		}
		tr.Set(key(2), []byte("x"))
	})
	require.Equal(t, 2, runs)
	require.Equal(t, 2, c.Attempts)
	require.Equal(t, [3]int{2, 2, 2}, waits(c), "each attempt: GRV, a read, its commit (the first failed)")
	require.Equal(t, 2, c.Cached)
}

// TestOverlap: requests in flight together are one wait, and the commit
// waits for the reads still in flight.
func TestOverlap(t *testing.T) {
	t.Parallel()
	db := open(t, fdbmodel.Config{})
	hundred(t, db, 1000)
	c := transact(t, db, func(tr kv.Transaction) {
		a := tr.GetRange(kv.Range{Begin: key(0), End: key(10)}, kv.RangeOptions{})
		b := tr.GetRange(kv.Range{Begin: key(500), End: key(510)}, kv.RangeOptions{})
		require.Equal(t, 10, drain(t, b))
		require.Equal(t, 10, drain(t, a))
	})
	require.Equal(t, [3]int{1, 1, 0}, waits(c), "two iterators opened together: one round trip")
	require.Equal(t, 2, c.Batches)
	require.Equal(t, 1, c.Hidden)

	// A read-only commit waits for a batch requested and never consumed.
	c = transact(t, db, func(tr kv.Transaction) {
		tr.GetRange(ks, kv.RangeOptions{})
	})
	require.Equal(t, [3]int{1, 1, 0}, waits(c))

	// Taking the last row of a spent batch requests the next one: a
	// caller that stops there still waits for it at commit.
	c = transact(t, db, func(tr kv.Transaction) {
		it := tr.GetRange(ks, kv.RangeOptions{})
		for range 41 {
			require.True(t, it.Next())
		}
		tr.Set([]byte("x"), nil)
	})
	require.Equal(t, [3]int{1, 2, 1}, waits(c))
	require.Equal(t, 2, c.Batches)

	// A watch reads its key; the commit waits for that read.
	var w kv.Watch
	c = transact(t, db, func(tr kv.Transaction) {
		w = tr.Watch([]byte("watched"))
		tr.Set([]byte("x"), nil)
	})
	w.Cancel()
	require.Equal(t, [3]int{1, 1, 1}, waits(c))
	require.Equal(t, 1, c.Gets)
}

// TestGetReadVersion: asking for the read version is its wait; the reads
// after it wait only for themselves.
func TestGetReadVersion(t *testing.T) {
	t.Parallel()
	db := open(t, fdbmodel.Config{})
	c := transact(t, db, func(tr kv.Transaction) {
		_, err := tr.GetReadVersion()
		require.NoError(t, err)
		_, err = tr.Snapshot().GetReadVersion()
		require.NoError(t, err)
		_, err = tr.Get([]byte("a"))
		require.NoError(t, err)
	})
	require.Equal(t, [3]int{1, 1, 0}, waits(c))
}

// TestSleeps: each wait sleeps what the clock moves, a commit half before
// the engine's commit and half after; Modeled is their sum.
func TestSleeps(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var slept []time.Duration
	lat := fdbmodel.Latencies{GRV: 4 * time.Millisecond, Read: 2 * time.Millisecond, Commit: 10 * time.Millisecond}
	db := open(t, fdbmodel.Config{Latencies: lat, Sleep: func(d time.Duration) {
		mu.Lock()
		slept = append(slept, d)
		mu.Unlock()
	}})
	c := transact(t, db, func(tr kv.Transaction) {
		_, err := tr.Get([]byte("a"))
		require.NoError(t, err)
		tr.GetRange(ks, kv.RangeOptions{}) // in flight, awaited at commit
		tr.Set([]byte("a"), nil)
	})
	ms := time.Millisecond
	require.Equal(t, []time.Duration{4 * ms, 2 * ms, 2 * ms, 5 * ms, 5 * ms}, slept)
	require.Equal(t, 18*ms, c.Modeled)
	require.Equal(t, lat, db.Latencies())
	require.Equal(t, fdbmodel.DefaultLatencies, fdbmodel.Wrap(nil, fdbmodel.Config{}).Latencies())
}

// TestCollector: a collector sums the attempts of every transaction of its
// context; one that did nothing does not count.
func TestCollector(t *testing.T) {
	t.Parallel()
	db := open(t, fdbmodel.Config{})
	var c fdbmodel.Collector
	ctx := fdbmodel.WithCollector(bg, &c)
	require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		_, err := tr.Get([]byte("a"))
		return err
	}))
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error { return nil }))
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		tr.Set([]byte("b"), nil)
		return nil
	}))
	got := c.Counts()
	require.Equal(t, 3, got.Attempts, "the read, the empty commit, the write")
	require.Equal(t, "grv=2 reads=1 commit=1 (4)", got.String())
	require.Equal(t, "gets=1 getmanys=0/0 batches=0 cached=0 hidden=0", got.Requests())
	tr, err := db.CreateTransaction(ctx)
	require.NoError(t, err)
	tr.Cancel()
	require.Equal(t, got, c.Counts(), "a transaction that did nothing")

	// Without a collector, nothing is reported, and nothing breaks.
	transact(t, db, func(tr kv.Transaction) {})
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		tr.Set([]byte("c"), nil)
		return nil
	}))
}

// TestUseAfterEnd: an iterator whose batch was read ahead still fails once
// its transaction ended, as the FoundationDB engine's does.
func TestUseAfterEnd(t *testing.T) {
	t.Parallel()
	db := open(t, fdbmodel.Config{})
	hundred(t, db, 10)
	tr, err := db.CreateTransaction(bg)
	require.NoError(t, err)
	it := tr.GetRange(ks, kv.RangeOptions{})
	require.True(t, it.Next())
	tr.Set([]byte("x"), nil)
	require.NoError(t, tr.Commit())
	require.False(t, it.Next())
	require.Equal(t, kv.CodeClientInvalidOperation, kv.Code(it.Err()))
	require.Error(t, tr.Commit())

	tr, err = db.CreateTransaction(bg)
	require.NoError(t, err)
	it = tr.GetRange(ks, kv.RangeOptions{})
	tr.Cancel()
	require.False(t, it.Next())
	require.ErrorIs(t, it.Err(), kv.ErrTransactionCancelled)

	ctx, cancel := context.WithCancel(bg)
	tr, err = db.CreateTransaction(ctx)
	require.NoError(t, err)
	defer tr.Cancel()
	it = tr.GetRange(ks, kv.RangeOptions{})
	cancel()
	require.False(t, it.Next())
	require.ErrorIs(t, it.Err(), context.Canceled)
}

// TestMetadataVersionIsTheReadVersion: the metadata version comes with the
// read version: reading it is the read version's wait, if no read asked for
// it yet, and no read; a bump is a write, which the commit sends.
func TestMetadataVersionIsTheReadVersion(t *testing.T) {
	t.Parallel()
	db := open(t, fdbmodel.Config{})
	hundred(t, db, 10)
	c := transact(t, db, func(tr kv.Transaction) {
		_, err := kv.MetadataVersion(tr.Snapshot())
		require.NoError(t, err)
		_, err = tr.Get(key(1))
		require.NoError(t, err)
		_, err = kv.MetadataVersion(tr)
		require.NoError(t, err)
	})
	require.Equal(t, [3]int{1, 1, 0}, waits(c), "the read version, then the Get")
	require.Equal(t, 1, c.Gets)

	c = transact(t, db, func(tr kv.Transaction) {
		_, err := tr.Get(key(1))
		require.NoError(t, err)
		_, err = kv.MetadataVersion(tr)
		require.NoError(t, err)
		require.True(t, kv.BumpMetadataVersion(tr))
		_, err = kv.MetadataVersion(tr)
		require.ErrorIs(t, err, kv.ErrAccessedUnreadable)
	})
	require.Equal(t, [3]int{1, 1, 1}, waits(c), "after a read, free; a bump commits")

	c = transact(t, db, func(tr kv.Transaction) { kv.BumpMetadataVersion(tr) })
	require.Equal(t, [3]int{1, 0, 1}, waits(c), "a blind write")
}
