package embedded

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// segmentFds returns the descriptors the segment writes through: its
// file's, and the one its direct writes take, if it has one.
func segmentFds(seg *segment) []int {
	fds := []int{seg.sys.fd}
	if seg.sys.direct >= 0 {
		fds = append(fds, seg.sys.direct)
	}
	return fds
}

// TestFileLoneCommitWritesSynced: a lone client's commit writes and syncs
// its record in one call (pwritev2 with RWF_DSYNC), which makes only its
// own bytes durable; so the commit whose record does not fit in the
// segment's reserved space reserves another chunk of zeros and syncs the
// whole file first, then takes the one call too. Every commit is there
// after a reopen.
func TestFileLoneCommitWritesSynced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	db, err := OpenFile(dir, FileConfig{})
	require.NoError(t, err)
	seg := db.s.log.seg
	if seg.sys.noDsync {
		t.Skip("no pwritev2 with RWF_DSYNC here")
	}
	set := func(k string, vals, size int) {
		require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
			for i := range vals {
				tr.Set(fmt.Appendf(nil, "%s/%d", k, i), make([]byte, size))
			}
			return nil
		}))
	}
	for i := range 5 {
		set(fmt.Sprint("small", i), 1, 10)
	}
	if seg.sys.noDsync {
		t.Skip("this file system refuses RWF_DSYNC")
	}
	require.Equal(t, 5, seg.sys.dsyncs, "a lone commit's write and sync are one call")

	// A record larger than what is left of the chunk: another is reserved.
	alloc := seg.alloc
	set("large", 20, kv.MaxValueSize-100)
	require.Greater(t, seg.alloc, alloc, "a chunk was reserved")
	require.Zero(t, seg.alloc%segChunk, "reserved space ends on a chunk's boundary")
	require.Equal(t, 6, seg.sys.dsyncs, "the commit that reserved a chunk writes in one call too")

	set("after", 1, 10)
	require.Equal(t, 7, seg.sys.dsyncs)
	require.NoError(t, db.Close())

	db, err = OpenFile(dir, FileConfig{})
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		kvs, err := kv.Collect(tr.GetRange(kv.Range{Begin: []byte("a"), End: []byte("z")}, kv.RangeOptions{}))
		require.NoError(t, err)
		require.Len(t, kvs, 5+20+1)
		return nil
	}))
}

// TestFileWriteSyncedErrorFailsTheLog: an error from the lone commit's
// pwritev2 other than "no RWF_DSYNC here" (ESPIPE here: the segment's
// descriptor is made a pipe's) fails the log as an fsync error does: the
// commit is maybe committed and never readable, the write is not tried
// again the other way (after an error from a write that syncs, a retried
// write and fdatasync may succeed with the data lost), every commit after
// fails, and the database reopens.
func TestFileWriteSyncedErrorFailsTheLog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	db, err := OpenFile(dir, FileConfig{})
	require.NoError(t, err)
	set := func(db *DB, k string) error {
		return db.Transact(ctx, func(tr kv.Transaction) error {
			tr.Set([]byte(k), []byte("v"))
			return nil
		})
	}
	require.NoError(t, set(db, "before"))
	seg := db.s.log.seg
	if seg.sys.noDsync {
		t.Skip("no pwritev2 with RWF_DSYNC here")
	}
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	for _, fd := range segmentFds(seg) {
		require.NoError(t, syscall.Dup3(int(w.Fd()), fd, 0))
	}

	err = set(db, "lost")
	require.ErrorIs(t, err, ErrFailed)
	require.ErrorIs(t, err, syscall.ESPIPE)
	require.ErrorContains(t, err, "pwritev2", "the error is the synced write's, not a retry's")
	require.NotContains(t, err.Error(), "fdatasync", "not a retry's")
	require.True(t, kv.IsMaybeCommitted(err), "got %v", err)
	require.False(t, seg.sys.noDsync)
	require.ErrorIs(t, set(db, "after"), ErrFailed)
	require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		kvs, err := kv.Collect(tr.GetRange(kv.Range{Begin: []byte("a"), End: []byte("z")}, kv.RangeOptions{}))
		require.NoError(t, err)
		require.Equal(t, []kv.KeyValue{{Key: []byte("before"), Value: []byte("v")}}, kvs)
		return nil
	}))
	_ = db.Close()

	db, err = OpenFile(dir, FileConfig{})
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, set(db, "reopened"))
}

