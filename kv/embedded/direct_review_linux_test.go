package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/internal/crashtest"
	"github.com/fdbqueue/fdbqueue/kv"
)

// directCommitKey and directCommitValue are commit i's key j and its
// value: the value says which key it is, so a damaged one shows.
func directCommitKey(i, j int) []byte { return fmt.Appendf(nil, "c%05d/%04d", i, j) }

func directCommitValue(rng *rand.Rand, i, j, size int) []byte {
	v := fmt.Appendf(nil, "%d/%d:", i, j)
	for len(v) < size {
		v = append(v, byte('a'+rng.IntN(26)))
	}
	return v
}

// directCommitsIn reads a database written by directCommitKey's commits
// and returns how many of them it holds, checking that they are commits
// 0 to n-1, each whole, with the values want recorded.
func directCommitsIn(t *testing.T, db *DB, want [][][]byte) int {
	t.Helper()
	var kvs []kv.KeyValue
	require.NoError(t, db.ReadTransact(context.Background(), func(tr kv.ReadTransaction) error {
		var err error
		kvs, err = kv.Collect(tr.GetRange(kv.Range{Begin: []byte("c"), End: []byte("d")}, kv.RangeOptions{}))
		return err
	}))
	n, j := 0, 0
	for _, e := range kvs {
		if j == len(want[n]) {
			n, j = n+1, 0
		}
		require.Less(t, n, len(want), "a key no commit wrote: %q", e.Key)
		require.Equal(t, string(directCommitKey(n, j)), string(e.Key), "commit %d is not whole", n)
		require.True(t, bytes.Equal(want[n][j], e.Value), "commit %d's key %d has another value", n, j)
		j++
	}
	if len(kvs) > 0 {
		require.Equal(t, len(want[n]), j, "commit %d is not whole", n)
		n++
	}
	return n
}

// TestReviewDirectCrashImages: the log segment, after every commit of a
// random mix (lone commits of one key, of many blocks, larger than a
// chunk, groups staged while they are written, segments started by
// checkpoints, and turns through the page cache where direct I/O is
// "refused"), keeps every byte of the records before unchanged, and is
// zero after its end. The files a crash leaves anywhere in a commit's
// write (the segment cut inside the write, or the write torn: each 512
// bytes as before or as after it) recover every commit acknowledged
// before, intact, and the one written all or nothing.
func TestReviewDirectCrashImages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	cfg := FileConfig{CheckpointBytes: 1 << 40}
	db, err := OpenFile(dir, cfg)
	require.NoError(t, err)
	defer db.Close()
	rng := rand.New(rand.NewPCG(7, 11))
	var want [][][]byte
	commit := func(keys, size int) {
		i := len(want)
		vals := make([][]byte, keys)
		for j := range vals {
			vals[j] = directCommitValue(rng, i, j, size)
		}
		require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
			for j, v := range vals {
				tr.Set(directCommitKey(i, j), v)
			}
			return nil
		}))
		want = append(want, vals)
	}
	sawDirect := false
	var before []byte // the segment as the last commit left it
	seg := db.s.log.seg
	for step := range 180 {
		// What to do before this commit.
		switch r := rng.IntN(25); {
		case r == 0:
			require.NoError(t, db.Checkpoint()) // a new segment
		case r == 1:
			seg.sys.close() // refused: the page cache's for a while
		case r <= 4:
			if seg.sys.direct < 0 {
				seg.sys.directTried = false // and direct again
			}
		}
		if db.s.log.seg != seg {
			seg, before = db.s.log.seg, nil
		}
		prevOff := seg.off
		switch r := rng.IntN(20); {
		case r == 0:
			commit(100, 1+rng.IntN(300)) // staged while written
		case r == 1:
			commit(8+rng.IntN(8), 90_000+rng.IntN(9_000)) // a chunk or more
		case r <= 5:
			commit(1+rng.IntN(4), 1+rng.IntN(9000)) // blocks
		default:
			commit(1, 1+rng.IntN(300))
		}
		require.Same(t, seg, db.s.log.seg)
		sawDirect = sawDirect || seg.sys.direct >= 0
		after, err := os.ReadFile(seg.f.Name())
		require.NoError(t, err)
		require.Zero(t, len(after)%segChunk, "reserved space ends on a chunk's boundary")
		require.True(t, zeroTail(after[seg.off:]), "step %d: the space after the records is zero", step)
		if before != nil {
			require.True(t, bytes.Equal(before[:prevOff], after[:prevOff]),
				"step %d: the write changed the records before it (%d bytes, direct %v)", step, prevOff, seg.sys.direct >= 0)
		}

		// Crash images of this commit's write: the files of the
		// directory, the segment as the write may leave it.
		if before != nil && step%4 == 0 {
			old := make([]byte, len(after))
			copy(old, before) // a chunk reserved for the write: zeros
			images := [][]byte{}
			cut := prevOff + rng.Int64N(seg.off-prevOff)
			images = append(images, append(append([]byte(nil), after[:cut]...), old[cut:]...))
			torn := append([]byte(nil), after...)
			for s := prevOff &^ 511; s < seg.off; s += 512 {
				if rng.IntN(2) == 0 {
					copy(torn[s:s+512], old[s:s+512])
				}
			}
			images = append(images, torn)
			for _, img := range images {
				crashed := t.TempDir()
				names, err := filepath.Glob(filepath.Join(dir, "*"))
				require.NoError(t, err)
				for _, name := range names {
					base := filepath.Base(name)
					if base == "LOCK" || strings.HasSuffix(base, ".tmp") {
						continue
					}
					data := img
					if name != seg.f.Name() {
						data, err = os.ReadFile(name)
						require.NoError(t, err)
					}
					require.NoError(t, os.WriteFile(filepath.Join(crashed, base), data, 0o600))
				}
				again, err := OpenFile(crashed, cfg)
				require.NoError(t, err)
				n := directCommitsIn(t, again, want)
				require.NoError(t, again.Close())
				require.Contains(t, []int{len(want) - 1, len(want)}, n,
					"step %d: a crash in a commit's write keeps the commits before, and that one all or nothing", step)
			}
		}
		before = after
	}
	if !sawDirect {
		t.Skip("no direct I/O here")
	}
	require.Equal(t, len(want), directCommitsIn(t, db, want))
}

