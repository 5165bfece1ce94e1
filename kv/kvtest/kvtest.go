// Package kvtest is the contract suite every kv engine runs: key order,
// limits and reverse reads, snapshot versus serializable reads and their
// conflicts, read-your-writes, atomic operations under concurrency,
// FoundationDB's size limits and the 5-second transaction limit, each
// failing with FoundationDB's error code, watches, reads in flight together
// (futures), and the metadata version.
//
//	func TestContract(t *testing.T) {
//		kvtest.Run(t, func(t *testing.T) kvtest.Instance { ... })
//	}
package kvtest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// Instance is a fresh, empty database for one test.
type Instance struct {
	DB kv.Database
	// Advance moves the engine's clock forward. Nil means the engine runs
	// on real time, and the test sleeps instead.
	Advance func(time.Duration)
	// MaxWatches is the engine's bound on watches that have not fired;
	// 0 means kv.MaxWatches.
	MaxWatches int
}

// Run runs the contract suite. open must return an empty database that no
// other test uses; its tests run in parallel.
func Run(t *testing.T, open func(t *testing.T) Instance) {
	tests := []struct {
		name string
		fn   func(t *testing.T, in Instance)
	}{
		{"KeyOrder", testKeyOrder},
		{"RangeLimitReverse", testRangeLimitReverse},
		{"RangeStreaming", testRangeStreaming},
		{"ReadYourWrites", testReadYourWrites},
		{"ReadYourWritesRange", testReadYourWritesRange},
		{"SnapshotIsolation", testSnapshotIsolation},
		{"SerializableReadConflicts", testSerializableReadConflicts},
		{"SnapshotReadNoConflict", testSnapshotReadNoConflict},
		{"RangeBuffersReusable", testRangeBuffersReusable},
		{"WriteBuffersReusable", testWriteBuffersReusable},
		{"FirstIsRangeLimitOne", testFirst},
		{"GetManyIsGetEach", testGetMany},
		{"RangeConflictOnlyWhatWasRead", testRangeConflictOnlyWhatWasRead},
		{"ExplicitConflictRanges", testExplicitConflictRanges},
		{"ReadOnlyCommitNeverConflicts", testReadOnlyCommit},
		{"BlindWritesDoNotConflict", testBlindWrites},
		{"AtomicAddConcurrent", testAtomicAddConcurrent},
		{"CompareAndClear", testCompareAndClear},
		{"ClearRange", testClearRange},
		{"Limits", testLimits},
		{"TransactionTooOld", testTransactionTooOld},
		{"TransactRetriesConflicts", testTransactRetries},
		{"ContextCancellation", testContextCancellation},
		{"UseAfterCommitOrCancel", testUseAfterEnd},
		{"Errors", testErrors},
		{"IteratorsInterleaved", testIteratorsInterleaved},
		{"WatchFiresOnChange", testWatchFiresOnChange},
		{"WatchArmedAtCommit", testWatchArmedAtCommit},
		{"WatchOwnWrites", testWatchOwnWrites},
		{"WatchEndsWithItsTransaction", testWatchEndsWithItsTransaction},
		{"WatchLimit", testWatchLimit},
	}
	tests = append(tests, asyncTests...)
	tests = append(tests, metadataTests...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := open(t)
			t.Cleanup(func() { _ = in.DB.Close() })
			tc.fn(t, in)
		})
	}
}

var bg = context.Background()

func set(t *testing.T, db kv.Database, kvs ...string) {
	t.Helper()
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		for i := 0; i+1 < len(kvs); i += 2 {
			tr.Set([]byte(kvs[i]), []byte(kvs[i+1]))
		}
		return nil
	}))
}

func get(t *testing.T, db kv.Database, key string) []byte {
	t.Helper()
	var v []byte
	require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
		var err error
		v, err = tr.Get([]byte(key))
		return err
	}))
	return v
}

func keys(kvs []kv.KeyValue) []string {
	out := make([]string, len(kvs))
	for i, e := range kvs {
		out[i] = string(e.Key)
	}
	return out
}

func rangeKeys(t *testing.T, tr kv.ReadTransaction, b, e string, opts kv.RangeOptions) []string {
	t.Helper()
	kvs, err := kv.Collect(tr.GetRange(kv.Range{Begin: []byte(b), End: []byte(e)}, opts))
	require.NoError(t, err)
	return keys(kvs)
}

func newTr(t *testing.T, db kv.Database) kv.Transaction {
	t.Helper()
	tr, err := db.CreateTransaction(bg)
	require.NoError(t, err)
	t.Cleanup(tr.Cancel)
	return tr
}

func testKeyOrder(t *testing.T, in Instance) {
	var want []string
	var kvs []string
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200; i++ {
		k := make([]byte, 1+r.IntN(12))
		for j := range k {
			k[j] = byte(r.IntN(0xff)) // never 0xff: system keys
		}
		kvs = append(kvs, string(k), "v")
		want = append(want, string(k))
	}
	set(t, in.DB, kvs...)
	sort.Strings(want)
	want = dedup(want)
	tr := newTr(t, in.DB)
	require.Equal(t, want, rangeKeys(t, tr, "", "\xff", kv.RangeOptions{}))
	require.Equal(t, want, rangeKeys(t, tr, "", "\xff", kv.RangeOptions{Mode: kv.StreamingModeWantAll}))
}

