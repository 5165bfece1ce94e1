// The terminal's interrupt key during \copy ... FROM STDIN at the prompt
// (the BSDs' termios requests).

//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package shell

import "golang.org/x/sys/unix"

const (
	ioctlGetTermios = unix.TIOCGETA
	ioctlSetTermios = unix.TIOCSETA
)