// directValue is the value of writer g's commit n's key j: its size
// varies, so that records end anywhere in a block.
func directValue(g, n, j int) []byte {
	v := fmt.Appendf(nil, "%d/%d/%d;", g, n, j)
	return append(v, bytes.Repeat([]byte{byte('a' + (g+n+j)%26)}, (n*131+j*17)%3000)...)
}

func directKey(g, n, j int) []byte { return fmt.Appendf(nil, "g%d/%06d/%03d", g, n, j) }

// TestReviewDirectReadWhileWritten: the log read through the page cache
// while writers commit (direct, lone and grouped, some staged while
// written), as a process that takes a database over after a kill reads
// it, holds every commit acknowledged before the read began, intact.
func TestReviewDirectReadWhileWritten(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	cfg := FileConfig{CheckpointBytes: 1 << 40}
	db, err := OpenFile(dir, cfg)
	require.NoError(t, err)
	defer db.Close()
	name := db.s.log.seg.f.Name()
	const writers = 4
	var acked [writers]atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; !stop.Load() && n < 400; n++ {
				keys := 1
				if n%9 == 4 {
					keys = 70 // staged while written
				}
				if err := db.Transact(ctx, func(tr kv.Transaction) error {
					for j := range keys {
						tr.Set(directKey(g, n, j), directValue(g, n, j))
					}
					return nil
				}); err != nil {
					errs <- err
					return
				}
				acked[g].Store(int64(n + 1))
			}
		}()
	}
	for round := 0; round < 12; round++ {
		var floor [writers]int64
		for g := range floor {
			floor[g] = acked[g].Load()
		}
		data, err := os.ReadFile(name)
		require.NoError(t, err)
		crashed := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(crashed, filepath.Base(name)), data, 0o600))
		again, err := OpenFile(crashed, cfg)
		require.NoError(t, err)
		require.NoError(t, again.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
			for g := range writers {
				for n := range int(floor[g]) {
					keys := 1
					if n%9 == 4 {
						keys = 70
					}
					for j := range keys {
						v, err := tr.Get(directKey(g, n, j))
						require.NoError(t, err)
						require.Equal(t, directValue(g, n, j), v, "round %d: writer %d's commit %d (of %d acknowledged) key %d", round, g, n, floor[g], j)
					}
				}
			}
			return nil
		}))
		require.NoError(t, again.Close())
		t.Logf("round %d: read with %v commits acknowledged", round, floor)
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// fdsUnder counts this process's descriptors open on files in dir.
func fdsUnder(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	n := 0
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && strings.HasPrefix(target, dir+string(filepath.Separator)) {
			n++
		}
	}
	return n
}

