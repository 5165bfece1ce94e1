// The lock call on Windows: LockFileEx on the first byte of the lock file.
// The directory is not locked, and the holder check (lockcheck.go) finds
// nothing to see: a file open here cannot be removed or replaced.

//go:build windows

package embedded

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// tryLock takes f's lock without waiting, shared or exclusive; errWouldBlock
// if another process holds it.
func tryLock(f *os.File, shared bool) error {
	how := uint32(windows.LOCKFILE_FAIL_IMMEDIATELY)
	if !shared {
		how |= windows.LOCKFILE_EXCLUSIVE_LOCK
	}
	err := windows.LockFileEx(windows.Handle(f.Fd()), how, 0, 1, 0, new(windows.Overlapped))
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return errWouldBlock
	}
	return err
}

// lockDirectory: Windows locks byte ranges of files, not directories. None
// is needed there: a file open here cannot be removed or renamed (os opens
// files without FILE_SHARE_DELETE), so LOCK stays the file locked while it
// is held.
func lockDirectory(d *os.File, shared bool) error { return errNoDirLock }

// unlockFile: closing the file lets go of its lock; a child process
// inherits no handle of it.
func unlockFile(f *os.File) {}

// unlockDirectory: lockDirectory locks nothing on Windows.
func unlockDirectory(d *os.File) {}

// processExists reports whether a process with this id runs.
func processExists(pid int) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return false
	}
	windows.CloseHandle(h)
	return true
}
