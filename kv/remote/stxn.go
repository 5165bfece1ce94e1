// The server's transactions: a client transaction's operations applied in
// order to a transaction of the database, on a goroutine of its own.

package remote

import (
	"bytes"
	"context"
	"sync"

	"github.com/fdbqueue/fdbqueue/kv"
)

// op is a decoded frame of a transaction. Its byte fields alias the
// frame, which is its own: the engines copy what they keep.
type op struct {
	typ       byte
	flags     byte
	req       uint64
	key, val  []byte // the key; a range's begin and end; a value
	keys      [][]byte
	limit     int64
	mode      kv.StreamingMode
	watch     uint64
	expect    []byte
	hasExpect bool
	err       error
	size      int // the frame's, counted in inflight
}

// stxn is a client transaction on the server: the database's transaction
// (tr; err if it could not be made), and the operations waiting for it.
// One goroutine at a time applies them (drain, run by a worker when the
// first arrives, until none is left), so that a slow one (a commit
// waiting for the disk, a backoff) holds up its own transaction only.
type stxn struct {
	c         *sconn
	id        uint64
	ctx       context.Context
	cancelCtx context.CancelFunc
	tr        kv.Transaction // nil once forgotten
	err       error          // why tr could not be made
	cerr      error          // the first error of a conflict range, reported by Commit

	mu      sync.Mutex
	ops     []op
	head    int
	running bool // drain runs
	closed  bool // the connection ended: apply nothing more
}

// cancel cancels the transaction's context (the client's context is done,
// or the client cancelled it): what blocks in the engine returns.
func (x *stxn) cancel() { x.cancelCtx() }

// enqueue hands an operation to the transaction.
func (x *stxn) enqueue(o op) {
	if o.typ == mCancel {
		x.cancel() // at once: end what blocks; the Cancel itself comes in order
	}
	x.mu.Lock()
	if x.closed {
		x.mu.Unlock()
		x.c.release(o.size)
		return
	}
	x.ops = append(x.ops, o)
	if !x.running {
		x.running = true
		x.c.wg.Add(1)
		x.c.s.schedule(x)
	}
	x.mu.Unlock()
}

// drain applies the waiting operations, then exits.
func (x *stxn) drain() {
	defer x.c.wg.Done()
	for {
		x.mu.Lock()
		if x.closed || x.head == len(x.ops) {
			closed := x.closed
			x.ops, x.head, x.running = x.ops[:0], 0, false
			x.mu.Unlock()
			if closed {
				x.finish()
			}
			return
		}
		o := x.ops[x.head]
		x.ops[x.head] = op{}
		x.head++
		x.mu.Unlock()
		x.apply(&o)
		x.c.release(o.size)
	}
}

// end is called once the connection ended: the transaction is cancelled
// now if nothing is being applied, else once that returns.
func (x *stxn) end() {
	x.cancel()
	x.mu.Lock()
	x.closed = true
	for _, o := range x.ops[x.head:] {
		x.c.release(o.size)
	}
	x.ops, x.head = nil, 0
	idle := !x.running
	x.running = true
	x.mu.Unlock()
	if idle {
		x.finish()
	}
}

// finish cancels the database's transaction, once the client is done with
// it; the ops that come for it later are answered as for no transaction.
func (x *stxn) finish() {
	if x.tr != nil {
		x.tr.Cancel()
		x.tr = nil
	}
	x.cancel()
}

// view is the transaction, or its snapshot view.
func (x *stxn) view(flags byte) kv.ReadTransaction {
	if flags&fSnapshot != 0 {
		return x.tr.Snapshot()
	}
	return x.tr
}

