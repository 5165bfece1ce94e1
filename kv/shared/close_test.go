package shared_test

import (
	"encoding/binary"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/kv/remote"
	"github.com/fdbqueue/fdbqueue/kv/shared"
)

// TestStaleSocket: the socket file of a process that died serving (and of
// anything else left under its name) does not keep the next opener from
// serving, nor the others from connecting to it.
func TestStaleSocket(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		leave func(t *testing.T, path string)
	}{
		{"a socket no one listens on", func(t *testing.T, path string) {
			l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
			require.NoError(t, err)
			l.SetUnlinkOnClose(false)
			require.NoError(t, l.Close())
		}},
		{"a file", func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path, []byte("x"), 0o600))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			first, err := shared.Open(dir, embedded.FileConfig{})
			require.NoError(t, err)
			put(t, first, "a", "1")
			require.NoError(t, first.Close())
			c.leave(t, filepath.Join(dir, shared.SocketName))
			db := open(t, dir)
			require.True(t, db.Serving())
			require.Equal(t, "1", get(t, db, "a"))
			shared.ServeInChild(t, dir, "FDBQUEUE_SHARED_PUT=b=2") // a client
			require.Equal(t, "2", get(t, db, "b"))
		})
	}
}

// TestCloseWithIdlePeers: the serving process closes its last handle
// while one peer connected and never spoke, and another sent its hello
// and half a frame: Close returns without waiting for them (their
// handshake's 10 seconds, or a frame's end), and a client process takes
// the database over.
func TestCloseWithIdlePeers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, err := shared.Open(dir, embedded.FileConfig{Sync: embedded.SyncNone})
	require.NoError(t, err)
	put(t, db, "a", "1")
	sock := filepath.Join(dir, shared.SocketName)

	silent, err := net.Dial("unix", sock)
	require.NoError(t, err)
	defer silent.Close()
	half, err := net.Dial("unix", sock)
	require.NoError(t, err)
	defer half.Close()
	hello := []byte{0, 0, 0, 0, 1}
	hello = append(hello, "fdbq-kvr"...)
	hello = binary.AppendUvarint(hello, remote.ProtocolVersion)
	hello = binary.AppendUvarint(hello, uint64(len(remote.ModuleVersion())))
	hello = append(hello, remote.ModuleVersion()...)
	binary.BigEndian.PutUint32(hello, uint32(len(hello)-4))
	_, err = half.Write(hello)
	require.NoError(t, err)
	_, err = half.Read(make([]byte, 512)) // the server's reply
	require.NoError(t, err)
	_, err = half.Write([]byte{0, 0, 1, 0, 3, 1}) // a frame of 256 bytes, cut short
	require.NoError(t, err)

	shared.ServeInChild(t, dir, "FDBQUEUE_SHARED_PUT=b=2") // a client
	require.Equal(t, "2", get(t, db, "b"))

	closed := make(chan error, 1)
	go func() { closed <- db.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Close hangs on peers that do not speak")
	}
	// The client process takes over: this process is its client then.
	require.Eventually(t, func() bool {
		c, err := net.Dial("unix", sock)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 10*time.Second, 5*time.Millisecond, "no process took over")
	db2 := open(t, dir)
	require.False(t, db2.Serving(), "the client process serves after the close")
	require.Equal(t, "1", get(t, db2, "a"))
	require.Equal(t, "2", get(t, db2, "b"))
}
