package shared

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestMovedDirectoryKeepsTheOthersSocket: the serving process's directory
// is swapped, in one rename, with another database's directory, whose own
// process serves it. The process finds another socket under its name: it
// must neither make its own there nor, letting go of its listener, remove
// the other's (clients of that database could not reach it until its
// process made it again).
func TestMovedDirectoryKeepsTheOthersSocket(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	dir, other := filepath.Join(parent, "db"), filepath.Join(parent, "other")
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, os.Mkdir(other, 0o700))
	srv, tried := checkingHost(t, dir)
	require.True(t, srv.Serving())
	theirs, err := net.Listen("unix", filepath.Join(other, SocketName))
	require.NoError(t, err)
	defer theirs.Close()
	file, err := os.Stat(filepath.Join(other, SocketName))
	require.NoError(t, err)

	err = unix.Renameat2(unix.AT_FDCWD, dir, unix.AT_FDCWD, other, unix.RENAME_EXCHANGE)
	if err != nil {
		t.Skipf("this filesystem cannot exchange two directories in one rename: %v", err)
	}
	require.ErrorContains(t, <-tried, "no longer the directory this process opened")
	now, err := os.Stat(filepath.Join(dir, SocketName))
	require.NoError(t, err, "the other database's socket was removed")
	require.True(t, os.SameFile(file, now), "the other database's socket was replaced")
}
