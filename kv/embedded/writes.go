// A transaction's buffered writes: what each key is set to, and the atomic
// operations applied on top.

package embedded

import "bytes"

// baseKind says what a buffered write starts from.
type baseKind uint8

const (
	baseDB      baseKind = iota // atomic operations on the committed value
	baseSet                     // the transaction set the value
	baseCleared                 // the transaction cleared the key
)

// opKind is an atomic operation's kind.
type opKind uint8

const (
	opAdd opKind = iota
	opCompareAndClear
)

type atomicOp struct {
	kind  opKind
	param []byte
}

// write is a transaction's buffered write to one key.
type write struct {
	key  []byte
	base baseKind
	val  []byte
	ops  []atomicOp
}

// resolve applies w to the value it starts from (dbVal, dbOK when base is
// baseDB) and returns the resulting value.
func (w *write) resolve(dbVal []byte, dbOK bool) ([]byte, bool) {
	val, ok := dbVal, dbOK
	switch w.base {
	case baseSet:
		val, ok = w.val, true
	case baseCleared:
		val, ok = nil, false
	}
	for _, op := range w.ops {
		switch op.kind {
		case opAdd:
			val, ok = addLE(val, ok, op.param), true
		case opCompareAndClear:
			if ok && bytes.Equal(val, op.param) {
				val, ok = nil, false
			}
		}
	}
	return val, ok
}

// addLE is FoundationDB's ADD: little-endian addition, the result as long as
// the parameter, an absent value counting as zero.
func addLE(val []byte, ok bool, param []byte) []byte {
	out := make([]byte, len(param))
	if ok {
		copy(out, val)
	}
	addInto(out, param)
	return out
}

// addInto adds param to acc in place, little-endian, as ADD does: the
// result as long as acc, which is as long as param.
func addInto(acc, param []byte) {
	var carry uint16
	for i := range acc {
		s := uint16(acc[i]) + uint16(param[i]) + carry
		acc[i] = byte(s)
		carry = s >> 8
	}
}

func writeLess(a, b *write) bool { return bytes.Compare(a.key, b.key) < 0 }