func dedup(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func testRangeLimitReverse(t *testing.T, in Instance) {
	set(t, in.DB, "a", "1", "b", "2", "c", "3", "d", "4", "e", "5")
	tr := newTr(t, in.DB)
	require.Equal(t, []string{"b", "c", "d"}, rangeKeys(t, tr, "b", "e", kv.RangeOptions{}))
	require.Equal(t, []string{"b", "c"}, rangeKeys(t, tr, "b", "e", kv.RangeOptions{Limit: 2}))
	require.Equal(t, []string{"d", "c", "b"}, rangeKeys(t, tr, "b", "e", kv.RangeOptions{Reverse: true}))
	require.Equal(t, []string{"d"}, rangeKeys(t, tr, "b", "e", kv.RangeOptions{Reverse: true, Limit: 1}))
	require.Equal(t, []string{"e", "d", "c", "b", "a"}, rangeKeys(t, tr, "", "\xff", kv.RangeOptions{Reverse: true}))
	require.Empty(t, rangeKeys(t, tr, "c", "c", kv.RangeOptions{}))
	require.Empty(t, rangeKeys(t, tr, "x", "z", kv.RangeOptions{Reverse: true}))
	require.Equal(t, []string{"a", "b", "c", "d", "e"}, rangeKeys(t, tr, "", "\xff", kv.RangeOptions{Limit: 100}))

	_, err := kv.Collect(tr.GetRange(kv.Range{Begin: []byte("z"), End: []byte("a")}, kv.RangeOptions{}))
	require.ErrorIs(t, err, kv.ErrInvertedRange)

	kvp, ok, err := kv.First(tr, kv.PrefixRange([]byte("c")), false)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "3", string(kvp.Value))
}

func testRangeStreaming(t *testing.T, in Instance) {
	const n = 5000
	require.NoError(t, in.DB.Transact(bg, func(tr kv.Transaction) error {
		for i := 0; i < n; i++ {
			tr.Set([]byte(fmt.Sprintf("k%06d", i)), []byte("v"))
		}
		return nil
	}))
	tr := newTr(t, in.DB)
	for _, reverse := range []bool{false, true} {
		it := tr.GetRange(kv.PrefixRange([]byte("k")), kv.RangeOptions{Reverse: reverse})
		count := 0
		var prev []byte
		for it.Next() {
			k := it.KeyValue().Key
			if prev != nil {
				require.Equal(t, !reverse, bytes.Compare(prev, k) < 0)
			}
			prev = k
			count++
		}
		require.NoError(t, it.Err())
		require.Equal(t, n, count)
	}
	// Stopping early is fine.
	it := tr.GetRange(kv.PrefixRange([]byte("k")), kv.RangeOptions{})
	require.True(t, it.Next())
	require.Equal(t, "k000000", string(it.KeyValue().Key))
}

func testReadYourWrites(t *testing.T, in Instance) {
	set(t, in.DB, "a", "1", "b", "2")
	tr := newTr(t, in.DB)
	tr.Set([]byte("a"), []byte("new"))
	tr.Clear([]byte("b"))
	tr.Set([]byte("c"), []byte("3"))
	tr.Set([]byte("e"), []byte{})
	v, err := tr.Get([]byte("a"))
	require.NoError(t, err)
	require.Equal(t, "new", string(v))
	v, err = tr.Get([]byte("b"))
	require.NoError(t, err)
	require.Nil(t, v)
	v, err = tr.Snapshot().Get([]byte("c"))
	require.NoError(t, err)
	require.Equal(t, "3", string(v))
	v, err = tr.Get([]byte("e"))
	require.NoError(t, err)
	require.NotNil(t, v, "an empty value is present, not absent")
	require.Empty(t, v)

	tr.Add([]byte("n"), 5)
	tr.Add([]byte("n"), -2)
	v, err = tr.Get([]byte("n"))
	require.NoError(t, err)
	require.Equal(t, int64(3), int64(binary.LittleEndian.Uint64(v)))

	// Others do not see uncommitted writes.
	require.Equal(t, "1", string(get(t, in.DB, "a")))
	require.NoError(t, tr.Commit())
	require.Equal(t, "new", string(get(t, in.DB, "a")))
	require.Nil(t, get(t, in.DB, "b"))
}

