package embedded_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/internal/crashtest"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
)

// The workload of TestFileCrashDuringCheckpoints: commit n sets the key of
// n and "last" to n, and clears the key of n-crashWindow, so the live data
// stays crashWindow keys while the log grows; with crashFloor, a
// checkpoint is due about every 40 commits, and the child closes and
// reopens every crashOpenCommits.
const (
	crashWindow      = 20
	crashFloor       = 8 << 10
	crashOpenCommits = 25
)

func crashKey(n uint64) []byte { return []byte(fmt.Sprintf("k/%012d", n)) }

func crashValue(n uint64) []byte { return bytes.Repeat([]byte{byte('a' + n%26)}, 200) }

// crashCheckpointsChild is the child process of
// TestFileCrashDuringCheckpoints: it commits the workload, printing "ack N"
// once commit N returned, closing and reopening the database every few
// commits, so that a kill lands in checkpoints started by commits, by opens
// (over the log earlier opens left) and by Closes, until it is killed.
func crashCheckpointsChild(dir string) {
	ctx := context.Background()
	fail := func(err error) {
		fmt.Println("error", err)
		os.Exit(2)
	}
	for {
		db, err := embedded.OpenFile(dir, embedded.FileConfig{CheckpointBytes: crashFloor})
		if err != nil {
			fail(err)
		}
		n, err := crashtest.Last(db)
		if err != nil {
			fail(err)
		}
		fmt.Println("ready")
		for i := 0; i < crashOpenCommits; i++ {
			n++
			if err := db.Transact(ctx, func(tr kv.Transaction) error {
				tr.Set(crashKey(n), crashValue(n))
				if n > crashWindow {
					tr.Clear(crashKey(n - crashWindow))
				}
				tr.Set([]byte("last"), binary.LittleEndian.AppendUint64(nil, n))
				return nil
			}); err != nil {
				fail(err)
			}
			fmt.Println("ack", n)
		}
		if err := db.Close(); err != nil {
			fail(err)
		}
	}
}

// TestFileCrashDuringCheckpoints kills (SIGKILL) a process that commits
// while checkpoints start at its commits, its opens and its Closes, at a
// random moment, then checks that every acknowledged commit is there, and
// that checkpoints did happen and keep the directory small.
func TestFileCrashDuringCheckpoints(t *testing.T) {
	if dir := os.Getenv("FDBQUEUE_CKPT_CRASH_CHILD"); dir != "" {
		crashCheckpointsChild(dir)
		return
	}
	t.Parallel()
	rounds := crashtest.Rounds(12)
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	var acked uint64
	checkpointed := false
	for round := 0; round < rounds; round++ {
		child := crashtest.Start(t, "TestFileCrashDuringCheckpoints", "FDBQUEUE_CKPT_CRASH_CHILD="+dir)
		acked = child.ReadAcks(t, acked, time.Duration(10+r.IntN(150))*time.Millisecond)
		_ = child.Wait()

		db, err := embedded.OpenFile(dir, embedded.FileConfig{CheckpointBytes: crashFloor})
		require.NoError(t, err)
		rec := db.Recovery()
		checkpointed = checkpointed || rec.CheckpointVersion > 0
		last, err := crashtest.Last(db)
		require.NoError(t, err)
		// The commit in flight at the kill may have made it.
		require.Contains(t, []uint64{acked, acked + 1}, last, "round %d: acknowledged %d", round, acked)
		acked = last
		require.NoError(t, db.ReadTransact(context.Background(), func(tr kv.ReadTransaction) error {
			for n := last; n > 0 && n+crashWindow > last; n-- {
				v, err := tr.Get(crashKey(n))
				if err != nil {
					return err
				}
				require.Equal(t, crashValue(n), v, "round %d: commit %d of %d", round, n, last)
			}
			if last > crashWindow {
				v, err := tr.Get(crashKey(last - crashWindow))
				require.Nil(t, v, "round %d: a clear is undone", round)
				return err
			}
			return nil
		}))
		live := int64(db.Stats().RecordBytes)
		t.Logf("round %d: %d commits, %d bytes of log read, checkpoint %d, %d live", round, last, rec.LogBytes, rec.CheckpointVersion, live)
		require.NoError(t, db.Close())
		// The close left at most the larger of an eighth of the floor and
		// 3 times the live data.
		require.LessOrEqual(t, diskBytes(t, dir), max(crashFloor/8, 3*live)+1<<10, "round %d", round)
	}
	require.True(t, checkpointed, "no open found a checkpoint")
}
