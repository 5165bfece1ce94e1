package embedded_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/queues"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// segReserve is the space a log segment reserves ahead of its records
// (segment.go): an open database's directory holds it, a closed one's not.
const segReserve = 1 << 20

// diskBytes returns the bytes of the files in dir.
func diskBytes(t *testing.T, dir string) int64 {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var n int64
	for _, e := range entries {
		info, err := e.Info()
		require.NoError(t, err)
		n += info.Size()
	}
	return n
}

// churnQueue pushes n items of 200 bytes into q, 100 a transaction, then
// pops them all, and counts the round in the key "rounds".
func churnQueue(t *testing.T, db kv.Database, q *queues.Queue, round, n int) {
	t.Helper()
	ctx := context.Background()
	val := bytes.Repeat([]byte("v"), 200)
	for i := 0; i < n; i += 100 {
		require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
			for j := i; j < min(i+100, n); j++ {
				if err := q.Push(tr, queues.Item{ID: int64(round*n + j + 1), Value: val}); err != nil {
					return err
				}
			}
			return nil
		}))
	}
	for popped := 0; popped < n; {
		require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
			items, err := q.PopN(tr, queues.Min, 100)
			popped += len(items)
			return err
		}))
	}
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		tr.Add([]byte("rounds"), 1)
		return nil
	}))
}

// TestFileRestartsKeepDiskBounded is a program that restarts: each
// round opens the database, pushes rows into a queue, pops them all and
// closes it, every round writing less log than makes a checkpoint due while
// it is open. The log must not pile up round after round: after each
// reopen, the checkpoint and the log the open read are at most what a Close
// leaves (the larger of an eighth of CheckpointBytes and 3 times the live
// data), and the directory holds that and a new segment's reserved space.
func TestFileRestartsKeepDiskBounded(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		floor  int64 // FileConfig.CheckpointBytes
		items  int   // pushed and popped a round
		rounds int
	}{
		// A round writes about 3 KiB of log, under an eighth of the
		// floor: only counting the log earlier opens left makes a
		// checkpoint due, at a Close.
		{name: "small", floor: 64 << 10, items: 10, rounds: 16},
		// A round writes about 95 KiB, between an eighth of the floor
		// and the floor.
		{name: "large", floor: 256 << 10, items: 300, rounds: 8},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			q := queues.New(tuple.Tuple{"q"}.Pack(), queues.FIFO)
			cfg := embedded.FileConfig{CheckpointBytes: c.floor, Sync: embedded.SyncNone}
			for r := 0; r < c.rounds; r++ {
				db, err := embedded.OpenFile(dir, cfg)
				require.NoError(t, err)
				rec, live, disk := db.Recovery(), int64(db.Stats().RecordBytes), diskBytes(t, dir)
				t.Logf("round %d: %d bytes on disk, %d of log read, %d live", r, disk, rec.LogBytes, live)
				closeLeaves := max(c.floor/8, 3*live)
				require.LessOrEqual(t, rec.CheckpointSize+rec.LogBytes, closeLeaves, "round %d: the open read the log of earlier opens", r)
				require.LessOrEqual(t, disk, closeLeaves+segReserve+1<<10, "round %d: the log of earlier opens piles up", r)
				require.Equal(t, uint64(r), counter(t, db, "rounds"), "round %d: a checkpoint lost a commit", r)
				churnQueue(t, db, q, r, c.items)
				require.NoError(t, db.Close())
			}
		})
	}
}

// counter reads a key that kv.Transaction.Add counts in (0 when unset).
func counter(t *testing.T, db kv.Database, key string) uint64 {
	t.Helper()
	v := mustGet(t, db, key)
	if v == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(v)
}

