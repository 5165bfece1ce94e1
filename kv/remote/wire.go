// The wire format: length-prefixed frames, their message types, and the
// encoding of their fields.

package remote

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/fdbqueue/fdbqueue/kv"
)

// ProtocolVersion is the version of the wire protocol. Both sides send it
// in the handshake, and refuse a peer with another.
const ProtocolVersion = 4

// magic opens a client's hello: a peer that is not a kv/remote client is
// told apart at its first bytes.
const magic = "fdbq-kvr"

// Frame and payload bounds. A frame is its length (4 bytes, big-endian,
// not counting itself) and that many bytes; the first is its type.
const (
	// maxFrame bounds every frame, both ways: about nine times the
	// largest single operation the engines accept (a key of
	// kv.MaxKeySize and a value of kv.MaxValueSize). A longer length is
	// refused before anything is allocated.
	maxFrame = 1 << 20
	// maxWireKey is the longest key a request carries. The engines
	// refuse keys over kv.MaxKeySize; a key over maxWireKey is refused by
	// the client (key_too_large) without being sent.
	maxWireKey = 64 << 10
	// chunkBytes is about how many bytes of results a response frame
	// holds before the rest go in the next frame of the same request;
	// also how many bytes of keys one GetMany request holds.
	chunkBytes = 256 << 10
	// maxMessage bounds an error's text on the wire.
	maxMessage = 4 << 10
)

// Message types. Client to server:
const (
	mHello              = 1  // magic, protocol version, module version
	mBegin              = 2  // txn: a new server transaction
	mGet                = 3  // txn, req, flags, key
	mGetMany            = 4  // txn, req, flags, count, keys
	mRange              = 5  // txn, req, flags, limit, mode, begin, end: a page or a whole range
	mFirst              = 6  // txn, req, flags, begin, end
	mReadVersion        = 7  // txn, req
	mMetadataVersion    = 8  // txn, req, flags
	mSet                = 9  // txn, key, value
	mClear              = 10 // txn, key
	mClearRange         = 11 // txn, begin, end
	mAdd                = 12 // txn, key, delta (8 bytes, little-endian)
	mCompareAndClear    = 13 // txn, key, value
	mBump               = 14 // txn
	mReadConflictKey    = 15 // txn, key
	mReadConflictRange  = 16 // txn, begin, end
	mWriteConflictKey   = 17 // txn, key
	mWatch              = 18 // txn, watch, key, expected (optional value)
	mWatchCancel        = 19 // watch
	mCommit             = 20 // txn, req
	mOnError            = 21 // txn, req, error
	mCancel             = 22 // txn: Cancel, and forget the transaction
	mAbort              = 23 // txn: the client's context is done
	mCall               = 24 // req, payload: a call of the server's handler (ServerOptions.Call)
	mCallAbort          = 25 // req: the call's context is done
	mBitAnd             = 26 // txn, key, param (ProtocolVersion 3 on)
	mWriteConflictRange = 27 // txn, begin, end (ProtocolVersion 4 on)
)

// Server to client:
const (
	mHelloReply = 64 // protocol version, module version, refusal ("" if none)
	mResp       = 65 // req, status, payload
	mWatchValue = 66 // watch, value (optional): what the watch compares with
	mWatchDone  = 67 // watch, error (optional): it fired (none) or failed
)

// Response statuses.
const (
	stOK   = 0 // the last frame of the answer
	stMore = 1 // more frames of the answer follow
	stErr  = 2 // the answer is an error
)

// Request flags.
const (
	fSnapshot = 1 << iota // read through the snapshot view
	fReverse              // a reverse range read
	fWhole                // mRange: the whole result (a future), read serializably unless fSnapshot
)

var errMalformed = errors.New("malformed frame")

// enc appends fields to a frame.
type enc struct{ b []byte }

func (e *enc) u8(v byte)        { e.b = append(e.b, v) }
func (e *enc) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *enc) varint(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *enc) bytes(v []byte)   { e.uvarint(uint64(len(v))); e.b = append(e.b, v...) }
func (e *enc) str(v string)     { e.uvarint(uint64(len(v))); e.b = append(e.b, v...) }

// opt appends an optional value: absent (nil) or present, empty included.
func (e *enc) opt(v []byte) {
	if v == nil {
		e.u8(0)
		return
	}
	e.u8(1)
	e.bytes(v)
}

// dec reads the fields of a frame; the first malformed field sets err, and
// every later read returns zero values.
type dec struct {
	b   []byte
	err error
}

func (d *dec) fail() {
	if d.err == nil {
		d.err = errMalformed
	}
	d.b = nil
}

func (d *dec) u8() byte {
	if len(d.b) < 1 {
		d.fail()
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *dec) uvarint() uint64 { return number(d, binary.Uvarint) }
func (d *dec) varint() int64   { return number(d, binary.Varint) }

// number reads a varint with read.
func number[T any](d *dec, read func([]byte) (T, int)) T {
	v, n := read(d.b)
	if n <= 0 {
		d.fail()
		var zero T
		return zero
	}
	d.b = d.b[n:]
	return v
}

// count reads a count of items, each at least min bytes long: a count the
// rest of the frame cannot hold is malformed, never allocated for.
func (d *dec) count(min int) int {
	n := d.uvarint()
	if n > uint64(len(d.b)/min) {
		d.fail()
		return 0
	}
	return int(n)
}

// bytes returns a field's bytes, aliasing the frame; never nil.
func (d *dec) bytes() []byte {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return []byte{}
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

// key is bytes no longer than maxWireKey.
func (d *dec) key() []byte {
	k := d.bytes()
	if len(k) > maxWireKey {
		d.fail()
	}
	return k
}

func (d *dec) str() string { return string(d.bytes()) }

// opt reads an optional value: nil if absent.
func (d *dec) opt() []byte {
	switch d.u8() {
	case 0:
		return nil
	case 1:
		return d.bytes()
	}
	d.fail()
	return nil
}

// end fails the decoding if bytes are left over.
func (d *dec) end() error {
	if len(d.b) > 0 {
		d.fail()
	}
	return d.err
}

// readFrame reads one frame into a buffer of its own: what is decoded from
// it may alias it.
func readFrame(r *bufio.Reader) ([]byte, error) {
	var fr frameReader
	return fr.read(r)
}

// frameReader reads frames. It carves the small ones out of slabs it
// allocates, one allocation for many frames: each frame is still its own,
// and a slab lives as long as anything decoded from one of its frames.
type frameReader struct {
	slab []byte
}

const (
	slabSize     = 16 << 10
	maxSlabFrame = 1 << 10 // a frame over this has a buffer of its own
)

func (fr *frameReader) read(r *bufio.Reader) ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(h[:])
	if n == 0 || n > maxFrame {
		return nil, fmt.Errorf("%w: a frame of %d bytes (allowed: 1 to %d)", errProtocol, n, maxFrame)
	}
	var b []byte
	if n > maxSlabFrame {
		b = make([]byte, n)
	} else {
		if len(fr.slab) < int(n) {
			fr.slab = make([]byte, slabSize)
		}
		b, fr.slab = fr.slab[:n:n], fr.slab[n:]
	}
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return b, nil
}

// errProtocol marks a peer that broke the protocol: its connection is
// closed.
var errProtocol = errors.New("fdbqueue: kv/remote protocol violation")

// rowsSize is what a row costs on the wire, about.
func rowSize(e kv.KeyValue) int { return len(e.Key) + len(e.Value) + 6 }