func testReadYourWritesRange(t *testing.T, in Instance) {
	set(t, in.DB, "a", "1", "c", "3", "e", "5", "g", "7")
	tr := newTr(t, in.DB)
	tr.Set([]byte("b"), []byte("2"))
	tr.Clear([]byte("c"))
	tr.Set([]byte("e"), []byte("five"))
	tr.Set([]byte("f"), []byte("6"))
	all := func(opts kv.RangeOptions) []string {
		kvs, err := kv.Collect(tr.GetRange(kv.Range{Begin: []byte("a"), End: []byte("h")}, opts))
		require.NoError(t, err)
		out := make([]string, len(kvs))
		for i, e := range kvs {
			out[i] = string(e.Key) + "=" + string(e.Value)
		}
		return out
	}
	require.Equal(t, []string{"a=1", "b=2", "e=five", "f=6", "g=7"}, all(kv.RangeOptions{}))
	require.Equal(t, []string{"g=7", "f=6", "e=five", "b=2", "a=1"}, all(kv.RangeOptions{Reverse: true}))
	require.Equal(t, []string{"a=1", "b=2"}, all(kv.RangeOptions{Limit: 2}))
	require.Equal(t, []string{"g=7", "f=6"}, all(kv.RangeOptions{Limit: 2, Reverse: true}))

	tr.ClearRange(kv.Range{Begin: []byte("b"), End: []byte("f")})
	tr.Set([]byte("d"), []byte("4"))
	require.Equal(t, []string{"a=1", "d=4", "f=6", "g=7"}, all(kv.RangeOptions{}))
	require.Equal(t, []string{"g=7", "f=6", "d=4", "a=1"}, all(kv.RangeOptions{Reverse: true}))
	require.NoError(t, tr.Commit())

	tr2 := newTr(t, in.DB)
	require.Equal(t, []string{"a", "d", "f", "g"}, rangeKeys(t, tr2, "a", "h", kv.RangeOptions{}))
}

func testSnapshotIsolation(t *testing.T, in Instance) {
	set(t, in.DB, "a", "1")
	tr := newTr(t, in.DB)
	_, err := tr.GetReadVersion()
	require.NoError(t, err)
	set(t, in.DB, "a", "2", "b", "new")
	v, err := tr.Get([]byte("a"))
	require.NoError(t, err)
	require.Equal(t, "1", string(v), "reads see the database as of the read version")
	require.Equal(t, []string{"a"}, rangeKeys(t, tr.Snapshot(), "", "\xff", kv.RangeOptions{}))
}

func testSerializableReadConflicts(t *testing.T, in Instance) {
	set(t, in.DB, "q/1", "x")
	// A serializable range read, then a commit into the range by someone
	// else: the reader's commit fails with 1020.
	tr := newTr(t, in.DB)
	require.Equal(t, []string{"q/1"}, rangeKeys(t, tr, "q/", "q0", kv.RangeOptions{}))
	set(t, in.DB, "q/2", "y")
	tr.Set([]byte("out"), []byte("1"))
	err := tr.Commit()
	require.ErrorIs(t, err, kv.ErrNotCommitted)
	require.True(t, kv.IsRetryable(err))
	require.Nil(t, get(t, in.DB, "out"), "a conflicting transaction writes nothing")

	// The same for a point read.
	tr = newTr(t, in.DB)
	_, err = tr.Get([]byte("k"))
	require.NoError(t, err)
	set(t, in.DB, "k", "v")
	tr.Set([]byte("out"), []byte("1"))
	require.ErrorIs(t, tr.Commit(), kv.ErrNotCommitted)

	// A write elsewhere does not conflict.
	tr = newTr(t, in.DB)
	_, err = tr.Get([]byte("k"))
	require.NoError(t, err)
	set(t, in.DB, "elsewhere", "v")
	tr.Set([]byte("out"), []byte("1"))
	require.NoError(t, tr.Commit())
}

// testRangeBuffersReusable: once a range read is done, the caller may reuse
// the byte slices of its range; the read's conflict range must not change.
func testRangeBuffersReusable(t *testing.T, in Instance) {
	for _, reverse := range []bool{false, true} {
		set(t, in.DB, "r/1", "x")
		tr := newTr(t, in.DB)
		begin, end := []byte("r/"), []byte("r0")
		it := tr.GetRange(kv.Range{Begin: begin, End: end}, kv.RangeOptions{Reverse: reverse})
		for it.Next() {
		}
		require.NoError(t, it.Err())
		copy(begin, "zz")
		copy(end, "zz")
		set(t, in.DB, "r/0", "y") // inside the range that was read
		tr.Set([]byte("out"), []byte("1"))
		require.ErrorIs(t, tr.Commit(), kv.ErrNotCommitted, "reverse=%v", reverse)
	}
}

// testWriteBuffersReusable: the writes copy their keys and values, so the
// caller may reuse those bytes at once, as pushes do with one buffer for
// every key they write.
func testWriteBuffersReusable(t *testing.T, in Instance) {
	set(t, in.DB, "w/c", "old", "w/d", "old", "w/e", "old", "w/f", "old")
	tr := newTr(t, in.DB)
	buf := []byte("w/a=1")
	tr.Set(buf[:3], buf[4:])
	copy(buf, "w/b=2")
	tr.Set(buf[:3], buf[4:])
	copy(buf, "w/c")
	tr.Clear(buf[:3])
	begin, end := []byte("w/d"), []byte("w/e")
	tr.ClearRange(kv.Range{Begin: begin, End: end})
	copy(begin, "w/0")
	copy(end, "w/z")
	n := []byte("w/n")
	tr.Add(n, 7)
	copy(n, "w/m")
	cv := []byte("old")
	key := []byte("w/f")
	tr.CompareAndClear(key, cv)
	copy(key, "w/e")
	copy(cv, "new")
	copy(buf, "zzzzz")
	require.NoError(t, tr.Commit())

	got := map[string]string{}
	rd := newTr(t, in.DB)
	it := rd.GetRange(kv.PrefixRange([]byte("w/")), kv.RangeOptions{})
	for it.Next() {
		e := it.KeyValue()
		got[string(e.Key)] = string(e.Value)
	}
	require.NoError(t, it.Err())
	require.Equal(t, map[string]string{
		"w/a": "1", "w/b": "2", "w/e": "old",
		"w/n": string([]byte{7, 0, 0, 0, 0, 0, 0, 0}),
	}, got)
}

