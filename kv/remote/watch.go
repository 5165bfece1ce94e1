// Watches: the server's engine watches; the client's survive a lost
// connection by being armed again on the next one.

package remote

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
)

// watch is a kv.Watch on a key: a watch of the server's engine, registered
// on a connection under an id. Once its transaction committed it is
// durable: when its connection is lost, it is armed again on the next
// (rearm), compared with the value the first one compared with, which the
// server sent when it made it.
type watch struct {
	d    *DB
	key  []byte
	done chan struct{}
	ctx  context.Context // done once the watch settled; bounds arming it again
	stop context.CancelFunc

	mu      sync.Mutex
	err     error
	settled bool
	value   []byte // what it compares with
	known   bool   // value came
	durable bool   // its transaction committed
	att     *attempt
	// Its registration: c and id, and txn, the server transaction that
	// made it there; c nil when it has none.
	c        *conn
	id, txn  uint64
	rearming bool  // rearm runs
	interim  bool  // the registration is rearm's, not yet committed
	rearmErr error // the error the server failed rearm's registration with
}

var _ kv.Watch = (*watch)(nil)

func newWatch(d *DB, key []byte) *watch {
	w := &watch{d: d, key: bytes.Clone(key), done: make(chan struct{})}
	w.ctx, w.stop = context.WithCancel(d.ctx)
	return w
}

func (w *watch) Done() <-chan struct{} { return w.done }

func (w *watch) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *watch) Wait(ctx context.Context) error { return kv.WaitWatch(ctx, w.done, w.Err) }

// Cancel fails the watch with operation_cancelled at once, and has the
// server cancel its engine's watch.
func (w *watch) Cancel() {
	w.mu.Lock()
	c, id, txn := w.c, w.id, w.txn
	w.c = nil
	w.settleLocked(kv.Errorf(kv.CodeOperationCancelled, "the watch was cancelled"))
	w.mu.Unlock()
	if c != nil {
		c.cancelWatch(txn, id)
	}
}

// settleLocked fires (nil) or fails the watch, once. Callers hold w.mu.
func (w *watch) settleLocked(err error) {
	if w.settled {
		return
	}
	w.settled, w.err = true, err
	w.stop()
	close(w.done)
}

func (w *watch) settle(err error) {
	w.mu.Lock()
	w.settleLocked(err)
	w.mu.Unlock()
}

// register files w on c under a new id, made by server transaction txn.
func (w *watch) register(c *conn, txn uint64, interim bool) (uint64, bool) {
	id := w.d.nextWatch.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.watches == nil {
		return 0, false
	}
	c.watches[id] = w
	w.mu.Lock()
	w.c, w.id, w.txn, w.interim, w.rearmErr = c, id, txn, interim, nil
	w.mu.Unlock()
	return id, true
}

// setValue records what the server's watch compares with.
func (w *watch) setValue(v []byte) {
	w.mu.Lock()
	w.value, w.known = v, true
	w.mu.Unlock()
}

// committed marks the watch of a transaction that committed on c. Called
// with c.mu held.
func (w *watch) committed(c *conn) {
	w.mu.Lock()
	if w.c == c {
		w.durable, w.interim, w.att = true, false, nil
	}
	w.mu.Unlock()
}

// serverDone settles the watch as the server's did: it fired (err nil) or
// failed. The failure of rearm's registration, not yet committed, is
// rearm's to judge.
func (w *watch) serverDone(c *conn, id uint64, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.c != c || w.id != id {
		return
	}
	w.c = nil
	if err != nil && w.interim {
		w.rearmErr = err
		return
	}
	w.settleLocked(err)
}

// connLost is called once c, where w was registered, failed: a durable
// watch is armed again; any other fails as its transaction did.
func (w *watch) connLost(c *conn, cause error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.c != c || w.settled {
		return
	}
	w.c = nil
	switch {
	case w.d.isClosed():
		w.settleLocked(kv.Errorf(kv.CodeClientInvalidOperation, "the database handle was closed"))
	case w.durable && w.known:
		if !w.rearming {
			w.rearming = true
			w.d.wg.Add(1)
			go w.rearm()
		}
	case w.interim:
		// rearm's transaction fails with the connection, and rearm
		// tries again.
	case w.att != nil && w.att.committing.Load():
		w.settleLocked(errLostCommit(cause))
	default:
		w.settleLocked(errLost(cause))
	}
}

