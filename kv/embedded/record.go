// A committed transaction's mutations as a batch, and the batch's encoding
// as a log record.

package embedded

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"

	"github.com/fdbqueue/fdbqueue/kv"
)

// batch is a committed transaction's mutations: its range clears, then its
// writes in key order. Applying a batch at a version is the same code live
// and when the log is replayed, so atomic operations resolve against the
// same values in both.
type batch struct {
	clears []kv.Range
	writes []*write
	// bump makes the commit the metadata version's last bump
	// (metadata.go). The log does not record it: recovery counts as a
	// bump (recover).
	bump bool
	// pre holds the records of the plain sets, written ahead
	// (prebuilt.go); nil for a batch read from the log.
	pre prebuilt
}

// Log record payload: uvarint version, uvarint #clears, each (bytes begin,
// bytes end), uvarint #writes, each (bytes key, byte base, [bytes value if
// base is baseSet], uvarint #ops, each (byte kind, bytes param)). bytes is a
// uvarint length and the bytes.
const recordFormat = 1

func appendBytes(dst, b []byte) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(b))), b...)
}

// appendRecord appends the batch's log record at version ver to dst: the
// header, then the payload, encoded in place. The log writes a group's
// records from one buffer (wal.write); encoding each payload into a
// buffer of its own and copying it there cost an allocation and a copy
// of every commit's bytes. On error (a record too large), dst is
// returned as it was.
func (b *batch) appendRecord(dst []byte, ver uint64) ([]byte, error) {
	n := recHeaderSize + 16
	for _, r := range b.clears {
		n += len(r.Begin) + len(r.End) + 4
	}
	for _, w := range b.writes {
		n += len(w.key) + len(w.val) + 8
		for _, op := range w.ops {
			n += len(op.param) + 4
		}
	}
	start := len(dst)
	out := slices.Grow(dst, n)[:start+recHeaderSize]
	out = append(out, recordFormat)
	out = binary.AppendUvarint(out, ver)
	out = binary.AppendUvarint(out, uint64(len(b.clears)))
	for _, r := range b.clears {
		out = appendBytes(appendBytes(out, r.Begin), r.End)
	}
	out = binary.AppendUvarint(out, uint64(len(b.writes)))
	for _, w := range b.writes {
		out = appendBytes(out, w.key)
		out = append(out, byte(w.base))
		if w.base == baseSet {
			out = appendBytes(out, w.val)
		}
		out = binary.AppendUvarint(out, uint64(len(w.ops)))
		for _, op := range w.ops {
			out = appendBytes(append(out, byte(op.kind)), op.param)
		}
	}
	payload := out[start+recHeaderSize:]
	if len(payload) > maxRecordSize {
		return out[:start], fmt.Errorf("log record of %d bytes", len(payload))
	}
	binary.LittleEndian.PutUint32(out[start:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(out[start+4:], crc32.Checksum(payload, castagnoli))
	return out, nil
}

var errRecord = errors.New("malformed log record")

type decoder struct {
	b   []byte
	err error
}

func (r *decoder) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errRecord
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *decoder) byte() byte {
	if r.err != nil || len(r.b) == 0 {
		r.err = errRecord
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// bytes reads a length-prefixed byte string into a copy of its own.
func (r *decoder) bytes() []byte {
	v := r.view()
	if r.err != nil {
		return nil
	}
	return append([]byte{}, v...)
}

// view reads a length-prefixed byte string, returning a slice of the input.
func (r *decoder) view() []byte {
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)) {
		r.err = errRecord
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

// count reads a uvarint count that cannot exceed what is left to read.
func (r *decoder) count() int {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.err = errRecord
		return 0
	}
	return int(n)
}

func decodeBatch(p []byte) (uint64, *batch, error) {
	r := &decoder{b: p}
	if f := r.byte(); r.err == nil && f != recordFormat {
		return 0, nil, fmt.Errorf("%w: record format %d, this version reads %d", errRecord, f, recordFormat)
	}
	ver := r.uvarint()
	b := &batch{}
	for i, n := 0, r.count(); i < n && r.err == nil; i++ {
		b.clears = append(b.clears, kv.Range{Begin: r.bytes(), End: r.bytes()})
	}
	for i, n := 0, r.count(); i < n && r.err == nil; i++ {
		w := &write{key: r.bytes(), base: baseKind(r.byte())}
		if w.base > baseCleared {
			r.err = errRecord
		}
		if w.base == baseSet {
			w.val = r.bytes()
		}
		for j, m := 0, r.count(); j < m && r.err == nil; j++ {
			op := atomicOp{kind: opKind(r.byte()), param: r.bytes()}
			if op.kind > opBitAnd {
				r.err = errRecord
			}
			w.ops = append(w.ops, op)
		}
		b.writes = append(b.writes, w)
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = errRecord
	}
	return ver, b, r.err
}
