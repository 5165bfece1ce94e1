package shared

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// TestCallAgainWaitsForClosedHandler: a client's call runs in the handler
// of one handle of the serving process (an executor, for exec), whose
// program closes that handle while the call still runs (its commit in
// flight, say), as the client's connection is lost. The client calls
// again, with the statement's token marked unsure: that call must not run
// until the first returned, neither in another handle's handler (an
// executor whose one-call-of-a-token-at-a-time does not know of the
// first) nor, when there is no other, in the client itself (ErrNoCalls):
// either could pop a task beside the first call's, which the client never
// sees. Closing the handle ends the context of its calls.
func TestCallAgainWaitsForClosedHandler(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		other bool // another handle has a handler
	}{
		{"another handler", true},
		{"no other handler", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			waiting := make(chan struct{}, 1)
			a := openHost(t, dir, func(h *host) {
				h.callWaits = func() {
					select {
					case waiting <- struct{}{}:
					default:
					}
				}
			})
			require.True(t, a.Serving())
			registry.mu.Lock()
			a.h.refs++
			registry.mu.Unlock()
			b := &DB{h: a.h}
			t.Cleanup(func() { _ = b.Close() })

			started := make(chan context.Context, 1)
			release := make(chan struct{})
			releaseOnce := sync.OnceFunc(func() { close(release) })
			defer releaseOnce() // a failure must not leave the call held: closing waits for it
			var aReturned atomic.Bool
			a.ServeCalls(func(ctx context.Context, req []byte) ([]byte, error) {
				started <- ctx
				<-release // still finishing, whatever its context
				aReturned.Store(true)
				return append([]byte("a:"), req...), nil
			})
			bStarted := make(chan bool, 1) // whether a's call had returned
			if c.other {
				b.ServeCalls(func(ctx context.Context, req []byte) ([]byte, error) {
					bStarted <- aReturned.Load()
					return append([]byte("b:"), req...), nil
				})
			}

			var mu sync.Mutex
			var conns []net.Conn
			client := openHost(t, dir, func(h *host) {
				h.clientOnly = true
				h.wrapConn = func(c net.Conn) net.Conn {
					mu.Lock()
					conns = append(conns, c)
					mu.Unlock()
					return c
				}
			})
			ctx := context.Background()
			first := make(chan error, 1)
			go func() {
				_, _, err := client.Forward(ctx, []byte("pop"))
				first <- err
			}()
			actx := <-started
			require.NoError(t, a.Close())
			require.Error(t, actx.Err(), "closing the handle ends its calls' context")
			mu.Lock()
			require.NoError(t, conns[len(conns)-1].Close()) // the connection is lost
			mu.Unlock()
			err := <-first
			require.True(t, kv.IsMaybeCommitted(err), "%v", err)

			type outcome struct {
				resp []byte
				ok   bool
				err  error
				done bool // whether a's call had returned
			}
			again := make(chan outcome, 1)
			go func() {
				resp, ok, err := client.Forward(ctx, []byte("pop"))
				again <- outcome{resp, ok, err, aReturned.Load()}
			}()
			select {
			case <-waiting:
			case sawA := <-bStarted:
				require.True(t, sawA, "the call again ran in another handler while the first still ran")
			case o := <-again:
				require.True(t, o.done, "the call again was answered (ok %v, %v) while the first still ran", o.ok, o.err)
			}
			releaseOnce()
			o := <-again
			require.NoError(t, o.err)
			if c.other {
				require.True(t, o.ok)
				require.Equal(t, "b:pop", string(o.resp))
				require.True(t, <-bStarted)
			} else {
				require.False(t, o.ok, "no handler: the caller runs it")
				require.True(t, o.done)
			}
		})
	}
}
