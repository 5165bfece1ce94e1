//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package shell

import "golang.org/x/sys/unix"

// keepCtrlCAsKey makes the terminal on fd deliver Ctrl-C to the program as a key
// instead of raising SIGINT, until the returned function restores it. The
// line editor turns that off only while it reads a line; \copy ... FROM
// STDIN reads many, and a Ctrl-C typed (or pasted) between two of them
// would otherwise be a signal that the blocked prompt never sees, leaving
// the \copy waiting for more input instead of cancelling.
func keepCtrlCAsKey(fd int) (restore func()) {
	t, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		return func() {}
	}
	saved := *t
	t.Lflag &^= unix.ISIG
	if unix.IoctlSetTermios(fd, ioctlSetTermios, t) != nil {
		return func() {}
	}
	return func() { _ = unix.IoctlSetTermios(fd, ioctlSetTermios, &saved) }
}