// testFirst: kv.First (which engines may serve without an iterator) is a
// range read of limit 1 in results, read-your-writes and conflict ranges.
func testFirst(t *testing.T, in Instance) {
	set(t, in.DB, "f/b", "1", "f/d", "2")
	type tc struct {
		name          string
		reverse, snap bool
		write         string // committed by another transaction after the read
		conflict      bool
	}
	for _, c := range []tc{
		{"forward, after the key", false, false, "f/c", false},
		{"forward, before the key", false, false, "f/a", true},
		{"reverse, before the key", true, false, "f/c", false},
		{"reverse, after the key", true, false, "f/e", true},
		{"snapshot", false, true, "f/a", false},
	} {
		tr := newTr(t, in.DB)
		var rt kv.ReadTransaction = tr
		if c.snap {
			rt = tr.Snapshot()
		}
		e, ok, err := kv.First(rt, kv.Range{Begin: []byte("f/"), End: []byte("f0")}, c.reverse)
		require.NoError(t, err)
		require.True(t, ok)
		want := map[bool]string{false: "f/b", true: "f/d"}[c.reverse]
		require.Equal(t, want, string(e.Key), c.name)
		set(t, in.DB, c.write, "x")
		tr.Set([]byte("out"), []byte("1"))
		if err := tr.Commit(); c.conflict {
			require.ErrorIs(t, err, kv.ErrNotCommitted, c.name)
		} else {
			require.NoError(t, err, c.name)
		}
		tr = newTr(t, in.DB)
		tr.Clear([]byte(c.write))
		require.NoError(t, tr.Commit())
	}

	// An empty range: the whole of it is read.
	tr := newTr(t, in.DB)
	_, ok, err := kv.First(tr, kv.Range{Begin: []byte("g/"), End: []byte("g0")}, false)
	require.NoError(t, err)
	require.False(t, ok)
	set(t, in.DB, "g/x", "x")
	tr.Set([]byte("out"), []byte("1"))
	require.ErrorIs(t, tr.Commit(), kv.ErrNotCommitted)

	// The transaction's own writes and clears, inside and outside the range.
	tr = newTr(t, in.DB)
	tr.Set([]byte("f/a"), []byte("mine"))
	tr.Set([]byte("zz"), []byte("elsewhere"))
	e, ok, err := kv.First(tr, kv.Range{Begin: []byte("f/"), End: []byte("f0")}, false)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "f/a", string(e.Key))
	require.Equal(t, "mine", string(e.Value))
	tr.ClearRange(kv.Range{Begin: []byte("f/"), End: []byte("f/c")})
	e, ok, err = kv.First(tr, kv.Range{Begin: []byte("f/"), End: []byte("f0")}, false)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "f/d", string(e.Key))
	tr.Cancel()

	// Bad ranges fail as GetRange does.
	tr = newTr(t, in.DB)
	_, _, err = kv.First(tr, kv.Range{Begin: []byte("b"), End: []byte("a")}, false)
	require.Equal(t, 2005, kv.Code(err))
	_, _, err = kv.First(tr, kv.Range{Begin: []byte("a"), End: []byte("\xff\xff")}, true)
	require.Equal(t, 2004, kv.Code(err))
	tr.Cancel()
}

// testGetMany: kv.GetMany answers as a Get of each key, in the order
// given, with the transaction's own writes, clears and atomic operations,
// and with the same read conflicts (none through a snapshot).
func testGetMany(t *testing.T, in Instance) {
	set(t, in.DB, "m/a", "1", "m/c", "3", "m/e", "5", "m/n", "\x01\x00")
	keys := func(ks ...string) [][]byte {
		out := make([][]byte, len(ks))
		for i, k := range ks {
			out[i] = []byte(k)
		}
		return out
	}
	for _, snap := range []bool{false, true} {
		tr := newTr(t, in.DB)
		tr.Set([]byte("m/b"), []byte("mine"))
		tr.Clear([]byte("m/c"))
		tr.ClearRange(kv.Range{Begin: []byte("m/d"), End: []byte("m/f")})
		tr.Add([]byte("m/n"), 2)
		var rt kv.ReadTransaction = tr
		if snap {
			rt = tr.Snapshot()
		}
		asked := keys("m/z", "m/a", "m/b", "m/c", "m/e", "m/n", "m/a", "m/x")
		vals, err := kv.GetMany(rt, asked)
		require.NoError(t, err)
		require.Len(t, vals, len(asked))
		for i, k := range asked {
			v, err := rt.Get(k)
			require.NoError(t, err)
			require.Equal(t, v, vals[i], "key %s", k)
		}
		require.Equal(t, []byte("1"), vals[1])
		require.Equal(t, []byte("mine"), vals[2])
		require.Nil(t, vals[3], "cleared")
		require.Nil(t, vals[4], "range-cleared")
		require.Equal(t, []byte{3, 0, 0, 0, 0, 0, 0, 0}, vals[5], "1 + 2, the result as long as the parameter")
		require.Nil(t, vals[7], "absent")
		// A key read (absent) is in the read conflicts, unless through
		// a snapshot.
		set(t, in.DB, "m/x", "late")
		if err := tr.Commit(); snap {
			require.NoError(t, err, "snapshot reads add no read conflicts")
		} else {
			require.ErrorIs(t, err, kv.ErrNotCommitted)
		}
		tr = newTr(t, in.DB)
		tr.Clear([]byte("m/x"))
		require.NoError(t, tr.Commit())
	}
	tr := newTr(t, in.DB)
	vals, err := kv.GetMany(tr, nil)
	require.NoError(t, err)
	require.Empty(t, vals)
	_, err = kv.GetMany(tr, keys("m/a", "\xff/system"))
	require.Equal(t, 2004, kv.Code(err), "a key in the system key space, as Get")
}