// TestFileCheckpointsAtOpen: a log that earlier opens left over the
// threshold (when only the open's own log counted, or from a larger
// CheckpointBytes) is checkpointed by the next read-write open while it
// serves commits; a read-only open changes nothing.
func TestFileCheckpointsAtOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	q := queues.New(tuple.Tuple{"q"}.Pack(), queues.FIFO)
	// No checkpoint: at Close, an eighth of 1 GiB is not due.
	db, err := embedded.OpenFile(dir, embedded.FileConfig{CheckpointBytes: 1 << 30, Sync: embedded.SyncNone})
	require.NoError(t, err)
	for r := 0; r < 4; r++ {
		churnQueue(t, db, q, r, 1000)
	}
	require.NoError(t, db.Close())
	left := diskBytes(t, dir)
	require.Greater(t, left, int64(1<<20))

	small := embedded.FileConfig{CheckpointBytes: 64 << 10}
	ro := small
	ro.Mode = embedded.ReadOnly
	before := dirState(t, dir)
	db, err = embedded.OpenFile(dir, ro)
	require.NoError(t, err)
	require.Equal(t, uint64(4), counter(t, db, "rounds"))
	require.NoError(t, db.Close())
	require.Equal(t, before, dirState(t, dir), "a read-only open neither checkpoints nor deletes")

	db, err = embedded.OpenFile(dir, small)
	require.NoError(t, err)
	require.Greater(t, db.Recovery().LogBytes, int64(1<<20))
	// Commits go on while the open's checkpoint runs.
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		tr.Add([]byte("rounds"), 1)
		return nil
	}))
	require.Eventually(t, func() bool {
		ckpts, err := filepath.Glob(filepath.Join(dir, "ckpt-*.db"))
		require.NoError(t, err)
		return len(ckpts) == 1 && len(segments(t, dir)) == 1
	}, 10*time.Second, time.Millisecond, "the open checkpoints, and drops the log earlier opens left")
	live := int64(db.Stats().RecordBytes)
	require.NoError(t, db.Close())
	require.LessOrEqual(t, diskBytes(t, dir), max(small.CheckpointBytes/8, 3*live)+1<<10, "what a clean close leaves")

	db, err = embedded.OpenFile(dir, small)
	require.NoError(t, err)
	defer db.Close()
	rec := db.Recovery()
	require.Positive(t, rec.CheckpointVersion)
	require.Less(t, rec.LogBytes, int64(1<<10))
	require.Equal(t, uint64(5), counter(t, db, "rounds"))
}

// TestFileCloseCheckpointsByDefault: with the default CheckpointBytes, a
// Close checkpoints when the log since the last checkpoint is more than an
// eighth of it (and 3 times the live data), so the next open replays little,
// and not when it is less, so that a program writing a few rows an open
// does not pay a checkpoint each close.
func TestFileCloseCheckpointsByDefault(t *testing.T) {
	t.Parallel()
	q := queues.New(tuple.Tuple{"q"}.Pack(), queues.FIFO)
	for _, c := range []struct {
		items int
		ckpt  bool
	}{
		{items: 100, ckpt: false},  // about 30 KiB of log
		{items: 5_000, ckpt: true}, // about 1.6 MiB
	} {
		dir := t.TempDir()
		db, err := embedded.OpenFile(dir, embedded.FileConfig{Sync: embedded.SyncNone})
		require.NoError(t, err)
		churnQueue(t, db, q, 0, c.items)
		require.NoError(t, db.Close())
		db, err = embedded.OpenFile(dir, embedded.FileConfig{})
		require.NoError(t, err)
		rec := db.Recovery()
		if c.ckpt {
			require.Positive(t, rec.CheckpointVersion, "items=%d", c.items)
			require.Zero(t, rec.Records)
		} else {
			require.Zero(t, rec.CheckpointVersion, "items=%d", c.items)
			require.Greater(t, rec.LogBytes, int64(16<<10))
		}
		require.Less(t, rec.LogBytes, int64(embedded.DefaultCheckpointBytes/8), "items=%d", c.items)
		require.Equal(t, uint64(1), counter(t, db, "rounds"))
		require.NoError(t, db.Close())
	}
}
