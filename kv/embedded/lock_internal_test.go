//go:build unix

package embedded

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLockDirChecksTheFileItLocked: LOCK removed, and made again by
// another process, between this process's open and its lock: the lock it
// took is on a file no longer named LOCK, and keeps no one out. lockDir
// finds that out, opens LOCK again, and finds it locked, or (when nobody
// made LOCK again) makes it and locks it.
func TestLockDirChecksTheFileItLocked(t *testing.T) {
	t.Parallel()
	for _, remade := range []bool{true, false} {
		t.Run("remade="+strconv.FormatBool(remade), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "LOCK")
			require.NoError(t, os.WriteFile(path, nil, 0o600))
			var other *os.File
			opens := 0
			l, err := lockDir(dir, false, func() {
				opens++
				if opens > 1 {
					return
				}
				require.NoError(t, os.Remove(path))
				if remade {
					// A process of a build that locks LOCK alone.
					var err error
					other, err = os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
					require.NoError(t, err)
					require.NoError(t, syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))
				}
			})
			if remade {
				defer other.Close()
				require.ErrorIs(t, err, ErrLocked)
				require.Equal(t, 2, opens)
				return
			}
			require.NoError(t, err)
			defer l.Close()
			require.Equal(t, 2, opens)
			require.NoError(t, l.current())
			owner, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, strconv.Itoa(os.Getpid()), strings.TrimSpace(string(owner)))
		})
	}
}