// TestReviewDirectDescriptorsClose: the direct descriptor of a segment
// closes with it, when a checkpoint starts a new segment and when the
// database closes, also after the log failed.
func TestReviewDirectDescriptorsClose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	set := func(db *DB, k string) error {
		return db.Transact(ctx, func(tr kv.Transaction) error {
			tr.Set([]byte(k), []byte("v"))
			return nil
		})
	}
	for cycle := range 6 {
		db, err := OpenFile(dir, FileConfig{})
		require.NoError(t, err)
		require.NoError(t, set(db, "a"))
		direct := db.s.log.seg.sys.direct >= 0
		open := fdsUnder(t, dir)
		for range 3 {
			require.NoError(t, db.Checkpoint())
			require.NoError(t, set(db, "b"))
			require.Equal(t, open, fdsUnder(t, dir), "cycle %d: a checkpoint's new segment leaves no descriptor behind (direct %v)", cycle, direct)
		}
		if cycle%2 == 1 {
			// The log fails on a direct write (EBADF: the direct
			// descriptor now reads only).
			ro, err := os.Open(db.s.log.seg.f.Name())
			require.NoError(t, err)
			for _, fd := range segmentFds(db.s.log.seg) {
				require.NoError(t, syscall.Dup3(int(ro.Fd()), fd, 0))
			}
			require.NoError(t, ro.Close())
			require.ErrorIs(t, set(db, "c"), ErrFailed)
		}
		_ = db.Close()
		require.Zero(t, fdsUnder(t, dir), "cycle %d: every descriptor closes with the database", cycle)
	}
}

// TestReviewDirectRefusedFallsBack: a direct read or write that the
// system refuses (EINVAL: here the buffer is misaligned) is made through
// the page cache, and the commit succeeds, intact; one that fails
// otherwise (EBADF: the direct descriptor reads only) fails the log, and
// the commits before it are there after a reopen.
func TestReviewDirectRefusedFallsBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	db, err := OpenFile(dir, FileConfig{CheckpointBytes: 1 << 40})
	require.NoError(t, err)
	defer func() { _ = db.Close() }()
	n := 0
	set := func() error {
		n++
		return db.Transact(ctx, func(tr kv.Transaction) error {
			tr.Set(fmt.Appendf(nil, "k%04d", n), bytes.Repeat([]byte{byte(n)}, 700))
			return nil
		})
	}
	require.NoError(t, set())
	seg := db.s.log.seg
	if seg.sys.direct < 0 {
		t.Skip("no direct I/O here")
	}
	misalign := func(keepTail bool) {
		y := &seg.sys
		raw := make([]byte, segChunk+2*int(y.align))
		skip := int(-uintptr(unsafe.Pointer(&raw[0])) & uintptr(y.align-1))
		skip++ // one byte past an aligned address
		b := raw[skip : skip+segChunk : skip+segChunk]
		if keepTail && y.tailLen > 0 {
			copy(b, y.blk[:y.tailLen])
		} else {
			y.tailLen = -1
		}
		y.blk = b
	}

	// The tail read back into a misaligned buffer: refused.
	misalign(false)
	require.NoError(t, set())
	require.Equal(t, -1, seg.sys.direct, "a refused read closes the direct descriptor")
	require.NoError(t, set())

	// Direct again (from an aligned buffer); the write from a
	// misaligned one: refused.
	seg.sys.directTried, seg.sys.blk, seg.sys.tailLen = false, nil, -1
	require.NoError(t, set())
	require.GreaterOrEqual(t, seg.sys.direct, 0)
	misalign(true)
	require.NoError(t, set())
	require.Equal(t, -1, seg.sys.direct, "a refused write closes the direct descriptor")
	require.NoError(t, set())

	// Direct again; then the direct descriptor fails a write.
	seg.sys.directTried, seg.sys.blk, seg.sys.tailLen = false, nil, -1
	require.NoError(t, set())
	require.GreaterOrEqual(t, seg.sys.direct, 0)
	acked := n
	ro, err := os.Open(seg.f.Name())
	require.NoError(t, err)
	require.NoError(t, syscall.Dup3(int(ro.Fd()), seg.sys.direct, 0))
	require.NoError(t, ro.Close())
	err = set()
	require.ErrorIs(t, err, ErrFailed)
	require.ErrorIs(t, err, syscall.EBADF)
	require.True(t, kv.IsMaybeCommitted(err), "got %v", err)
	require.ErrorIs(t, set(), ErrFailed)
	_ = db.Close()

	db, err = OpenFile(dir, FileConfig{})
	require.NoError(t, err)
	require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		kvs, err := kv.Collect(tr.GetRange(kv.Range{Begin: []byte("k"), End: []byte("l")}, kv.RangeOptions{}))
		require.NoError(t, err)
		require.Len(t, kvs, acked)
		for i, e := range kvs {
			require.Equal(t, fmt.Sprintf("k%04d", i+1), string(e.Key))
			require.Equal(t, bytes.Repeat([]byte{byte(i + 1)}, 700), e.Value)
		}
		return nil
	}))
}

