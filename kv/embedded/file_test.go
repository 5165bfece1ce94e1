package embedded_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/kv/kvtest"
)

func TestFileContract(t *testing.T) {
	kvtest.Run(t, func(t *testing.T) kvtest.Instance {
		clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
		db, err := embedded.OpenFile(t.TempDir(), embedded.FileConfig{Config: embedded.Config{Clock: clock.Now, RetryLimit: 5}})
		require.NoError(t, err)
		return kvtest.Instance{DB: db, Advance: clock.Advance}
	})
}

func mustGet(t *testing.T, db kv.Database, key string) []byte {
	t.Helper()
	var v []byte
	require.NoError(t, db.ReadTransact(context.Background(), func(tr kv.ReadTransaction) error {
		var err error
		v, err = tr.Get([]byte(key))
		return err
	}))
	return v
}

func TestFileReopen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	db, err := embedded.OpenFile(dir, embedded.FileConfig{})
	require.NoError(t, err)
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		for i := 0; i < 100; i++ {
			tr.Set([]byte(fmt.Sprintf("k%03d", i)), []byte(fmt.Sprint(i)))
		}
		return nil
	}))
	// Concurrent atomic adds: replay must resolve them in commit order too.
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				_ = db.Transact(ctx, func(tr kv.Transaction) error {
					tr.Add([]byte("n"), 1)
					return nil
				})
			}
		}()
	}
	wg.Wait()
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		tr.ClearRange(kv.Range{Begin: []byte("k010"), End: []byte("k090")})
		tr.Set([]byte("k050"), []byte("after clear"))
		tr.CompareAndClear([]byte("k000"), []byte("0"))
		return nil
	}))
	// BIT_ANDs, two folded into one operation, one on an absent key, and
	// a key they empty that COMPARE_AND_CLEAR drops.
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		tr.BitAnd([]byte("k098"), []byte{0x3f, 0xff}) // "98": 0x39 0x38
		tr.BitAnd([]byte("k098"), []byte{0xf1, 0xff})
		tr.BitAnd([]byte("and"), []byte{0x0f, 0xf0})
		tr.BitAnd([]byte("k097"), []byte{0x00, 0x00})
		tr.CompareAndClear([]byte("k097"), []byte{0x00, 0x00})
		return nil
	}))
	require.NoError(t, db.Close())

	db, err = embedded.OpenFile(dir, embedded.FileConfig{})
	require.NoError(t, err)
	defer db.Close()
	rec := db.Recovery()
	require.Equal(t, 403, rec.Records)
	require.Zero(t, rec.TornBytes)
	require.Equal(t, uint64(400), binary.LittleEndian.Uint64(mustGet(t, db, "n")))
	require.Nil(t, mustGet(t, db, "k000"))
	require.Equal(t, "1", string(mustGet(t, db, "k001")))
	require.Nil(t, mustGet(t, db, "k010"))
	require.Equal(t, "after clear", string(mustGet(t, db, "k050")))
	require.Equal(t, "99", string(mustGet(t, db, "k099")))
	require.Equal(t, []byte{0x31, 0x38}, mustGet(t, db, "k098"))
	require.Equal(t, []byte{0x0f, 0xf0}, mustGet(t, db, "and"))
	require.Nil(t, mustGet(t, db, "k097"))
	st := db.Stats()
	require.Equal(t, st.Keys, st.LiveKeys, "recovery leaves no tombstones")
}

// segments lists the log segments in dir, oldest first.
func segments(t *testing.T, dir string) []string {
	names, err := filepath.Glob(filepath.Join(dir, "wal-*.log"))
	require.NoError(t, err)
	sort.Strings(names)
	return names
}

func TestFileTornAndCorruptTail(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, damage := range []string{"truncate", "garbage", "flip"} {
		dir := t.TempDir()
		db, err := embedded.OpenFile(dir, embedded.FileConfig{})
		require.NoError(t, err)
		for i := 0; i < 10; i++ {
			require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
				tr.Set([]byte(fmt.Sprintf("k%d", i)), []byte("v"))
				return nil
			}))
		}
		require.NoError(t, db.Close())
		segs := segments(t, dir)
		last := segs[len(segs)-1]
		data, err := os.ReadFile(last)
		require.NoError(t, err)
		switch damage {
		case "truncate": // the last record was half written
			data = data[:len(data)-3]
		case "garbage": // a write that never completed left junk
			data = append(data, 0x55, 0x00, 0x00, 0x00, 0xde, 0xad, 0xbe, 0xef, 0x01)
		case "flip": // the last record's payload is corrupt
			data[len(data)-2] ^= 0xff
		}
		require.NoError(t, os.WriteFile(last, data, 0o600))

		db, err = embedded.OpenFile(dir, embedded.FileConfig{})
		require.NoError(t, err, damage)
		rec := db.Recovery()
		require.Positive(t, rec.TornBytes, damage)
		for i := 0; i < 9; i++ {
			require.Equal(t, "v", string(mustGet(t, db, fmt.Sprintf("k%d", i))), damage)
		}
		if damage == "garbage" {
			require.Equal(t, "v", string(mustGet(t, db, "k9")))
		} else {
			require.Nil(t, mustGet(t, db, "k9"), "a damaged record is cut, never replayed as data")
		}
		// The database takes new commits after the cut, and keeps them.
		require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
			tr.Set([]byte("after"), []byte("v"))
			return nil
		}))
		require.NoError(t, db.Close())
		db, err = embedded.OpenFile(dir, embedded.FileConfig{})
		require.NoError(t, err)
		require.Equal(t, "v", string(mustGet(t, db, "after")))
		require.Zero(t, db.Recovery().TornBytes)
		require.NoError(t, db.Close())
	}
}

