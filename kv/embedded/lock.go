// The directory lock of a file database: one writer, or any number of
// read-only opens, across processes. The operating system's lock call is in
// lock_unix.go and lock_windows.go.

package embedded

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// errWouldBlock is what tryLock returns when another process holds the lock.
var errWouldBlock = errors.New("lock held elsewhere")

// lockDir takes the directory's lock file, or says who holds it: shared
// for a read-only open, exclusive otherwise. A writer records its process
// id in the file.
func lockDir(dir string, shared bool) (*os.File, error) {
	path := filepath.Join(dir, "LOCK")
	flag := os.O_CREATE | os.O_RDWR
	if shared {
		flag = os.O_RDONLY
	}
	f, err := os.OpenFile(path, flag, 0o600)
	if errors.Is(err, os.ErrNotExist) && shared {
		// A database whose lock file is gone (copied without it, say):
		// a shared lock on the directory itself serves as well.
		f, err = os.Open(dir)
	}
	if errors.Is(err, os.ErrPermission) && !shared {
		return nil, fmt.Errorf("fdbqueue: opening %s to write: %w (a database this process may only read opens with ?mode=ro)", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("fdbqueue: opening %s: %w", path, err)
	}
	// The lock can outlive its database for a moment when this process
	// forks a child (os/exec) while the lock file is open: the child holds
	// a copy of the descriptor until its exec closes it. Wait that out when
	// the owner on record is this process; any open database here was
	// found in the registry before we got this far.
	self := strconv.Itoa(os.Getpid())
	deadline := time.Now().Add(2 * time.Second)
	for {
		err = tryLock(f, shared)
		if !errors.Is(err, errWouldBlock) || time.Now().After(deadline) {
			break
		}
		if owner, _ := os.ReadFile(path); strings.TrimSpace(string(owner)) != self {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err != nil {
		owner, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, errWouldBlock) {
			return nil, fmt.Errorf("%w: %s is locked by %s", ErrLocked, dir, lockHolder(strings.TrimSpace(string(owner))))
		}
		return nil, fmt.Errorf("fdbqueue: locking %s: %w", path, err)
	}
	if shared {
		return f, nil // readers leave the owner on record as it is
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(self+"\n"), 0)
	}
	return f, nil
}

// lockHolder names who holds a lock, given the process id on record: the
// last writer's, which read-only openers do not replace.
func lockHolder(pid string) string {
	if n, err := strconv.Atoi(pid); err == nil && n > 0 && processExists(n) {
		return "process " + pid
	}
	return "another process (read-only openers leave no process id)"
}
