// The frame writer both sides use: frames are appended to one buffer, and
// one goroutine writes what has queued up in one call.

package remote

import (
	"encoding/binary"
	"fmt"
	"net"
	"runtime"
	"sync"
)

// maxQueued is how many bytes of frames may wait for the writer before
// senders wait for it: a fast sender cannot fill memory while the peer
// reads slowly.
const maxQueued = 8 << 20

// writer coalesces frames. A sender appends a whole frame to buf under mu
// (start, then the fields, then send); the loop takes everything queued and
// writes it in one call, so frames sent while a write is under way go out
// together in the next. It never waits for anything but the connection.
type writer struct {
	nc     net.Conn
	onFail func(error) // ends the connection: a write failed, or a frame was too long
	mu     sync.Mutex
	room   sync.Cond // buf was taken by the loop, or the writer failed
	buf    []byte
	spare  []byte // the buffer written last, reused
	frame  int    // where the frame being appended starts
	err    error  // set once the writer failed: no more frames
	wake   chan struct{}
}

func newWriter(nc net.Conn, onFail func(error)) *writer {
	w := &writer{nc: nc, onFail: onFail, wake: make(chan struct{}, 1)}
	w.room.L = &w.mu
	return w
}

// start begins a frame of type typ, holding mu until send. It fails once
// the writer failed.
func (w *writer) start(typ byte) (enc, error) {
	w.mu.Lock()
	for len(w.buf) > maxQueued && w.err == nil {
		w.room.Wait()
	}
	if w.err != nil {
		err := w.err
		w.mu.Unlock()
		return enc{}, err
	}
	w.frame = len(w.buf)
	return enc{b: append(w.buf, 0, 0, 0, 0, typ)}, nil
}

// send ends the frame start began and releases mu. The senders bound what
// they put in a frame; one over maxFrame all the same (an engine's value
// larger than its own limit) is not sent, and ends the connection.
func (w *writer) send(e *enc) {
	n := len(e.b) - w.frame - 4
	if n > maxFrame {
		w.buf = e.b[:w.frame]
		w.mu.Unlock()
		w.onFail(fmt.Errorf("%w: a frame of %d bytes to send, over the limit of %d", errProtocol, n, maxFrame))
		return
	}
	binary.BigEndian.PutUint32(e.b[w.frame:], uint32(n))
	w.buf = e.b
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// next ends the frame being appended and begins another of type typ,
// still holding mu.
func (w *writer) next(e *enc, typ byte) {
	binary.BigEndian.PutUint32(e.b[w.frame:], uint32(len(e.b)-w.frame-4))
	w.frame = len(e.b)
	e.b = append(e.b, 0, 0, 0, 0, typ)
}

// fail stops the writer: frames not yet written are dropped, and later
// ones refused with err.
func (w *writer) fail(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
		w.buf = nil
	}
	w.room.Broadcast()
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// loop writes what is queued until the writer fails, or a write does
// (onFail is then called with its error).
func (w *writer) loop() {
	for {
		w.mu.Lock()
		for len(w.buf) == 0 && w.err == nil {
			w.mu.Unlock()
			<-w.wake
			// Let the goroutines that are ready to send (those a batch
			// of answers just woke) queue their frames: they go out
			// in this write, not each in one of its own.
			runtime.Gosched()
			w.mu.Lock()
		}
		if w.err != nil {
			w.mu.Unlock()
			return
		}
		b := w.buf
		w.buf, w.spare = w.spare[:0], nil
		w.room.Broadcast()
		w.mu.Unlock()
		if _, err := w.nc.Write(b); err != nil {
			w.onFail(err)
			return
		}
		if cap(b) <= 1<<20 {
			w.mu.Lock()
			w.spare = b[:0]
			w.mu.Unlock()
		}
	}
}
