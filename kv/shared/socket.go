package shared

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
)

// maxSocketPath is the longest path a Unix socket's address may be on the
// systems Go runs on (sun_path is 104 bytes on the BSDs and macOS, 108 on
// Linux, with its terminating zero).
const maxSocketPath = 103

// socketAddr is the address of the socket in dir. A directory whose path
// is too long for a socket's address is reached on Linux through the
// descriptor of the directory, which the caller keeps open
// (/proc/self/fd/N/fdbqueue.sock, a path the kernel resolves as the
// directory's own).
func socketAddr(dir string) (string, *os.File, error) {
	path := filepath.Join(dir, SocketName)
	if len(path) <= maxSocketPath {
		return path, nil, nil
	}
	if runtime.GOOS != "linux" {
		return "", nil, fmt.Errorf("fdbqueue: the path of %s is %d bytes, too long for the socket through which processes share the database (at most %d); use a shorter path", dir, len(dir), maxSocketPath-len(SocketName)-1)
	}
	f, err := os.Open(dir)
	if err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("/proc/self/fd/%d/%s", f.Fd(), SocketName), f, nil
}

// listen listens on the socket at addr, replacing the file of a process
// that died serving (the caller holds the directory's lock, so no live
// process serves on it).
func listen(addr string) (net.Listener, error) {
	if err := os.Remove(addr); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return net.Listen("unix", addr)
}

// dial connects to the socket at addr.
func dial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "unix", addr)
}