// TestReviewDirectGroupWriteErrorHidesTheGroup: a group staged while its
// records are written (stageMin writes or more), whose write fails
// (ENOSPC), fails as maybe committed and is never readable, though the
// tree took it; the commits after fail; the database reopens without it.
func TestReviewDirectGroupWriteErrorHidesTheGroup(t *testing.T) {
	t.Parallel()
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full:", err)
	}
	defer full.Close()
	ctx := context.Background()
	dir := t.TempDir()
	db, err := OpenFile(dir, FileConfig{})
	require.NoError(t, err)
	set := func(db *DB, prefix string, keys int) error {
		return db.Transact(ctx, func(tr kv.Transaction) error {
			for j := range keys {
				tr.Set(fmt.Appendf(nil, "%s/%03d", prefix, j), []byte(prefix))
			}
			return nil
		})
	}
	require.NoError(t, set(db, "before", 1))
	for _, fd := range segmentFds(db.s.log.seg) {
		require.NoError(t, syscall.Dup3(int(full.Fd()), fd, 0))
	}
	err = set(db, "group", 2*stageMin)
	require.ErrorIs(t, err, ErrFailed)
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.True(t, kv.IsMaybeCommitted(err), "got %v", err)
	require.ErrorIs(t, set(db, "after", 1), ErrFailed)
	read := func(db *DB) []kv.KeyValue {
		var kvs []kv.KeyValue
		require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
			var err error
			kvs, err = kv.Collect(tr.GetRange(kv.Range{Begin: []byte("a"), End: []byte("z")}, kv.RangeOptions{}))
			return err
		}))
		return kvs
	}
	want := []kv.KeyValue{{Key: []byte("before/000"), Value: []byte("before")}}
	require.Equal(t, want, read(db), "the failed group is not readable")
	_ = db.Close()

	db, err = OpenFile(dir, FileConfig{})
	require.NoError(t, err)
	defer db.Close()
	require.Equal(t, want, read(db))
	require.NoError(t, set(db, "reopened", stageMin))
}