// rearm arms the watch again on the DB's connection, until it has a
// registration there whose transaction committed, or it settles: in one
// transaction, the server makes a watch and compares the key's value with
// the one the first watch compared with; it fires the watch if they
// differ. A change made and undone while no server watched is missed, as
// FoundationDB misses one made and undone between two of its checks (the
// ABA case its documentation warns of).
func (w *watch) rearm() {
	defer w.d.wg.Done()
	backoff := minBackoff
	for {
		w.mu.Lock()
		if w.settled || w.c != nil && !w.interim {
			w.rearming = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		err := w.armOnce()
		if err == nil {
			continue // registered and committed: the loop's check ends it
		}
		if w.ctx.Err() != nil {
			if w.d.isClosed() {
				w.settle(kv.Errorf(kv.CodeClientInvalidOperation, "the database handle was closed"))
			}
			continue // settled: the loop's check ends it
		}
		if !kv.IsRetryable(err) {
			w.settle(err)
			continue
		}
		t := time.NewTimer(backoff/2 + rand.N(backoff/2+1))
		select {
		case <-t.C:
		case <-w.ctx.Done():
			t.Stop()
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// armOnce registers the watch on the DB's connection in a transaction of
// its own, and commits it. A failure of the server's watch (too many
// watches, say) is its error.
func (w *watch) armOnce() error {
	c, err := w.d.awaitConn(w.ctx)
	if err != nil {
		var ve *VersionError
		if err == w.ctx.Err() || errors.As(err, &ve) {
			return err // the end, or final
		}
		return errLost(err)
	}
	t := newTxn(w.d, w.ctx, c, nil)
	defer t.Cancel()
	a := t.a
	id, ok := w.register(c, a.id, true)
	if !ok {
		return errLost(c.failure())
	}
	w.mu.Lock()
	expect := w.value
	w.mu.Unlock()
	a.watches = append(a.watches, w)
	if e, ok := a.start(mWatch); ok {
		e.uvarint(id)
		e.bytes(w.key)
		e.u8(1)
		e.opt(expect)
		c.w.send(&e)
	}
	if err := t.Commit(); err != nil {
		w.unregister(c, id)
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.rearmErr != nil {
		return w.rearmErr
	}
	return nil
}

// unregister drops a registration that rearm gives up.
func (w *watch) unregister(c *conn, id uint64) {
	c.mu.Lock()
	if c.watches != nil {
		delete(c.watches, id)
	}
	c.mu.Unlock()
	w.mu.Lock()
	if w.c == c && w.id == id {
		w.c = nil
	}
	w.mu.Unlock()
}

// cancelWatch has the server cancel a watch; its answer, if any, is
// dropped.
func (c *conn) cancelWatch(txn, id uint64) {
	c.mu.Lock()
	if c.watches != nil {
		delete(c.watches, id)
	}
	c.mu.Unlock()
	if e, err := c.w.start(mWatchCancel); err == nil {
		e.uvarint(txn)
		e.uvarint(id)
		c.w.send(&e)
	}
}

// Watch implements kv.Transaction: the server makes its engine's watch in
// the transaction, and sends the value it compares with.
func (t *txn) Watch(key []byte) kv.Watch {
	w := newWatch(t.d, key)
	if err := t.check(); err != nil {
		w.settle(err)
		return w
	}
	if len(key) > maxWireKey {
		w.settle(errKeyTooLong(key))
		return w
	}
	a := t.a
	if err := a.lost(); err != nil {
		w.settle(err)
		return w
	}
	id, ok := w.register(a.c, a.id, false)
	if !ok {
		w.settle(errLost(a.c.failure()))
		return w
	}
	w.mu.Lock()
	w.att = a
	w.mu.Unlock()
	a.watches = append(a.watches, w)
	if e, ok := a.start(mWatch); ok {
		e.uvarint(id)
		e.bytes(key)
		e.u8(0)
		a.c.w.send(&e)
	}
	return w
}
