// The directory lock of a file database: one writer, or any number of
// read-only opens, across processes. The operating system's lock calls are
// in lock_unix.go and lock_windows.go; lockcheck.go has the holder check
// that its lock file is still in place.
//
// Two locks are taken, both needed to open:
//
//   - DIR/LOCK, the lock file, as every build so far has taken it: a build
//     that locks only this file is kept out while any other build has the
//     database open, and it keeps the others out.
//   - DIR itself, where the system allows it (Unix): a file in a directory
//     can be removed while a process holds its lock (a cleaner of
//     temporary files such as systemd-tmpfiles or tmpreaper, a careless
//     rm), and then a second process creates a new LOCK and locks that; a
//     directory that holds a database's files cannot be removed, so the
//     second process still finds the directory locked. (systemd-tmpfiles
//     also leaves a directory alone while it is locked, LOCK included.)
//
// A process of a build that locks LOCK alone is not kept out by the
// directory lock: a holder checks once a second that LOCK is still the
// file it locked, and refuses to write once it is not (lockcheck.go).

package embedded

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// errWouldBlock is what tryLock returns when another process holds the lock.
var errWouldBlock = errors.New("lock held elsewhere")

// errNoDirLock is what lockDirectory returns where a directory cannot be
// locked (Windows; NFS, which emulates flock with byte-range locks that
// need a file open to write): the lock file alone serves there.
var errNoDirLock = errors.New("the directory cannot be locked here")

// dirLock is a file database's lock, held while it is open.
type dirLock struct {
	dir, path string
	file      *os.File    // LOCK, or the directory for a reader of a database without LOCK
	info      os.FileInfo // file's, when it was locked
	dirFile   *os.File    // the directory, locked; nil where it cannot be
	dirInfo   os.FileInfo

	// The holder check's goroutine (lockcheck.go), if watch started it.
	stopOnce sync.Once
	stop     chan struct{}
	done     chan struct{}
	now      chan chan struct{} // CheckLock's requests, for tests
}

// lockAttempts bounds how many times lockDir opens LOCK again after it
// found the name taken by another file once it had locked the one it
// opened.
const lockAttempts = 10

// lockDir takes the directory's locks, or says who holds them: shared for
// a read-only open, exclusive otherwise. A writer records its process id
// in LOCK.
//
// A lock taken on a file that is then no longer LOCK (removed and made
// again by another process between this process's open and its lock) keeps
// no one out: lockDir checks, once it holds the lock, that LOCK names the
// file it locked, and starts over when it does not. opened, if set
// (tests), runs after each open of LOCK, before its lock is taken.
func lockDir(dir string, shared bool, opened func()) (*dirLock, error) {
	for attempt := 1; ; attempt++ {
		l, err := lockDirOnce(dir, shared, opened)
		if err != nil {
			return nil, err
		}
		err = l.current()
		if err == nil {
			return l, nil
		}
		l.close()
		if !errors.Is(err, errLockMoved) {
			return nil, fmt.Errorf("fdbqueue: locking %s: %w", l.path, err)
		}
		if attempt == lockAttempts {
			return nil, fmt.Errorf("fdbqueue: locking %s: %w; it was replaced %d times while this process locked it", l.path, err, attempt)
		}
	}
}

