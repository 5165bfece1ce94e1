package embedded

import (
	"errors"
	"os"
	"syscall"
)

// preallocate extends f from size from to size to with zero bytes, the disk
// space allocated now (fallocate(2)): a full disk fails here, before any
// commit depends on the space. A file system without fallocate gets a
// sparse extension instead.
func preallocate(f *os.File, from, to int64) error {
	for {
		err := syscall.Fallocate(int(f.Fd()), 0, from, to-from)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EOPNOTSUPP), errors.Is(err, syscall.ENOSYS):
			return f.Truncate(to)
		default:
			return &os.PathError{Op: "fallocate", Path: f.Name(), Err: err}
		}
	}
}
