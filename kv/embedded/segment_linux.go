// A log segment's system calls on Linux: fdatasync(2), and pwritev2(2)
// with RWF_DSYNC.

package embedded

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// segmentSys holds the segment file's descriptor, taken once, so that a
// commit's write and sync do not go through os.File's wrappers and their
// allocations; the segment owns the file and closes it last (close).
// noDsync says pwritev2 with RWF_DSYNC was refused (a kernel before 4.7,
// or a file system without it): writeSynced leaves the write to append.
type segmentSys struct {
	fd      int
	noDsync bool
	// dsyncs counts the writes writeSynced made durable (tests).
	dsyncs int
}

func (y *segmentSys) init(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Control(func(fd uintptr) { y.fd = int(fd) })
}

// sync makes the records written so far durable with fdatasync(2), which
// flushes the file's data and the metadata needed to read it back (its
// size, when a chunk was reserved: fdatasync(2), "a change to the file
// size ... would require a metadata flush") but not its timestamps:
// fsync(2) would also write the inode through the journal whenever a
// record's write moved the file's mtime. A commit needs its records
// readable after a crash, not the mtime. The segment's name was made
// durable when it was created (create), with fsync and the directory's.
func (s *segment) sync() error {
	if err := ignoringEINTR(func() error { return syscall.Fdatasync(s.sys.fd) }); err != nil {
		return &os.PathError{Op: "fdatasync", Path: s.f.Name(), Err: err}
	}
	return nil
}

// writeSynced writes b at off with pwritev2(2) and RWF_DSYNC: "a
// per-write equivalent of the O_DSYNC open(2) flag", whose effect "applies
// only to the data range written by the system call"; O_DSYNC writes
// complete "as though each write(2) was followed by a call to
// fdatasync(2)". It returns the bytes written, and done once all of b is
// written and durable. A kernel or file system without the flag leaves
// the write to the caller, from then on; so does EPERM, which a seccomp
// filter (older container runtimes' defaults) answers for a system call
// it does not know, and which the caller's pwrite would meet too if the
// file itself refused the write.
func (s *segment) writeSynced(b []byte, off int64) (n int, done bool, err error) {
	if s.sys.noDsync {
		return 0, false, nil
	}
	err = ignoringEINTR(func() error {
		var err error
		n, err = unix.Pwritev2(s.sys.fd, [][]byte{b}, off, unix.RWF_DSYNC)
		return err
	})
	switch {
	case err == nil:
		s.sys.dsyncs++
		return n, n == len(b), nil
	case errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EPERM):
		s.sys.noDsync = true
		return 0, false, nil
	}
	return 0, false, &os.PathError{Op: "pwritev2", Path: s.f.Name(), Err: err}
}

func ignoringEINTR(call func() error) error {
	for {
		if err := call(); !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
