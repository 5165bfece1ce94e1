// The lock call on Unix: flock(2).

//go:build unix

package embedded

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes f's lock without waiting, shared or exclusive; errWouldBlock
// if another process holds it.
func tryLock(f *os.File, shared bool) error {
	how := syscall.LOCK_EX
	if shared {
		how = syscall.LOCK_SH
	}
	err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errWouldBlock
	}
	return err
}

// processExists reports whether a process with this id runs.
func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