// TestReviewDirectLargeBufferNotKept: the direct writes' buffer of a
// write larger than a chunk is not kept once the write returns (a
// database that goes idle after one large commit would hold it), and the
// next commit, read back or not, finds the records before intact.
func TestReviewDirectLargeBufferNotKept(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	cfg := FileConfig{CheckpointBytes: 1 << 40}
	db, err := OpenFile(dir, cfg)
	require.NoError(t, err)
	defer db.Close()
	seg := db.s.log.seg
	commit := func(keys int) {
		require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
			for j := range keys {
				tr.Set(fmt.Appendf(nil, "k%03d/%03d", keys, j), bytes.Repeat([]byte{byte(j)}, 95_000))
			}
			return nil
		}))
	}
	commit(1)
	if seg.sys.direct < 0 {
		t.Skip("no direct I/O here")
	}
	commit(30) // about 2.8 MB: one write past a chunk
	require.GreaterOrEqual(t, seg.sys.direct, 0)
	require.LessOrEqual(t, cap(seg.sys.blk), segChunk, "the large write's buffer is not kept")
	commit(2)
	require.NoError(t, db.Close())

	again, err := OpenFile(dir, cfg)
	require.NoError(t, err)
	defer again.Close()
	require.NoError(t, again.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		kvs, err := kv.Collect(tr.GetRange(kv.Range{Begin: []byte("k"), End: []byte("l")}, kv.RangeOptions{}))
		require.NoError(t, err)
		require.Len(t, kvs, 1+30+2)
		return nil
	}))
}

// killWindow is how many commits TestReviewDirectKill keeps: commit n
// clears commit n-killWindow's keys.
const killWindow = 20

// killShape is commit n's keys and value size in TestReviewDirectKill: lone
// commits of one key, of many blocks, past a chunk, and groups staged
// while they are written.
func killShape(n uint64) (keys, size int) {
	switch {
	case n%23 == 5:
		return 12, 90_000
	case n%7 == 3:
		return 2 * stageMin, 1 + int(n*37%200)
	case n%5 == 1:
		return 2, 1 + int(n*97%7000)
	}
	return 1, 1 + int(n*13%400)
}

func killKey(n uint64, j int) []byte { return fmt.Appendf(nil, "c%09d/%03d", n, j) }

func killValue(n uint64, j, size int) []byte {
	v := fmt.Appendf(nil, "%d/%d;", n, j)
	return append(v, bytes.Repeat([]byte{byte('a' + (int(n)+j)%26)}, size)...)
}

func killChild(dir string) {
	fail := func(err error) {
		fmt.Println("error", err)
		os.Exit(2)
	}
	db, err := OpenFile(dir, FileConfig{})
	if err != nil {
		fail(err)
	}
	n, err := crashtest.Last(db)
	if err != nil {
		fail(err)
	}
	fmt.Println("ready")
	for {
		n++
		keys, size := killShape(n)
		if err := db.Transact(context.Background(), func(tr kv.Transaction) error {
			for j := range keys {
				tr.Set(killKey(n, j), killValue(n, j, size))
			}
			if n > killWindow {
				tr.ClearRange(kv.Range{Begin: killKey(n-killWindow, 0), End: killKey(n-killWindow+1, 0)})
			}
			tr.Set([]byte("last"), binary.LittleEndian.AppendUint64(nil, n))
			return nil
		}); err != nil {
			fail(err)
		}
		fmt.Println("ack", n)
	}
}

