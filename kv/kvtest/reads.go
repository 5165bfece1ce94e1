package kvtest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// The contract of reads: key order, range limits, reverse and streaming
// reads, read-your-writes, kv.First and kv.GetMany, and range reads open
// together.

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
		// Inside the range that was read, a value it did not hold: an
		// engine may leave out of its checks a write that changes nothing.
		set(t, in.DB, "r/0", fmt.Sprint("y", reverse))
		tr.Set([]byte("out"), []byte("1"))
		require.ErrorIs(t, tr.Commit(), kv.ErrNotCommitted, "reverse=%v", reverse)
	}
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
