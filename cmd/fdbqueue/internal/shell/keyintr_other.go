//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package shell

// keepCtrlCAsKey does nothing where the terminal has no termios: the line
// editor reads Ctrl-C as a key there.
func keepCtrlCAsKey(int) (restore func()) { return func() {} }
