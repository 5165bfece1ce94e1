//go:build unix

package embedded

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFileReopenWhileForkHoldsLock: a child forked by this process can hold
// a copy of the lock descriptor for a moment after the database closed
// (until its exec); a reopen waits that out instead of reporting the
// database locked by this very process.
func TestFileReopenWhileForkHoldsLock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, err := OpenFile(dir, FileConfig{})
	require.NoError(t, err)
	// A dup shares the open file description, and so the flock, as a
	// forked child's copy does.
	dup, err := syscall.Dup(int(db.s.lock.file.Fd()))
	require.NoError(t, err)
	require.NoError(t, db.Close())
	go func() {
		time.Sleep(100 * time.Millisecond)
		syscall.Close(dup)
	}()
	db, err = OpenFile(dir, FileConfig{})
	require.NoError(t, err)
	require.NoError(t, db.Close())
}
