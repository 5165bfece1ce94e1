// A log segment's sync on Linux: fdatasync(2).

package embedded

import (
	"errors"
	"os"
	"syscall"
)

// sync makes the records written so far durable with fdatasync(2), which
// flushes the file's data and the metadata needed to read it back (its
// size, when a chunk was reserved: fdatasync(2), "a change to the file
// size ... would require a metadata flush") but not its timestamps:
// fsync(2) would also write the inode through the journal whenever a
// record's write moved the file's mtime. A commit needs the records
// readable after a crash, not the mtime. The segment's name was made
// durable when it was created (create), with fsync and the directory's.
func (s *segment) sync() error {
	rc, err := s.f.SyscallConn()
	if err != nil {
		return err
	}
	if cerr := rc.Control(func(fd uintptr) {
		for {
			err = syscall.Fdatasync(int(fd))
			if !errors.Is(err, syscall.EINTR) {
				return
			}
		}
	}); cerr != nil {
		return cerr
	}
	if err != nil {
		return &os.PathError{Op: "fdatasync", Path: s.f.Name(), Err: err}
	}
	return nil
}
