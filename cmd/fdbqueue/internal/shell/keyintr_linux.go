// The terminal's interrupt key during \copy ... FROM STDIN at the prompt
// (Linux's termios requests).

package shell

import "golang.org/x/sys/unix"

const (
	ioctlGetTermios = unix.TCGETS
	ioctlSetTermios = unix.TCSETS
)
