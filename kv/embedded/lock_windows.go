// The directory lock of a file database on Windows: LockFileEx on the lock
// file, exclusive for a writer, shared for read-only opens.

//go:build windows

package embedded

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/windows"
)

// lockDir takes the directory's lock file, or says who holds it: shared
// for a read-only open, exclusive otherwise.
func lockDir(dir string, shared bool) (*os.File, error) {
	path := filepath.Join(dir, "LOCK")
	flag := os.O_CREATE | os.O_RDWR
	how := uint32(windows.LOCKFILE_EXCLUSIVE_LOCK | windows.LOCKFILE_FAIL_IMMEDIATELY)
	if shared {
		flag, how = os.O_RDONLY, windows.LOCKFILE_FAIL_IMMEDIATELY
	}
	f, err := os.OpenFile(path, flag, 0o600)
	if err != nil {
		return nil, fmt.Errorf("fdbqueue: opening %s: %w", path, err)
	}
	ol := new(windows.Overlapped)
	err = windows.LockFileEx(windows.Handle(f.Fd()), how, 0, 1, 0, ol)
	if err != nil {
		owner, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
			return nil, fmt.Errorf("%w: %s is locked by %s", ErrLocked, dir, lockHolder(strings.TrimSpace(string(owner))))
		}
		return nil, fmt.Errorf("fdbqueue: locking %s: %w", path, err)
	}
	if shared {
		return f, nil // readers leave the owner on record as it is
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

// lockHolder names who holds a lock, given the process id on record: the
// last writer's, which read-only openers do not replace.
func lockHolder(pid string) string {
	if n, err := strconv.Atoi(pid); err == nil && n > 0 {
		if h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(n)); err == nil {
			windows.CloseHandle(h)
			return "process " + pid
		}
	}
	return "another process (read-only openers leave no process id)"
}