func TestFileCorruptMiddleSegmentIsAnError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	for round := 0; round < 2; round++ { // each open starts a segment
		db, err := embedded.OpenFile(dir, embedded.FileConfig{})
		require.NoError(t, err)
		require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
			tr.Set([]byte(fmt.Sprint("k", round)), []byte("v"))
			return nil
		}))
		require.NoError(t, db.Close())
	}
	segs := segments(t, dir)
	require.GreaterOrEqual(t, len(segs), 2)
	data, err := os.ReadFile(segs[0])
	require.NoError(t, err)
	data[len(data)-1] ^= 0xff
	require.NoError(t, os.WriteFile(segs[0], data, 0o600))
	_, err = embedded.OpenFile(dir, embedded.FileConfig{})
	require.ErrorContains(t, err, "corrupt")
}

func TestFileFilesArePrivate(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "db")
	db, err := embedded.OpenFile(dir, embedded.FileConfig{})
	require.NoError(t, err)
	defer db.Close()
	info, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), info.Mode().Perm())
	for _, name := range append(segments(t, dir), filepath.Join(dir, "LOCK")) {
		info, err := os.Stat(name)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), name)
	}
}

// TestFileLockedByAnotherProcess runs this test binary as a second process
// that tries to open the same directory.
func TestFileLockedByAnotherProcess(t *testing.T) {
	if dir := os.Getenv("FDBQUEUE_LOCK_CHILD"); dir != "" {
		_, err := embedded.OpenFile(dir, embedded.FileConfig{})
		fmt.Println("child:", err)
		return
	}
	t.Parallel()
	dir := t.TempDir()
	db, err := embedded.OpenFile(dir, embedded.FileConfig{})
	require.NoError(t, err)
	defer db.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^TestFileLockedByAnotherProcess$")
	cmd.Env = append(os.Environ(), "FDBQUEUE_LOCK_CHILD="+dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	require.Contains(t, string(out), "database is locked")
	require.Contains(t, string(out), fmt.Sprintf("locked by process %d", os.Getpid()))

	// In this process, a second open shares the database.
	again, err := embedded.OpenFile(dir, embedded.FileConfig{})
	require.NoError(t, err)
	require.NoError(t, again.Close())
	require.True(t, strings.HasPrefix(dir, "/"))
}

func TestFileCheckpoints(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	// Checkpoint every 8 KiB of log, under concurrent load.
	db, err := embedded.OpenFile(dir, embedded.FileConfig{CheckpointBytes: 8 << 10})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 300; i++ {
				require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
					tr.Set([]byte(fmt.Sprintf("g%d/%04d", g, i)), []byte(strings.Repeat("v", 50)))
					if i > 0 && i%3 == 0 {
						tr.Clear([]byte(fmt.Sprintf("g%d/%04d", g, i-1)))
					}
					tr.Add([]byte("count"), 1)
					return nil
				}))
			}
		}()
	}
	wg.Wait()
	require.NoError(t, db.Checkpoint())
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		tr.Set([]byte("after-checkpoint"), []byte("v"))
		return nil
	}))
	ckpts, _ := filepath.Glob(filepath.Join(dir, "ckpt-*.db"))
	require.Len(t, ckpts, 1, "older checkpoints are deleted")
	require.LessOrEqual(t, len(segments(t, dir)), 2, "segments before the checkpoint are deleted")
	require.NoError(t, db.Close())

	// A checkpoint that never finished is ignored and removed.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ckpt-99999999999999999999.db.tmp"), []byte("junk"), 0o600))

	db, err = embedded.OpenFile(dir, embedded.FileConfig{})
	require.NoError(t, err)
	defer db.Close()
	rec := db.Recovery()
	require.Positive(t, rec.CheckpointVersion)
	require.Equal(t, 1, rec.Records, "only the record after the checkpoint is replayed")
	require.Equal(t, uint64(1200), binary.LittleEndian.Uint64(mustGet(t, db, "count")))
	require.Equal(t, "v", string(mustGet(t, db, "after-checkpoint")))
	var n int
	require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		kvs, err := kv.Collect(tr.GetRange(kv.PrefixRange([]byte("g")), kv.RangeOptions{}))
		n = len(kvs)
		return err
	}))
	require.Equal(t, 4*(300-99), n, "every third key was cleared")
	tmps, _ := filepath.Glob(filepath.Join(dir, "*.tmp"))
	require.Empty(t, tmps)
}

