// Calls: a request that the server's handler (ServerOptions.Call) answers,
// outside any transaction, such as a statement run in the serving process.

package remote

import (
	"context"
	"errors"
	"fmt"
)

// ErrNoCalls is returned by DB.Call when the server takes no calls (its
// ServerOptions.Call is nil), and may be returned by a handler that cannot
// take one now: the caller does the work itself instead.
var ErrNoCalls = errors.New("fdbqueue: kv/remote: the server takes no calls")

// MaxCallSize bounds a call's payload: Call refuses a longer one
// (ErrNoCalls, so that the caller does the work itself). An answer may be
// of any length: it comes in frames of about 256 KiB.
const MaxCallSize = maxFrame - 64

// maxCalls bounds the calls a connection has running at once: a client
// that makes more is cut off.
const maxCalls = 1 << 16

// Call sends payload to the server's handler and returns its answer. It
// waits for a connection while the DB reconnects (as a transaction's
// OnError does), for up to Options.ReconnectTimeout. When ctx ends, the
// server is told (the handler's context ends) and Call still waits for
// the answer, which may be a result: the handler may have finished.
//
// Errors: ErrNoCalls when the server takes none (or payload is over
// MaxCallSize); connection_failed (1026) when the connection failed
// before the call was sent, which is retryable and means it was not made;
// a final error when there is no server to call (the reconnect gave up, the
// DB is closed, the server is of another version); and
// commit_unknown_result (1021) when the connection was lost while the
// call was in flight: the handler may have run, or still run, and a retry
// must be one the handler can tell from a first call (a statement's
// receipt token). Errors of the handler arrive as errors cross the wire.
func (d *DB) Call(ctx context.Context, payload []byte) ([]byte, error) {
	if len(payload) > MaxCallSize {
		return nil, fmt.Errorf("%w: a call of %d bytes (at most %d)", ErrNoCalls, len(payload), MaxCallSize)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := d.awaitConn(ctx)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return nil, err
	default:
		// Closed, a server of another version, or a reconnect that gave
		// up: final, as for a transaction's OnError.
		return nil, fmt.Errorf("fdbqueue: kv/remote: no server to call: %w", err)
	}
	if c.caps&capCalls == 0 {
		return nil, ErrNoCalls
	}
	cl := &call{typ: mCall, ch: make(chan struct{}, 1)}
	if !c.register(cl) {
		return nil, errLost(c.failure())
	}
	if e, err := c.w.start(mCall); err == nil {
		e.uvarint(cl.req)
		e.bytes(payload)
		c.w.send(&e)
	} // else the connection failed, and failing it answers cl
	select {
	case <-cl.ch:
	case <-ctx.Done():
		if e, err := c.w.start(mCallAbort); err == nil {
			e.uvarint(cl.req)
			c.w.send(&e)
		}
		<-cl.ch
	}
	if cl.err != nil {
		return nil, cl.err
	}
	if cl.val == nil {
		cl.val = []byte{}
	}
	return cl.val, nil
}

// startCall runs the handler on a call, on a goroutine of its own, and
// answers it.
func (c *sconn) startCall(req uint64, payload []byte) error {
	if c.s.call == nil {
		c.respondErr(req, ErrNoCalls)
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.mu.Lock()
	if c.calls == nil {
		c.mu.Unlock()
		cancel()
		return nil // the connection ended
	}
	if _, ok := c.calls[req]; ok || len(c.calls) >= maxCalls {
		c.mu.Unlock()
		cancel()
		if ok {
			return fmt.Errorf("%w: call %d made twice", errProtocol, req)
		}
		return fmt.Errorf("%w: more than %d calls at once", errProtocol, maxCalls)
	}
	c.calls[req] = cancel
	c.wg.Add(1)
	c.mu.Unlock()
	payload = append([]byte(nil), payload...)
	go func() {
		defer c.wg.Done()
		resp, err := c.s.call(ctx, payload)
		c.mu.Lock()
		if c.calls != nil {
			delete(c.calls, req)
		}
		c.mu.Unlock()
		cancel()
		if err != nil {
			c.respondErr(req, err)
			return
		}
		c.respondCall(req, resp)
	}()
	return nil
}

// abortCall ends the context of a call whose caller's context is done.
func (c *sconn) abortCall(req uint64) {
	c.mu.Lock()
	cancel := c.calls[req]
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// respondCall answers a call with resp, in frames of about chunkBytes.
func (c *sconn) respondCall(req uint64, resp []byte) {
	for {
		n := min(len(resp), chunkBytes)
		last := n == len(resp)
		e, ok := c.resp(req, status(last))
		if !ok {
			return
		}
		e.bytes(resp[:n])
		c.w.send(&e)
		if last {
			return
		}
		resp = resp[n:]
	}
}