func testSnapshotReadNoConflict(t *testing.T, in Instance) {
	set(t, in.DB, "q/1", "x")
	tr := newTr(t, in.DB)
	require.Equal(t, []string{"q/1"}, rangeKeys(t, tr.Snapshot(), "q/", "q0", kv.RangeOptions{}))
	_, err := tr.Snapshot().Get([]byte("k"))
	require.NoError(t, err)
	set(t, in.DB, "q/2", "y", "k", "v")
	tr.Set([]byte("out"), []byte("1"))
	require.NoError(t, tr.Commit(), "snapshot reads add no read conflicts")
}

func testRangeConflictOnlyWhatWasRead(t *testing.T, in Instance) {
	set(t, in.DB, "q/b", "1", "q/d", "2")
	// Reading the first key (limit 1) conflicts with writes up to that key
	// only, as FoundationDB records it.
	tr := newTr(t, in.DB)
	require.Equal(t, []string{"q/b"}, rangeKeys(t, tr, "q/", "q0", kv.RangeOptions{Limit: 1}))
	set(t, in.DB, "q/c", "after")
	tr.Set([]byte("out"), []byte("1"))
	require.NoError(t, tr.Commit())

	tr = newTr(t, in.DB)
	require.Equal(t, []string{"q/b"}, rangeKeys(t, tr, "q/", "q0", kv.RangeOptions{Limit: 1}))
	set(t, in.DB, "q/a", "before")
	tr.Set([]byte("out"), []byte("1"))
	require.ErrorIs(t, tr.Commit(), kv.ErrNotCommitted)

	// In reverse, from the end down to the last key read.
	tr = newTr(t, in.DB)
	require.Equal(t, []string{"q/d"}, rangeKeys(t, tr, "q/", "q0", kv.RangeOptions{Limit: 1, Reverse: true}))
	set(t, in.DB, "q/a2", "below")
	tr.Set([]byte("out"), []byte("1"))
	require.NoError(t, tr.Commit())

	tr = newTr(t, in.DB)
	require.Equal(t, []string{"q/d"}, rangeKeys(t, tr, "q/", "q0", kv.RangeOptions{Limit: 1, Reverse: true}))
	set(t, in.DB, "q/e", "above")
	tr.Set([]byte("out"), []byte("1"))
	require.ErrorIs(t, tr.Commit(), kv.ErrNotCommitted)

	// The keys returned are covered, the last one too, in both
	// directions, and also when the caller stops iterating early.
	set(t, in.DB, "p/b", "1", "p/d", "2")
	for _, c := range []struct {
		opts  kv.RangeOptions
		write string
	}{
		{kv.RangeOptions{Limit: 1}, "p/b"},
		{kv.RangeOptions{Limit: 1, Reverse: true}, "p/d"},
	} {
		tr = newTr(t, in.DB)
		require.Equal(t, []string{c.write}, rangeKeys(t, tr, "p/", "p0", c.opts))
		set(t, in.DB, c.write, "rewritten")
		tr.Set([]byte("out"), []byte("1"))
		require.ErrorIs(t, tr.Commit(), kv.ErrNotCommitted, "%+v", c.opts)
	}
	set(t, in.DB, "s/1", "x", "s/2", "x", "s/3", "x")
	for _, c := range []struct {
		write    string
		conflict bool
	}{{"s/2", true}, {"s/2a", false}} {
		tr = newTr(t, in.DB)
		it := tr.GetRange(kv.Range{Begin: []byte("s/"), End: []byte("s0")}, kv.RangeOptions{})
		require.True(t, it.Next())
		require.True(t, it.Next()) // s/2, then the caller stops
		set(t, in.DB, c.write, "y")
		tr.Set([]byte("out"), []byte("1"))
		if err := tr.Commit(); c.conflict {
			require.ErrorIs(t, err, kv.ErrNotCommitted, c.write)
		} else {
			require.NoError(t, err, c.write)
		}
	}

	// An empty range read covers the whole range.
	tr = newTr(t, in.DB)
	require.Empty(t, rangeKeys(t, tr, "r/", "r0", kv.RangeOptions{Limit: 1}))
	set(t, in.DB, "r/x", "v")
	tr.Set([]byte("out"), []byte("1"))
	require.ErrorIs(t, tr.Commit(), kv.ErrNotCommitted)
}

