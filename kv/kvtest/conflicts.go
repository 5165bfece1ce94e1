package kvtest

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// The contract of isolation and conflicts: snapshot reads, serializable
// reads and the conflict ranges they record (exactly what was read),
// explicit conflict ranges, and the commits that never conflict.

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

	// A write conflict range, where the engine takes one, makes readers
	// of any key in it conflict, and of none outside it.
	probe := newTr(t, in.DB)
	if !kv.CanAddWriteConflictRange(probe) {
		require.ErrorIs(t, kv.AddWriteConflictRange(probe, kv.Range{Begin: []byte("r/a"), End: []byte("r/c")}), &kv.Error{Code: kv.CodeClientInvalidOperation})
		return
	}
	require.True(t, kv.CanAddWriteConflictRange(probe.Snapshot()), "a snapshot view says what its transaction does")
	for _, c := range []struct {
		key      string
		conflict bool
	}{{"r/a", true}, {"r/b", true}, {"r/bzz", true}, {"r/c", false}, {"r/", false}} {
		reader := newTr(t, in.DB)
		_, err := reader.Get([]byte(c.key))
		require.NoError(t, err)
		writer := newTr(t, in.DB)
		require.NoError(t, kv.AddWriteConflictRange(writer, kv.Range{Begin: []byte("r/a"), End: []byte("r/c")}))
		require.NoError(t, writer.Commit())
		reader.Set([]byte("out"), []byte("1"))
		if c.conflict {
			require.ErrorIs(t, reader.Commit(), kv.ErrNotCommitted, c.key)
		} else {
			require.NoError(t, reader.Commit(), c.key)
		}
	}
	require.Empty(t, rangeKeys(t, newTr(t, in.DB), "r/", "r0", kv.RangeOptions{}), "a write conflict range writes nothing")
	// Nor does it conflict with a reader through the snapshot, or one
	// that began after it committed.
	snapReader := newTr(t, in.DB)
	_, err = snapReader.Snapshot().Get([]byte("r/b"))
	require.NoError(t, err)
	ranger := newTr(t, in.DB)
	require.NoError(t, kv.AddWriteConflictRange(ranger, kv.Range{Begin: []byte("r/a"), End: []byte("r/c")}))
	require.NoError(t, ranger.Commit())
	laterReader := newTr(t, in.DB)
	_, err = laterReader.Get([]byte("r/b"))
	require.NoError(t, err)
	for _, tr := range []kv.Transaction{snapReader, laterReader} {
		tr.Set([]byte("out"), []byte("2"))
		require.NoError(t, tr.Commit())
	}
	inverted := newTr(t, in.DB)
	require.Equal(t, kv.CodeInvertedRange, kv.Code(kv.AddWriteConflictRange(inverted, kv.Range{Begin: []byte("r/c"), End: []byte("r/a")})))
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
