package remote_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/kv/remote"
)

// echoCalls is a call handler: "echo N" answers N bytes, "fail" a kv
// error wrapped, "block" waits for its context and reports it, after
// telling started.
func echoCalls(started chan<- struct{}) func(context.Context, []byte) ([]byte, error) {
	return func(ctx context.Context, p []byte) ([]byte, error) {
		switch {
		case bytes.HasPrefix(p, []byte("echo ")):
			var n int
			if _, err := fmt.Sscan(string(p[5:]), &n); err != nil {
				return nil, err
			}
			return bytes.Repeat([]byte{'x'}, n), nil
		case string(p) == "fail":
			return nil, fmt.Errorf("the handler failed: %w", kv.ErrTransactionTooLarge)
		case string(p) == "block":
			started <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return p, nil
	}
}

// TestCalls: a call's answer (empty, and one of many frames), an error
// that keeps its code, and a server without a handler.
func TestCalls(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{})
	t.Cleanup(func() { _ = db.Close() })
	s := &served{t: t, db: db, path: sockPath(t), opts: remote.ServerOptions{Logger: quiet, Call: echoCalls(nil)}}
	s.start()
	t.Cleanup(s.stop)
	c := s.dial(t, remote.Options{})
	for _, n := range []int{0, 1, 5 << 20} {
		got, err := c.Call(bg, fmt.Appendf(nil, "echo %d", n))
		require.NoError(t, err)
		require.Len(t, got, n)
	}
	_, err := c.Call(bg, []byte("fail"))
	require.ErrorIs(t, err, kv.ErrTransactionTooLarge)
	require.ErrorContains(t, err, "the handler failed")
	_, err = c.Call(bg, make([]byte, remote.MaxCallSize+1))
	require.ErrorIs(t, err, remote.ErrNoCalls)

	plain := serve(t, db)
	_, err = plain.dial(t, remote.Options{}).Call(bg, []byte("echo 1"))
	require.ErrorIs(t, err, remote.ErrNoCalls)
}

// TestCallAbortAndLoss: the caller's context ending ends the handler's;
// a call in flight when the server closes fails with
// commit_unknown_result, and the next one reaches the server that took
// its place.
func TestCallAbortAndLoss(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{})
	t.Cleanup(func() { _ = db.Close() })
	started := make(chan struct{}, 1)
	s := &served{t: t, db: db, path: sockPath(t), opts: remote.ServerOptions{Logger: quiet, Call: echoCalls(started)}}
	s.start()
	t.Cleanup(s.stop)
	c := s.dial(t, remote.Options{})

	ctx, cancel := context.WithCancel(bg)
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, []byte("block"))
		done <- err
	}()
	<-started
	cancel()
	require.ErrorIs(t, <-done, context.Canceled, "the handler's context ended, and its error came back")

	go func() {
		_, err := c.Call(bg, []byte("block"))
		done <- err
	}()
	<-started
	s.stop() // waits for the handler, whose context the close ended
	err := <-done
	require.True(t, kv.IsMaybeCommitted(err), "a call in flight when its connection is lost: %v", err)
	require.Equal(t, kv.CodeCommitUnknownResult, kv.Code(err))

	s.start()
	got, err := c.Call(bg, []byte("echo 3"))
	require.NoError(t, err, "the call waits for the reconnect")
	require.Equal(t, "xxx", string(got))

	// With no server to come back, a call ends once the reconnect gives
	// up, with an error that is not retried.
	short := s.dial(t, remote.Options{ReconnectTimeout: 50 * time.Millisecond})
	s.stop()
	for range 3 {
		if _, err = short.Call(bg, []byte("echo 1")); !kv.IsRetryable(err) {
			break
		}
	}
	require.ErrorContains(t, err, "no server to call")
	require.False(t, kv.IsRetryable(err), "%v", err)
}

// TestCallVersions: a server of another version refuses a client, naming
// both versions and protocols, before any call.
func TestCallVersions(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{})
	t.Cleanup(func() { _ = db.Close() })
	s := &served{t: t, db: db, path: sockPath(t), opts: remote.ServerWithVersion(remote.ServerOptions{Logger: quiet, Call: echoCalls(nil)}, "v9.9.9")}
	s.start()
	t.Cleanup(s.stop)
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	_, err := remote.Dial(ctx, remote.Options{Dial: unixDial(s.path), Logger: quiet})
	var ve *remote.VersionError
	require.True(t, errors.As(err, &ve), "%v", err)
	require.ErrorContains(t, err, "v9.9.9")
	require.ErrorContains(t, err, fmt.Sprintf("protocol %d", remote.ProtocolVersion))
	require.Equal(t, 4, remote.ProtocolVersion, "calls came with protocol 2, BitAnd with 3, write conflict ranges with 4")
}
