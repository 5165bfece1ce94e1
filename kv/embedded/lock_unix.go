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

// lockDirectory takes the lock of d, a directory, as tryLock does; flock
// locks a directory as it does a file. errNoDirLock where the file system
// does not lock directories: NFS emulates flock with byte-range locks, and
// an exclusive one needs a descriptor open to write, which a directory
// cannot have (EBADF); other file systems may not lock at all (ENOLCK,
// EOPNOTSUPP, EINVAL).
func lockDirectory(d *os.File, shared bool) error {
	err := tryLock(d, shared)
	switch {
	case errors.Is(err, syscall.EBADF), errors.Is(err, syscall.ENOLCK),
		errors.Is(err, syscall.EOPNOTSUPP), errors.Is(err, syscall.EINVAL):
		return errNoDirLock
	}
	return err
}

// unlockFile lets go of the lock tryLock took, also where a forked child
// holds a copy of f's descriptor: the lock is the open file's, which the
// copy shares.
func unlockFile(f *os.File) {
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}

// unlockDirectory lets go of the lock lockDirectory took.
func unlockDirectory(d *os.File) { unlockFile(d) }

// processExists reports whether a process with this id runs.
func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