func testExplicitConflictRanges(t *testing.T, in Instance) {
	// A conflict range conflicts with writes committed after the read
	// version. FoundationDB takes the read version at the first read, or
	// at commit for a transaction that read nothing (so the write below
	// would come before it): the tests take it first.
	tr := newTr(t, in.DB)
	_, err := tr.GetReadVersion()
	require.NoError(t, err)
	require.NoError(t, tr.AddReadConflictRange(kv.Range{Begin: []byte("m"), End: []byte("n")}))
	set(t, in.DB, "mx", "v")
	tr.Set([]byte("out"), []byte("1"))
	require.ErrorIs(t, tr.Commit(), kv.ErrNotCommitted)

	tr = newTr(t, in.DB)
	_, err = tr.GetReadVersion()
	require.NoError(t, err)
	require.NoError(t, tr.AddReadConflictKey([]byte("solo")))
	set(t, in.DB, "solo", "v")
	tr.Set([]byte("out"), []byte("1"))
	require.ErrorIs(t, tr.Commit(), kv.ErrNotCommitted)

	// A write conflict key makes readers of that key conflict.
	reader := newTr(t, in.DB)
	_, err = reader.Get([]byte("w"))
	require.NoError(t, err)
	writer := newTr(t, in.DB)
	require.NoError(t, writer.AddWriteConflictKey([]byte("w")))
	require.NoError(t, writer.Commit())
	reader.Set([]byte("out"), []byte("1"))
	require.ErrorIs(t, reader.Commit(), kv.ErrNotCommitted)
	require.Nil(t, get(t, in.DB, "w"), "a write conflict key writes nothing")
}

func testReadOnlyCommit(t *testing.T, in Instance) {
	tr := newTr(t, in.DB)
	_, err := tr.Get([]byte("k"))
	require.NoError(t, err)
	set(t, in.DB, "k", "v")
	require.NoError(t, tr.Commit())
}

func testBlindWrites(t *testing.T, in Instance) {
	a, b := newTr(t, in.DB), newTr(t, in.DB)
	_, err := a.GetReadVersion()
	require.NoError(t, err)
	_, err = b.GetReadVersion()
	require.NoError(t, err)
	a.Set([]byte("k"), []byte("a"))
	b.Set([]byte("k"), []byte("b"))
	a.Add([]byte("n"), 1)
	b.Add([]byte("n"), 1)
	require.NoError(t, a.Commit())
	require.NoError(t, b.Commit())
	require.Equal(t, "b", string(get(t, in.DB, "k")), "the last commit wins")
	require.Equal(t, uint64(2), binary.LittleEndian.Uint64(get(t, in.DB, "n")))
}

