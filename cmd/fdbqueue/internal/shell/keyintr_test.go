//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package shell

import (
	"testing"

	"github.com/creack/pty"
	"github.com/stretchr/testify/require"
)

// TestKeepCtrlCAsKey: on a terminal, Ctrl-C is a signal (the character
// never reaches the program) unless keepCtrlCAsKey is in force, and again
// once it is restored. \copy ... FROM STDIN at the prompt depends on it: a
// Ctrl-C typed between two data lines must reach the line editor.
func TestKeepCtrlCAsKey(t *testing.T) {
	t.Parallel()
	ptmx, tty, err := pty.Open() // not this process's controlling terminal
	require.NoError(t, err)
	defer ptmx.Close()
	defer tty.Close()
	typed := func() string {
		t.Helper()
		_, err := ptmx.Write([]byte("a\x03b\n"))
		require.NoError(t, err)
		buf := make([]byte, 64)
		n, err := tty.Read(buf)
		require.NoError(t, err)
		return string(buf[:n])
	}
	require.NotContains(t, typed(), "\x03", "a terminal's Ctrl-C is a signal")
	restore := keepCtrlCAsKey(int(tty.Fd()))
	require.Contains(t, typed(), "\x03", "the program reads Ctrl-C as a key")
	restore()
	require.NotContains(t, typed(), "\x03", "restored")
}