func TestFileReopenWithoutCommits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for i := 0; i < 3; i++ {
		db, err := embedded.OpenFile(dir, embedded.FileConfig{})
		require.NoError(t, err, "open %d", i)
		require.NoError(t, db.Close())
	}
}

// TestFileCrashLeavesReservedSpace: a segment reserves its space ahead of
// its records, so a crash leaves zero bytes after the last record. Recovery
// reads them as the end of the log (not a torn record), keeps every
// commit, and cuts the segment back to its records; a record torn inside
// that space is still a torn record.
func TestFileCrashLeavesReservedSpace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, big := range []bool{false, true} {
		dir := t.TempDir()
		db, err := embedded.OpenFile(dir, embedded.FileConfig{})
		require.NoError(t, err)
		n := 3
		val := []byte("v")
		if big { // past the first reserved chunk, into a second
			n, val = 60, []byte(strings.Repeat("v", 90_000))
		}
		for i := 0; i < n; i++ {
			require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
				tr.Set([]byte(fmt.Sprintf("k%03d", i)), val)
				return nil
			}))
		}
		// The files as a crash now would leave them (the commits are
		// durable): copied while the database is open.
		crashed := t.TempDir()
		segs := segments(t, dir)
		last := filepath.Base(segs[len(segs)-1])
		for _, name := range []string{last} {
			data, err := os.ReadFile(filepath.Join(dir, name))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(crashed, name), data, 0o600))
		}
		require.NoError(t, db.Close())
		info, err := os.Stat(filepath.Join(dir, last))
		require.NoError(t, err)
		records := int(info.Size()) // a clean close cuts the reserved space
		info, err = os.Stat(filepath.Join(crashed, last))
		require.NoError(t, err)
		written := info.Size()

		torn := t.TempDir()
		data, err := os.ReadFile(filepath.Join(crashed, last))
		require.NoError(t, err)
		require.Less(t, records, len(data), "the segment holds reserved space after its records")
		require.Equal(t, strings.Repeat("\x00", len(data)-records), string(data[records:]))
		data[records+5] = 0x42 // a record whose start reached the disk, its rest not
		require.NoError(t, os.WriteFile(filepath.Join(torn, last), data, 0o600))

		db, err = embedded.OpenFile(crashed, embedded.FileConfig{})
		require.NoError(t, err)
		rec := db.Recovery()
		require.Zero(t, rec.TornBytes, "reserved space is not a torn record")
		require.Equal(t, n, rec.Records)
		for i := 0; i < n; i++ {
			require.Equal(t, val, mustGet(t, db, fmt.Sprintf("k%03d", i)))
		}
		require.NoError(t, db.Close())
		info, err = os.Stat(filepath.Join(crashed, last))
		require.NoError(t, err)
		require.Less(t, info.Size(), written, "recovery cuts the reserved space")
		require.Equal(t, int64(records), info.Size())

		db, err = embedded.OpenFile(torn, embedded.FileConfig{})
		require.NoError(t, err)
		require.Equal(t, int64(len(data)-records), db.Recovery().TornBytes)
		require.Equal(t, n, db.Recovery().Records)
		require.NoError(t, db.Close())
	}
}

// TestFileReopenBumpsMetadataVersion: the log does not record the bumps of
// the metadata version, so reopening counts as one, at the last version:
// after it the metadata version differs from any read before it, bumped or
// not (an empty database's stays nil, as a new one's).
func TestFileReopenBumpsMetadataVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	mdv := func(db kv.Database) []byte {
		var v []byte
		require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) (err error) {
			v, err = kv.MetadataVersion(tr)
			return err
		}))
		return v
	}
	db, err := embedded.OpenFile(dir, embedded.FileConfig{})
	require.NoError(t, err)
	require.Nil(t, mdv(db))
	require.NoError(t, db.Close())
	db, err = embedded.OpenFile(dir, embedded.FileConfig{})
	require.NoError(t, err)
	require.Nil(t, mdv(db), "an empty log: nothing happened")

	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		kv.BumpMetadataVersion(tr)
		return nil
	}))
	bumped := mdv(db)
	require.NotNil(t, bumped)
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		tr.Set([]byte("k"), []byte("v"))
		return nil
	}))
	require.Equal(t, bumped, mdv(db))
	require.NoError(t, db.Close())

	db, err = embedded.OpenFile(dir, embedded.FileConfig{})
	require.NoError(t, err)
	defer db.Close()
	require.Positive(t, bytes.Compare(mdv(db), bumped), "recovery bumped it")
}