func testAtomicAddConcurrent(t *testing.T, in Instance) {
	const workers, each = 16, 100
	var wg sync.WaitGroup
	var failed atomic.Int64
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				err := in.DB.Transact(bg, func(tr kv.Transaction) error {
					tr.Add([]byte("counter"), 1)
					tr.Add([]byte("sum"), int64(i))
					return nil
				})
				if err != nil {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	require.Zero(t, failed.Load())
	require.Equal(t, uint64(workers*each), binary.LittleEndian.Uint64(get(t, in.DB, "counter")))
	require.Equal(t, uint64(workers*each*(each-1)/2), binary.LittleEndian.Uint64(get(t, in.DB, "sum")))

	// Negative deltas wrap as two's complement, as FoundationDB's ADD does.
	set(t, in.DB, "neg", "\x01\x00\x00\x00\x00\x00\x00\x00")
	require.NoError(t, in.DB.Transact(bg, func(tr kv.Transaction) error {
		tr.Add([]byte("neg"), -3)
		return nil
	}))
	require.Equal(t, int64(-2), int64(binary.LittleEndian.Uint64(get(t, in.DB, "neg"))))
}

func testCompareAndClear(t *testing.T, in Instance) {
	set(t, in.DB, "a", "x", "b", "y")
	require.NoError(t, in.DB.Transact(bg, func(tr kv.Transaction) error {
		tr.CompareAndClear([]byte("a"), []byte("x"))
		tr.CompareAndClear([]byte("b"), []byte("nope"))
		tr.CompareAndClear([]byte("absent"), []byte("x"))
		return nil
	}))
	require.Nil(t, get(t, in.DB, "a"))
	require.Equal(t, "y", string(get(t, in.DB, "b")))

	// Add then compare-and-clear at zero: a counter that vanishes at zero.
	require.NoError(t, in.DB.Transact(bg, func(tr kv.Transaction) error {
		tr.Add([]byte("c"), 1)
		return nil
	}))
	require.NoError(t, in.DB.Transact(bg, func(tr kv.Transaction) error {
		tr.Add([]byte("c"), -1)
		tr.CompareAndClear([]byte("c"), make([]byte, 8))
		return nil
	}))
	require.Nil(t, get(t, in.DB, "c"))
}

func testClearRange(t *testing.T, in Instance) {
	set(t, in.DB, "a", "1", "b", "2", "c", "3", "d", "4")
	require.NoError(t, in.DB.Transact(bg, func(tr kv.Transaction) error {
		tr.ClearRange(kv.Range{Begin: []byte("b"), End: []byte("d")})
		return nil
	}))
	tr := newTr(t, in.DB)
	require.Equal(t, []string{"a", "d"}, rangeKeys(t, tr, "", "\xff", kv.RangeOptions{}))

	// A range read that overlaps a concurrent clear conflicts.
	reader := newTr(t, in.DB)
	require.Equal(t, []string{"a"}, rangeKeys(t, reader, "a", "b", kv.RangeOptions{}))
	require.NoError(t, in.DB.Transact(bg, func(tr kv.Transaction) error {
		tr.ClearRange(kv.Range{Begin: []byte("a"), End: []byte("c")})
		return nil
	}))
	reader.Set([]byte("out"), []byte("1"))
	require.ErrorIs(t, reader.Commit(), kv.ErrNotCommitted)
}

func testLimits(t *testing.T, in Instance) {
	commit := func(fn func(tr kv.Transaction)) error {
		tr := newTr(t, in.DB)
		fn(tr)
		return tr.Commit()
	}
	require.NoError(t, commit(func(tr kv.Transaction) {
		tr.Set(bytes.Repeat([]byte("k"), kv.MaxKeySize), bytes.Repeat([]byte("v"), kv.MaxValueSize))
	}), "the limits themselves are allowed")

	err := commit(func(tr kv.Transaction) { tr.Set(bytes.Repeat([]byte("k"), kv.MaxKeySize+1), nil) })
	require.ErrorIs(t, err, kv.ErrKeyTooLarge)
	require.Equal(t, 2102, kv.Code(err))

	err = commit(func(tr kv.Transaction) { tr.Set([]byte("k"), make([]byte, kv.MaxValueSize+1)) })
	require.ErrorIs(t, err, kv.ErrValueTooLarge)
	require.Equal(t, 2103, kv.Code(err))

	err = commit(func(tr kv.Transaction) {
		v := make([]byte, kv.MaxValueSize)
		for i := 0; i <= kv.MaxTransactionSize/kv.MaxValueSize; i++ {
			tr.Set([]byte(fmt.Sprintf("big%04d", i)), v)
		}
	})
	require.ErrorIs(t, err, kv.ErrTransactionTooLarge)
	require.Equal(t, 2101, kv.Code(err))
	require.Nil(t, get(t, in.DB, "big0000"), "a failed transaction writes nothing")

	err = commit(func(tr kv.Transaction) { tr.Set([]byte("\xffsystem"), []byte("v")) })
	require.ErrorIs(t, err, kv.ErrKeyOutsideLegalRange)

	for _, e := range []error{kv.ErrKeyTooLarge, kv.ErrValueTooLarge, kv.ErrTransactionTooLarge} {
		require.False(t, kv.IsRetryable(e))
	}
}

func testTransactionTooOld(t *testing.T, in Instance) {
	set(t, in.DB, "k", "v", "k2", "v2")
	tr := newTr(t, in.DB)
	_, err := tr.Get([]byte("k"))
	require.NoError(t, err)
	if in.Advance != nil {
		in.Advance(kv.MaxTransactionAge + time.Second)
	} else {
		time.Sleep(kv.MaxTransactionAge + time.Second)
	}
	// A key the transaction has not read: FoundationDB answers a repeated
	// read of a key from the transaction's read-your-writes cache, without
	// asking a storage server, so a read of k would still succeed.
	_, err = tr.Get([]byte("k2"))
	require.ErrorIs(t, err, kv.ErrTransactionTooOld)
	require.True(t, kv.IsRetryable(err))
	tr.Set([]byte("k"), []byte("w"))
	require.ErrorIs(t, tr.Commit(), kv.ErrTransactionTooOld)
	// OnError resets the transaction with a fresh read version.
	require.NoError(t, tr.OnError(err))
	v, err := tr.Get([]byte("k"))
	require.NoError(t, err)
	require.Equal(t, "v", string(v))
}

func testTransactRetries(t *testing.T, in Instance) {
	set(t, in.DB, "k", "0")
	runs := 0
	interfere := true
	err := in.DB.Transact(bg, func(tr kv.Transaction) error {
		runs++
		v, err := tr.Get([]byte("k"))
		if err != nil {
			return err
		}
		if interfere {
			interfere = false
			set(t, in.DB, "k", "1")
		}
		tr.Set([]byte("k"), append(v, '+'))
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 2, runs, "a conflict re-runs the function")
	require.Equal(t, "1+", string(get(t, in.DB, "k")))

	// A non-retryable error from the function stops at once.
	boom := errors.New("boom")
	runs = 0
	err = in.DB.Transact(bg, func(tr kv.Transaction) error {
		runs++
		tr.Set([]byte("k"), []byte("never"))
		return boom
	})
	require.ErrorIs(t, err, boom)
	require.Equal(t, 1, runs)
	require.Equal(t, "1+", string(get(t, in.DB, "k")))

	// A retryable error every time ends at the retry limit.
	runs = 0
	err = in.DB.Transact(bg, func(tr kv.Transaction) error {
		runs++
		return kv.ErrNotCommitted
	})
	require.ErrorIs(t, err, kv.ErrNotCommitted)
	require.Greater(t, runs, 1)
}

func testContextCancellation(t *testing.T, in Instance) {
	ctx, cancel := context.WithCancel(bg)
	tr, err := in.DB.CreateTransaction(ctx)
	require.NoError(t, err)
	defer tr.Cancel()
	cancel()
	_, err = tr.Get([]byte("k"))
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, kv.ErrTransactionCancelled)

	// Transact stops retrying when its context is done.
	ctx, cancel = context.WithTimeout(bg, 50*time.Millisecond)
	defer cancel()
	err = in.DB.Transact(ctx, func(tr kv.Transaction) error { return kv.ErrNotCommitted })
	require.Error(t, err)
}

func testUseAfterEnd(t *testing.T, in Instance) {
	tr := newTr(t, in.DB)
	tr.Set([]byte("k"), []byte("v"))
	require.NoError(t, tr.Commit())
	_, err := tr.Get([]byte("k"))
	require.Error(t, err)
	require.Error(t, tr.Commit())

	tr = newTr(t, in.DB)
	tr.Cancel()
	_, err = tr.Get([]byte("k"))
	require.Error(t, err)
	tr.Set([]byte("x"), []byte("v"))
	require.Error(t, tr.Commit())
	require.Nil(t, get(t, in.DB, "x"))
}

func testErrors(t *testing.T, _ Instance) {
	err := fmt.Errorf("wrapped: %w", kv.Errorf(1020, "detail"))
	require.ErrorIs(t, err, kv.ErrNotCommitted)
	require.Equal(t, 1020, kv.Code(err))
	require.True(t, kv.IsRetryable(err))
	require.True(t, kv.IsRetryableNotCommitted(err))
	require.True(t, kv.IsMaybeCommitted(kv.ErrCommitUnknownResult))
	require.False(t, kv.IsRetryableNotCommitted(kv.ErrCommitUnknownResult))
	require.True(t, kv.IsRetryable(kv.ErrTransactionTooOld))
	require.False(t, kv.IsRetryable(kv.ErrTransactionTimedOut))
	require.False(t, kv.IsRetryable(errors.New("other")))
	require.Contains(t, kv.ErrKeyTooLarge.Error(), "2102")
	require.Contains(t, kv.ErrKeyTooLarge.Error(), "10,000")
}

// testIteratorsInterleaved: range reads open at once in one transaction
// advance independently, whichever ends first and however (a range of no
// keys, a range holding none, a limit, the end of its range), and each
// records its own read conflict.
func testIteratorsInterleaved(t *testing.T, in Instance) {
	db := in.DB
	set(t, db, "a/1", "1", "a/2", "2", "a/3", "3", "b/1", "1", "b/2", "2")
	tr, err := db.CreateTransaction(bg)
	require.NoError(t, err)
	defer tr.Cancel()
	a := tr.GetRange(kv.PrefixRange([]byte("a/")), kv.RangeOptions{})
	none := tr.GetRange(kv.Range{Begin: []byte("m"), End: []byte("m")}, kv.RangeOptions{})
	empty := tr.GetRange(kv.PrefixRange([]byte("none/")), kv.RangeOptions{})
	b := tr.GetRange(kv.PrefixRange([]byte("b/")), kv.RangeOptions{Limit: 1})
	var got []string
	require.True(t, a.Next())
	got = append(got, string(a.KeyValue().Key))
	require.False(t, none.Next(), "a range of no keys ends first")
	require.NoError(t, none.Err())
	require.False(t, empty.Next(), "a range holding no key ends next")
	require.NoError(t, empty.Err())
	require.True(t, b.Next())
	got = append(got, string(b.KeyValue().Key))
	for a.Next() {
		got = append(got, string(a.KeyValue().Key))
	}
	require.False(t, b.Next(), "limit 1")
	require.NoError(t, a.Err())
	require.NoError(t, b.Err())
	require.Equal(t, []string{"a/1", "b/1", "a/2", "a/3"}, got)

	// Each iterator's read conflicts: a write under a/ conflicts, one to
	// b/2 (past b's limit) or under none/ (read empty) does not... except
	// that none/ was read entirely, so a write there conflicts too.
	tr.Set([]byte("mine"), []byte("x"))
	set(t, db, "b/2", "changed")
	require.NoError(t, tr.Commit(), "b/2 was past b's limit")

	for _, key := range []string{"a/9", "none/1"} {
		tr, err := db.CreateTransaction(bg)
		require.NoError(t, err)
		a := tr.GetRange(kv.PrefixRange([]byte("a/")), kv.RangeOptions{})
		empty := tr.GetRange(kv.PrefixRange([]byte("none/")), kv.RangeOptions{})
		require.True(t, a.Next())
		require.False(t, empty.Next())
		for a.Next() {
		}
		require.NoError(t, a.Err())
		tr.Set([]byte("mine"), []byte("x"))
		set(t, db, key, "new")
		require.Equal(t, kv.CodeNotCommitted, kv.Code(tr.Commit()), "a write to %s conflicts", key)
		tr.Cancel()
	}
}