// TestReviewDirectKill kills (SIGKILL) a process that commits a mix of
// lone commits (written direct), commits past a chunk and groups staged
// while written, with checkpoints starting new segments, at a random
// moment; every acknowledged commit is there after a reopen, intact.
func TestReviewDirectKill(t *testing.T) {
	if dir := os.Getenv("FDBQUEUE_DIRECT_KILL_CHILD"); dir != "" {
		killChild(dir)
		return
	}
	t.Parallel()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(5, 9))
	var acked uint64
	for round := range crashtest.Rounds(8) {
		child := crashtest.Start(t, "TestReviewDirectKill", "FDBQUEUE_DIRECT_KILL_CHILD="+dir)
		acked = child.ReadAcks(t, acked, time.Duration(20+rng.IntN(200))*time.Millisecond)
		_ = child.Wait()

		db, err := OpenFile(dir, FileConfig{})
		require.NoError(t, err)
		last, err := crashtest.Last(db)
		require.NoError(t, err)
		require.Contains(t, []uint64{acked, acked + 1}, last, "round %d: acknowledged %d", round, acked)
		acked = last
		require.NoError(t, db.ReadTransact(context.Background(), func(tr kv.ReadTransaction) error {
			kvs, err := kv.Collect(tr.GetRange(kv.Range{Begin: []byte("c"), End: []byte("d")}, kv.RangeOptions{}))
			require.NoError(t, err)
			want := 0
			for n := last; n > 0 && n+killWindow > last; n-- {
				keys, _ := killShape(n)
				want += keys
			}
			require.Len(t, kvs, want, "round %d: the last %d commits of %d", round, killWindow, last)
			for _, e := range kvs {
				var n uint64
				var j int
				_, err := fmt.Sscanf(string(e.Key), "c%09d/%03d", &n, &j)
				require.NoError(t, err)
				_, size := killShape(n)
				require.Equal(t, killValue(n, j, size), e.Value, "round %d: commit %d key %d", round, n, j)
			}
			return nil
		}))
		t.Logf("round %d: %d commits, %+v", round, last, db.Recovery())
		require.NoError(t, db.Close())
	}
}

// TestReviewDirectConcurrentRollovers: writers commit lone commits and
// groups staged while written, concurrently, while checkpoints start new
// segments every few hundred KB; every acknowledged commit reads back
// before and after a reopen.
func TestReviewDirectConcurrentRollovers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	cfg := FileConfig{CheckpointBytes: 256 << 10}
	db, err := OpenFile(dir, cfg)
	require.NoError(t, err)
	const writers, commits, keep = 4, 150, 10
	keysOf := func(n int) int {
		if n%6 == 2 {
			return stageMin + 6
		}
		return 1
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range commits {
				if err := db.Transact(ctx, func(tr kv.Transaction) error {
					for j := range keysOf(n) {
						tr.Set(directKey(g, n, j), directValue(g, n, j))
					}
					if n >= keep { // the live data stays small: checkpoints are due
						tr.ClearRange(kv.Range{Begin: directKey(g, n-keep, 0), End: directKey(g, n-keep+1, 0)})
					}
					return nil
				}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	check := func(db *DB) {
		require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
			for g := range writers {
				for n := range commits {
					for j := range keysOf(n) {
						v, err := tr.Get(directKey(g, n, j))
						require.NoError(t, err)
						if n < commits-keep {
							require.Nil(t, v, "writer %d's commit %d key %d was cleared", g, n, j)
							continue
						}
						require.Equal(t, directValue(g, n, j), v, "writer %d's commit %d key %d", g, n, j)
					}
				}
			}
			return nil
		}))
	}
	check(db)
	require.NoError(t, db.Close())
	db, err = OpenFile(dir, cfg)
	require.NoError(t, err)
	defer db.Close()
	require.NotZero(t, db.Recovery().CheckpointVersion, "checkpoints ran")
	check(db)
}

// TestReviewDirectShortReadBackFails: a direct write that reads back the
// block holding the log's end and gets fewer bytes than a block (the file
// cut from outside) fails, rather than write the buffer's stale bytes
// over the records before.
func TestReviewDirectShortReadBackFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	db, err := OpenFile(dir, FileConfig{CheckpointBytes: 1 << 40})
	require.NoError(t, err)
	defer func() { _ = db.Close() }()
	set := func(k string) error {
		return db.Transact(ctx, func(tr kv.Transaction) error {
			tr.Set([]byte(k), bytes.Repeat([]byte{'v'}, 300))
			return nil
		})
	}
	require.NoError(t, set("a"))
	seg := db.s.log.seg
	if seg.sys.direct < 0 {
		t.Skip("no direct I/O here")
	}
	require.NotZero(t, seg.off%seg.sys.align, "the log's end is inside a block")
	// The kept tail forgotten, the buffer scribbled on, the file cut just
	// before the log's end: the read-back comes short.
	seg.sys.tailLen = -1
	for i := range seg.sys.blk {
		seg.sys.blk[i] = 0xaa
	}
	require.NoError(t, os.Truncate(seg.f.Name(), seg.off-1))
	require.Error(t, set("b"), "a commit wrote over a short read-back")
}