// apply applies one operation, and answers it if it wants an answer.
func (x *stxn) apply(o *op) {
	c := x.c
	if x.tr == nil {
		switch {
		case o.typ == mWatchCancel:
			c.cancelWatch(o.watch)
		case x.err != nil && needsReply(o.typ):
			c.respondErr(o.req, x.err)
		default:
			c.unknown(o)
		}
		return
	}
	tr := x.tr
	switch o.typ {
	case mGet:
		v, err := x.view(o.flags).Get(o.key)
		c.respondValue(o.req, v, err)
	case mMetadataVersion:
		v, err := kv.MetadataVersion(x.view(o.flags))
		c.respondValue(o.req, v, err)
	case mGetMany:
		vals, err := kv.GetMany(x.view(o.flags), o.keys)
		if err != nil {
			c.respondErr(o.req, err)
			return
		}
		c.respondValues(o.req, vals)
	case mRange:
		x.readRange(o)
	case mFirst:
		e, ok, err := kv.First(x.view(o.flags), kv.Range{Begin: o.key, End: o.val}, o.flags&fReverse != 0)
		c.respondFirst(o.req, e, ok, err)
	case mReadVersion:
		v, err := tr.GetReadVersion()
		c.respondVersion(o.req, v, err)
	case mSet:
		tr.Set(o.key, o.val)
	case mClear:
		tr.Clear(o.key)
	case mClearRange:
		tr.ClearRange(kv.Range{Begin: o.key, End: o.val})
	case mAdd:
		var d uint64
		for i := range 8 {
			d |= uint64(o.val[i]) << (8 * i)
		}
		tr.Add(o.key, int64(d))
	case mCompareAndClear:
		tr.CompareAndClear(o.key, o.val)
	case mBitAnd:
		tr.BitAnd(o.key, o.val)
	case mBump:
		kv.BumpMetadataVersion(tr)
	case mReadConflictKey:
		x.noteConflict(tr.AddReadConflictKey(o.key))
	case mReadConflictRange:
		x.noteConflict(tr.AddReadConflictRange(kv.Range{Begin: o.key, End: o.val}))
	case mWriteConflictKey:
		x.noteConflict(tr.AddWriteConflictKey(o.key))
	case mWriteConflictRange:
		x.noteConflict(kv.AddWriteConflictRange(tr, kv.Range{Begin: o.key, End: o.val}))
	case mWatch:
		x.watch(o)
	case mWatchCancel:
		c.cancelWatch(o.watch)
	case mCommit:
		err := x.cerr
		if err == nil {
			err = tr.Commit()
		}
		c.respondErr(o.req, err)
		if err == nil {
			// Committed: the client sends nothing more for it.
			c.forget(x)
			x.finish()
		}
	case mOnError:
		err := tr.OnError(o.err)
		if err == nil {
			x.cerr = nil
		}
		c.respondRetry(o.req, err == nil)
	case mCancel:
		c.forget(x)
		x.finish()
	}
}

// noteConflict keeps the first error of a conflict range for the commit:
// the client does not wait for the answer of one.
func (x *stxn) noteConflict(err error) {
	if err != nil && x.cerr == nil {
		x.cerr = err
	}
}

// readRange reads a range: whole (a future: kv.GetRangeAsync's read, its
// read conflict the engine's), or a page of an iterator, through the
// snapshot view, at most o.limit rows and about chunkBytes.
func (x *stxn) readRange(o *op) {
	r := kv.Range{Begin: o.key, End: o.val}
	opts := kv.RangeOptions{Limit: int(o.limit), Reverse: o.flags&fReverse != 0, Mode: o.mode}
	if o.flags&fWhole != 0 {
		rows, err := kv.GetRangeAsync(x.view(o.flags), r, opts).Get()
		if err != nil {
			x.c.respondErr(o.req, err)
			return
		}
		x.c.respondRows(o.req, rows, false)
		return
	}
	it := x.tr.Snapshot().GetRange(r, opts)
	var rows []kv.KeyValue
	size, more := 0, false
	for it.Next() {
		e := it.KeyValue()
		rows = append(rows, e)
		size += rowSize(e)
		if size >= chunkBytes || len(rows) == opts.Limit {
			more = true
			break
		}
	}
	if err := it.Err(); err != nil {
		x.c.respondErr(o.req, err)
		return
	}
	x.c.respondRows(o.req, rows, more)
}

// Watches.

// swatch is a watch of the database made for a client, until it settles
// and the client is told.
type swatch struct {
	w kv.Watch
}

// watch makes the database's watch, and tells the client what it compares
// with; a rearm (hasExpect) compares the key's value with what the first
// watch compared with, and fires at once if they differ. A watch that
// failed when made is reported now, before anything the transaction
// answers next.
func (x *stxn) watch(o *op) {
	c := x.c
	w := x.tr.Watch(o.key)
	select {
	case <-w.Done():
		c.sendWatchDone(o.watch, w.Err())
		return
	default:
	}
	v, err := x.tr.Snapshot().Get(o.key)
	switch {
	case err != nil:
		// Nothing to compare with: the client cannot arm it again.
	case o.hasExpect:
		if (v == nil) != (o.expect == nil) || !bytes.Equal(v, o.expect) {
			w.Cancel()
			c.sendWatchDone(o.watch, nil)
			return
		}
	default:
		c.sendWatchValue(o.watch, v)
	}
	c.mu.Lock()
	if c.watches == nil || c.txns == nil {
		c.mu.Unlock()
		w.Cancel()
		return
	}
	c.watches[o.watch] = &swatch{w: w}
	c.wg.Add(1)
	c.mu.Unlock()
	go c.await(o.watch, w)
}

// await tells the client when the watch settles, unless it was cancelled
// (the client no longer listens) or the connection ended first (the
// watch is then cancelled).
func (c *sconn) await(id uint64, w kv.Watch) {
	defer c.wg.Done()
	select {
	case <-w.Done():
	case <-c.done:
		w.Cancel()
	}
	c.mu.Lock()
	_, mine := c.watches[id]
	delete(c.watches, id)
	c.mu.Unlock()
	if mine {
		c.sendWatchDone(id, w.Err())
	}
}

// cancelWatch cancels a watch for its client.
func (c *sconn) cancelWatch(id uint64) {
	c.mu.Lock()
	sw := c.watches[id]
	delete(c.watches, id)
	c.mu.Unlock()
	if sw != nil {
		sw.w.Cancel()
	}
}
