package shared

import (
	"fmt"
	"path/filepath"
	"syscall"
)

// Network filesystems by their statfs magic numbers (linux/magic.h).
var networkFS = map[int64]string{
	0x6969:     "NFS",
	0x517b:     "SMB",
	0xfe534d42: "SMB2",
	0xff534d42: "CIFS",
	0x564c:     "NCP",
	0x47504653: "GPFS",
	0x00c36400: "CephFS",
	0x0bd00bd0: "Lustre",
}

// checkFilesystem refuses a directory on a network filesystem: processes
// on different hosts would each see the lock free or the socket dead, and
// the lock and the socket that sharing rests on are one host's.
func checkFilesystem(dir string) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		// A database OpenFile will create: its parent's filesystem.
		if err := syscall.Statfs(filepath.Dir(dir), &st); err != nil {
			return nil // the open says what is wrong
		}
	}
	return networkFilesystem(dir, int64(st.Type))
}

func networkFilesystem(dir string, magic int64) error {
	if name, ok := networkFS[magic]; ok {
		return fmt.Errorf("%w: %s is on %s, a network filesystem: a file database needs a local filesystem (its lock and its socket are one host's); use a local disk, or a FoundationDB cluster to share a database between hosts", ErrNetworkFS, dir, name)
	}
	return nil
}
