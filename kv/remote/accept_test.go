package remote_test

import (
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv/remote"
)

// emfileListener fails its first Accepts as a process out of descriptors
// does (EMFILE, which is temporary but no timeout), then accepts.
type emfileListener struct {
	net.Listener
	fails atomic.Int32
}

func (l *emfileListener) Accept() (net.Conn, error) {
	if l.fails.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "unix", Err: os.NewSyscallError("accept", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// TestServeSurvivesEMFILE: a serving process that runs out of descriptors
// for a moment (too many open files) pauses accepting, and serves the
// clients that connect once it has some again, instead of ending Serve
// (closing its listener, and so removing kv/shared's socket while its
// process keeps the database's lock: no other process could serve it).
func TestServeSurvivesEMFILE(t *testing.T) {
	t.Parallel()
	db, path, l := listening(t)
	el := &emfileListener{Listener: l}
	el.fails.Store(2)
	srv := remote.NewServer(db, remote.ServerOptions{Logger: quiet})
	var serveErr atomic.Pointer[error]
	served := make(chan struct{})
	go func() {
		err := srv.Serve(el)
		serveErr.Store(&err)
		close(served)
	}()
	defer func() {
		require.NoError(t, srv.Close())
		<-served
	}()

	client, err := remote.Dial(bg, remote.Options{Dial: unixDial(path), Logger: quiet})
	if err != nil {
		select {
		case <-served:
			t.Fatalf("Serve ended on a temporary Accept error: %v (dial: %v)", *serveErr.Load(), err)
		case <-time.After(time.Second):
		}
	}
	require.NoError(t, err)
	defer client.Close()
	setKey(t, client, "a", "1")
	require.Equal(t, "1", getKey(t, db, "a"))
}
