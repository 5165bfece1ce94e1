//go:build unix

package embedded_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv/embedded"
)

// A database the process may only read, opened to write, says how to open
// it: ?mode=ro. (Root may write anywhere: the test needs another user.)
func TestOpenReadOnlyDirSaysModeRO(t *testing.T) {
	t.Parallel()
	if os.Geteuid() == 0 {
		t.Skip("root writes to a read-only directory")
	}
	dir := t.TempDir()
	db, err := embedded.OpenFile(dir, embedded.FileConfig{})
	require.NoError(t, err)
	require.NoError(t, db.Close())
	require.NoError(t, os.Chmod(dir+"/LOCK", 0o400))
	require.NoError(t, os.Chmod(dir, 0o500))
	t.Cleanup(func() { _ = os.Chmod(dir, 0o700) })

	_, err = embedded.OpenFile(dir, embedded.FileConfig{})
	require.ErrorContains(t, err, "?mode=ro")
	ro, err := embedded.OpenFile(dir, embedded.FileConfig{Mode: embedded.ReadOnly})
	require.NoError(t, err)
	require.NoError(t, ro.Close())
}