// lockDirOnce opens and locks LOCK and the directory.
func lockDirOnce(dir string, shared bool, opened func()) (*dirLock, error) {
	l := &dirLock{dir: dir, path: filepath.Join(dir, "LOCK")}
	flag := os.O_CREATE | os.O_RDWR
	if shared {
		flag = os.O_RDONLY
	}
	f, err := os.OpenFile(l.path, flag, 0o600)
	if errors.Is(err, os.ErrNotExist) && shared {
		// A database whose lock file is gone (copied without it, say):
		// a shared lock on the directory itself serves as well.
		l.path = dir
		f, err = os.Open(dir)
	}
	if errors.Is(err, os.ErrPermission) && !shared {
		return nil, fmt.Errorf("fdbqueue: opening %s to write: %w (a database this process may only read opens with ?mode=ro)", l.path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("fdbqueue: opening %s: %w", l.path, err)
	}
	l.file = f
	if d, err := os.Open(dir); err == nil {
		l.dirFile = d
	} else {
		f.Close()
		return nil, fmt.Errorf("fdbqueue: opening %s: %w", dir, err)
	}
	if opened != nil {
		opened()
	}
	// The lock can outlive its database for a moment when this process
	// forks a child (os/exec) while the lock file is open: the child holds
	// a copy of the descriptor until its exec closes it. Wait that out when
	// the owner on record is this process; any open database here was
	// found in the registry before we got this far.
	self := strconv.Itoa(os.Getpid())
	deadline := time.Now().Add(2 * time.Second)
	for {
		err = l.tryLock(shared)
		if !errors.Is(err, errWouldBlock) || time.Now().After(deadline) {
			break
		}
		if owner, _ := os.ReadFile(filepath.Join(dir, "LOCK")); strings.TrimSpace(string(owner)) != self {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err != nil {
		owner, _ := os.ReadFile(filepath.Join(dir, "LOCK"))
		l.close()
		if errors.Is(err, errWouldBlock) {
			return nil, fmt.Errorf("%w: %s is locked by %s", ErrLocked, dir, lockHolder(strings.TrimSpace(string(owner))))
		}
		return nil, fmt.Errorf("fdbqueue: locking %s: %w", l.path, err)
	}
	if l.info, err = l.file.Stat(); err == nil && l.dirFile != nil {
		l.dirInfo, err = l.dirFile.Stat()
	}
	if err != nil {
		l.close()
		return nil, fmt.Errorf("fdbqueue: locking %s: %w", l.path, err)
	}
	if shared {
		return l, nil // readers leave the owner on record as it is
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(self+"\n"), 0)
	}
	return l, nil
}

// tryLock takes the directory's lock, then LOCK's, without waiting: both
// or neither.
func (l *dirLock) tryLock(shared bool) error {
	if l.dirFile != nil {
		switch err := lockDirectory(l.dirFile, shared); {
		case errors.Is(err, errNoDirLock):
			l.dirFile.Close()
			l.dirFile = nil
		case err != nil:
			return err
		}
	}
	err := tryLock(l.file, shared)
	if err != nil && l.dirFile != nil {
		unlockDirectory(l.dirFile)
	}
	return err
}

// current reports whether LOCK and the directory are still, under their
// names, the files this lock holds: nil if so, else what changed.
func (l *dirLock) current() error {
	if err := sameFile(l.path, l.info); err != nil {
		return err
	}
	if l.dirFile != nil {
		return sameFile(l.dir, l.dirInfo)
	}
	return nil
}

// errLockMoved says a lock's file is no longer under its name; other
// errors of current say it could not be told.
var errLockMoved = errors.New("the lock's file is no longer under its name")

// sameFile says how path no longer names the file described by held
// (errLockMoved), or why that cannot be told, or nil.
func sameFile(path string, held os.FileInfo) error {
	now, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s was removed%w", path, quiet{errLockMoved})
	case err != nil:
		return fmt.Errorf("%s cannot be checked: %w", path, err)
	case !os.SameFile(now, held):
		return fmt.Errorf("%s was replaced by another file%w", path, quiet{errLockMoved})
	}
	return nil
}

// quiet wraps an error that adds nothing to a message it is formatted in.
type quiet struct{ err error }

func (q quiet) Error() string { return "" }
func (q quiet) Unwrap() error { return q.err }

// close lets go of the locks, without the holder check (see Close). They
// are let go of before their files are closed: a child this process forks
// meanwhile (os/exec) holds copies of the descriptors until its exec, and
// the lock with them, which an unlock releases and a close does not.
func (l *dirLock) close() error {
	unlockFile(l.file)
	err := l.file.Close()
	if l.dirFile != nil {
		unlockDirectory(l.dirFile)
		if derr := l.dirFile.Close(); err == nil {
			err = derr
		}
	}
	return err
}

// lockHolder names who holds a lock, given the process id on record: the
// last writer's, which read-only openers do not replace.
func lockHolder(pid string) string {
	if n, err := strconv.Atoi(pid); err == nil && n > 0 && processExists(n) {
		return "process " + pid
	}
	return "another process (read-only openers leave no process id)"
}
