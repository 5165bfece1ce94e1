//go:build unix

package embedded_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/internal/crashtest"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
)

// TestLockFileRemovedKeepsOthersOut: a cleaner of temporary files removed
// DIR/LOCK while a process holds the database. Another process that opens
// the database makes a new LOCK and locks it, but still finds the database
// locked (its directory is), rather than writing the log beside the first.
func TestLockFileRemovedKeepsOthersOut(t *testing.T) {
	if dir := os.Getenv("FDBQUEUE_LOCK_REMOVED_CHILD"); dir != "" {
		db, err := embedded.OpenFile(dir, embedded.FileConfig{Mode: embedded.ReadWrite})
		switch {
		case errors.Is(err, embedded.ErrLocked):
			fmt.Println("locked")
		case err != nil:
			fmt.Println("error", err)
		default:
			fmt.Println("opened")
			db.Close()
		}
		return
	}
	t.Parallel()
	dir := t.TempDir()
	db, err := embedded.OpenFile(dir, embedded.FileConfig{})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	require.NoError(t, set(t, db, "k", "v"))
	require.NoError(t, os.Remove(filepath.Join(dir, "LOCK")))

	child := crashtest.Start(t, "TestLockFileRemovedKeepsOthersOut", "FDBQUEUE_LOCK_REMOVED_CHILD="+dir)
	var said []string
	child.Read(t, func(l string) { said = append(said, l) })
	require.NoError(t, child.Wait())
	require.NotEmpty(t, said)
	require.Equal(t, "locked", said[0], "what the second process said (then the test binary's PASS)")
}

// TestLockFileGoneHolderStopsWriting: the holder of a database whose
// DIR/LOCK was removed, or removed and made again and locked by another
// process (of a build that locks only LOCK), finds out at its next check
// (once a second; the test runs it at once), and then refuses commits with
// ErrFailed saying why, rather than write beside another writer. Reads go
// on; once closed, the database opens again, with what it had.
func TestLockFileGoneHolderStopsWriting(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		replaced bool
		says     string
	}{
		{"removed", false, "LOCK was removed"},
		{"replaced", true, "LOCK was replaced by another file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			db, err := embedded.OpenFile(dir, embedded.FileConfig{})
			require.NoError(t, err)
			require.NoError(t, set(t, db, "k", "v"))
			embedded.CheckLock(db)
			require.NoError(t, set(t, db, "k", "v2"), "the lock is in place")

			path := filepath.Join(dir, "LOCK")
			require.NoError(t, os.Remove(path))
			var other *os.File
			if c.replaced {
				other, err = os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
				require.NoError(t, err)
				require.NoError(t, syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))
			}
			embedded.CheckLock(db)
			err = set(t, db, "k", "v3")
			require.ErrorIs(t, err, embedded.ErrFailed)
			require.ErrorContains(t, err, c.says)
			require.ErrorContains(t, err, "close the database and open it again")
			require.Equal(t, "v2", string(mustGet(t, db, "k")), "reads go on")
			require.NoError(t, db.Close())

			if other != nil {
				_, err = embedded.OpenFile(dir, embedded.FileConfig{Mode: embedded.ReadWrite})
				require.ErrorIs(t, err, embedded.ErrLocked, "the other process holds the new LOCK")
				// Unlocked before it is closed: a child that another test
				// forks meanwhile holds a copy of the descriptor.
				require.NoError(t, syscall.Flock(int(other.Fd()), syscall.LOCK_UN))
				require.NoError(t, other.Close())
			}
			db, err = embedded.OpenFile(dir, embedded.FileConfig{Mode: embedded.ReadWrite})
			require.NoError(t, err)
			defer db.Close()
			require.Equal(t, "v2", string(mustGet(t, db, "k")))
			require.NoError(t, set(t, db, "k", "v4"))
		})
	}
}

// TestLockFileStillLockedForEarlierBuilds: a build that locks only
// DIR/LOCK (flock) and one that also locks the directory keep each other
// out, either way round.
func TestLockFileStillLockedForEarlierBuilds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, err := embedded.OpenFile(dir, embedded.FileConfig{})
	require.NoError(t, err)
	path := filepath.Join(dir, "LOCK")
	earlier, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer earlier.Close()
	for _, how := range []int{syscall.LOCK_EX, syscall.LOCK_SH} {
		require.ErrorIs(t, syscall.Flock(int(earlier.Fd()), how|syscall.LOCK_NB), syscall.EWOULDBLOCK)
	}
	require.NoError(t, db.Close())

	require.NoError(t, syscall.Flock(int(earlier.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))
	// Another process's id, not this one's: an open waits out a lock
	// held by this process's own forked child (lock.go).
	require.NoError(t, earlier.Truncate(0))
	_, err = embedded.OpenFile(dir, embedded.FileConfig{})
	require.ErrorIs(t, err, embedded.ErrLocked)
	_, err = embedded.OpenFile(dir, embedded.FileConfig{Mode: embedded.ReadOnly})
	require.ErrorIs(t, err, embedded.ErrLocked)
	require.NoError(t, syscall.Flock(int(earlier.Fd()), syscall.LOCK_UN))
	db, err = embedded.OpenFile(dir, embedded.FileConfig{Mode: embedded.ReadWrite})
	require.NoError(t, err)
	require.NoError(t, db.Close())
}