// TestFileDirectWritesKeepTheRecordsBefore: a direct write rewrites the
// whole block that holds the end of the records, so it must carry the
// records already in it, whether the segment kept them from its last
// direct write or has to read them back: a segment's first write (after
// its header), and the first after writes that took the page cache (here
// the file system "refuses" direct I/O for a while). Commits of many
// sizes end anywhere in a block, span blocks and chunks, and include one
// staged while it is written (100 keys); every one is there, intact, in
// the log as a crash leaves it.
func TestFileDirectWritesKeepTheRecordsBefore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	cfg := FileConfig{CheckpointBytes: 1 << 40} // the log holds every commit
	db, err := OpenFile(dir, cfg)
	require.NoError(t, err)
	defer db.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	want := map[string][]byte{}
	commit := func(keys int) {
		require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
			for range keys {
				k := fmt.Sprintf("k%06d", len(want))
				v := make([]byte, 1+rng.IntN(6000))
				for i := range v {
					v[i] = byte(rng.Uint32())
				}
				tr.Set([]byte(k), v)
				want[k] = v
			}
			return nil
		}))
	}
	for range 150 {
		commit(1)
	}
	seg := db.s.log.seg
	if seg.sys.direct < 0 {
		t.Skip("no direct I/O here")
	}
	commit(100)
	seg.sys.close() // refused: the page cache's from now on
	for range 20 {
		commit(1)
	}
	require.Equal(t, -1, seg.sys.direct)
	seg.sys.directTried = false // and direct again
	for range 150 {
		commit(1)
	}
	require.GreaterOrEqual(t, seg.sys.direct, 0)
	require.Greater(t, seg.alloc, int64(segChunk), "the records span chunks")

	// The files as a crash would leave them (Close could checkpoint).
	crashed := t.TempDir()
	names, err := filepath.Glob(filepath.Join(dir, "wal-*.log"))
	require.NoError(t, err)
	require.Len(t, names, 1)
	data, err := os.ReadFile(names[0])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(crashed, filepath.Base(names[0])), data, 0o600))
	again, err := OpenFile(crashed, cfg)
	require.NoError(t, err)
	defer again.Close()
	require.Zero(t, again.Recovery().TornBytes, "no record was damaged")
	require.Equal(t, 150+1+20+150, again.Recovery().Records)
	got := map[string][]byte{}
	require.NoError(t, again.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		kvs, err := kv.Collect(tr.GetRange(kv.Range{Begin: []byte("k"), End: []byte("l")}, kv.RangeOptions{}))
		for _, e := range kvs {
			got[string(e.Key)] = e.Value
		}
		return err
	}))
	require.Equal(t, len(want), len(got))
	for k, v := range want {
		require.Equal(t, v, got[k], k)
	}
}

// BenchmarkLoneCommitDirect compares a lone client's durable commits
// written direct (segment.writeDirect) and through the page cache, on two
// databases in the same directory, one commit on each in turn, so that
// both meet the same disk: it reports each way's median and 90th
// percentile commit time. On a shared machine whose disk's latency moves
// from second to second, runs of one way and then the other compare the
// disk's moods more than the two ways. keys=100 commits are staged while
// their write and fsync run (wal.commitGroup).
func BenchmarkLoneCommitDirect(b *testing.B) {
	for _, keys := range []int{1, 100} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) { benchLoneCommitDirect(b, keys) })
	}
}

func benchLoneCommitDirect(b *testing.B, keys int) {
	ctx := context.Background()
	dir := b.TempDir()
	open := func(name string, direct bool) *DB {
		db, err := OpenFile(filepath.Join(dir, name), FileConfig{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		if !direct {
			db.s.log.seg.sys.directTried = true
		}
		return db
	}
	dbs := []*DB{open("paged", false), open("direct", true)}
	took := [2][]time.Duration{}
	val := make([]byte, 200)
	b.ResetTimer()
	for i := range b.N {
		for j := range dbs {
			k := (i + j) % 2
			start := time.Now()
			if err := dbs[k].Transact(ctx, func(tr kv.Transaction) error {
				for n := range keys {
					tr.Set(fmt.Appendf(nil, "k%09d/%03d", i, n), val)
				}
				return nil
			}); err != nil {
				b.Fatal(err)
			}
			took[k] = append(took[k], time.Since(start))
		}
	}
	b.StopTimer()
	if dbs[1].s.log.seg.sys.direct < 0 {
		b.Skip("no direct I/O here")
	}
	for k, name := range []string{"paged", "direct"} {
		slices.Sort(took[k])
		n := len(took[k])
		b.ReportMetric(float64(took[k][n/2].Microseconds()), name+"-p50-µs")
		b.ReportMetric(float64(took[k][n*9/10].Microseconds()), name+"-p90-µs")
	}
}
