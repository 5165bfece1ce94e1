// Package tuple implements FoundationDB's tuple encoding in pure Go.
//
// The encoding is order-preserving: for two tuples a and b of comparable
// elements, bytes.Compare(a.Pack(), b.Pack()) agrees with the tuple order.
// It is byte-for-byte the encoding specified in FoundationDB's design/tuple.md
// and written by the official bindings, so keys written by fdbqueue can be read
// by FoundationDB's Python, Java and Go tuple layers (and the other way round).
//
// This package is an internal building block of fdbqueue (for packages
// queues, exec and driver), exported rather than kept under internal/.
// Its encoding is FoundationDB's and does not change, but its Go API is
// not supported for Go programs: it has no compatibility promise yet and
// may change in any release.
//
// The official Go package (github.com/apple/foundationdb/bindings/go/src/fdb/tuple)
// imports the cgo fdb package, so the default (cgo-free) build cannot use it;
// this package mirrors its types and its decoding rules:
//
//   - nil                         0x00 (0x00 0xff inside a nested tuple)
//   - []byte                      0x01, 0x00 bytes escaped as 0x00 0xff, 0x00 terminated
//   - string                      0x02, UTF-8 (not checked), escaped like []byte
//   - Tuple (nested)              0x05 ... 0x00
//   - int, int64, uint64, ...     0x0c..0x1c (up to 8 bytes), 0x0b/0x1d beyond
//   - *big.Int, big.Int           as integers; decoded as int64, uint64 or *big.Int
//   - float32, float64            0x20, 0x21 (sign-adjusted big-endian IEEE 754)
//   - bool                        0x26 false, 0x27 true
//   - UUID                        0x30, 16 bytes
//   - Versionstamp                0x33, 12 bytes
//
// Unpack returns integers as int64 when they fit, as uint64 when they fit only
// in an unsigned 64-bit integer, and as *big.Int otherwise, like the official
// package does.
package tuple

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"slices"
	"unsafe"
)

// Type codes from FoundationDB's design/tuple.md.
const (
	codeNil         = 0x00
	codeBytes       = 0x01
	codeString      = 0x02
	codeNested      = 0x05
	codeNegIntBig   = 0x0b
	codeIntZero     = 0x14
	codePosIntBig   = 0x1d
	codeFloat       = 0x20
	codeDouble      = 0x21
	codeFalse       = 0x26
	codeTrue        = 0x27
	codeUUID        = 0x30
	codeVersionstam = 0x33
)

// Tuple is an ordered list of elements. Elements may be nil, []byte, string,
// int, int8..int64, uint, uint8..uint64, *big.Int, big.Int, float32, float64,
// bool, UUID, Versionstamp or a nested Tuple.
type Tuple []any

// UUID is a 16-byte RFC 4122 UUID in network byte order.
type UUID [16]byte

// Versionstamp is FoundationDB's 96-bit versionstamp: a 10-byte transaction
// version (8-byte commit version, 2-byte batch order) and a 2-byte user version.
type Versionstamp struct {
	TransactionVersion [10]byte
	UserVersion        uint16
}

// ErrInvalid is returned (wrapped) by Unpack when its input is not a valid
// packed tuple.
var ErrInvalid = errors.New("fdbqueue: invalid packed tuple")

// UnsupportedTypeError is returned by Pack for an element of a type the tuple
// encoding does not cover.
type UnsupportedTypeError struct {
	Index int
	Value any
}

func (e *UnsupportedTypeError) Error() string {
	return fmt.Sprintf("fdbqueue: tuple element %d has unsupported type %T (supported: nil, []byte, string, integers, *big.Int, float32, float64, bool, tuple.UUID, tuple.Versionstamp, tuple.Tuple)", e.Index, e.Value)
}

// Pack encodes t. It panics on an element of an unsupported type, like the
// official package; use PackWithError for values that come from users.
func (t Tuple) Pack() []byte {
	b, err := t.PackWithError()
	if err != nil {
		panic(err)
	}
	return b
}

// PackWithError encodes t, or returns an *UnsupportedTypeError.
func (t Tuple) PackWithError() ([]byte, error) {
	return t.AppendPack(make([]byte, 0, 16*len(t)))
}

// AppendPack appends the encoding of t to dst and returns the extended slice.
func (t Tuple) AppendPack(dst []byte) ([]byte, error) {
	var err error
	for i, e := range t {
		dst, err = appendElement(dst, e, false)
		if err != nil {
			var ute *UnsupportedTypeError
			if errors.As(err, &ute) {
				ute.Index = i
			}
			return nil, err
		}
	}
	return dst, nil
}

// Range returns the key range holding every tuple that has t as a strict
// prefix: [Pack(t)+0x00, Pack(t)+0xff), as the official bindings define it.
func (t Tuple) Range() (begin, end []byte) {
	p := t.Pack()
	return PrefixRange(p)
}

// PrefixRange returns [p+0x00, p+0xff), the range of every packed tuple that
// extends the packed prefix p by at least one element.
func PrefixRange(p []byte) (begin, end []byte) {
	begin = append(append(make([]byte, 0, len(p)+1), p...), 0x00)
	end = append(append(make([]byte, 0, len(p)+1), p...), 0xff)
	return begin, end
}

func appendElement(dst []byte, e any, nested bool) ([]byte, error) {
	switch v := e.(type) {
	case nil:
		if nested {
			return append(dst, codeNil, 0xff), nil
		}
		return append(dst, codeNil), nil
	case []byte:
		return appendEscaped(append(dst, codeBytes), v), nil
	case string:
		dst = append(dst, codeString)
		return appendEscapedString(dst, v), nil
	case Tuple:
		dst = append(dst, codeNested)
		var err error
		for _, ne := range v {
			if dst, err = appendElement(dst, ne, true); err != nil {
				return nil, err
			}
		}
		return append(dst, 0x00), nil
	case int64:
		return AppendInt(dst, v), nil
	case int:
		return AppendInt(dst, int64(v)), nil
	case int32:
		return AppendInt(dst, int64(v)), nil
	case int16:
		return AppendInt(dst, int64(v)), nil
	case int8:
		return AppendInt(dst, int64(v)), nil
	case uint64:
		return appendUint(dst, v), nil
	case uint:
		return appendUint(dst, uint64(v)), nil
	case uint32:
		return appendUint(dst, uint64(v)), nil
	case uint16:
		return appendUint(dst, uint64(v)), nil
	case uint8:
		return appendUint(dst, uint64(v)), nil
	case *big.Int:
		if v == nil {
			return nil, &UnsupportedTypeError{Value: e}
		}
		return appendBigInt(dst, v)
	case big.Int:
		return appendBigInt(dst, &v)
	case float32:
		return appendFloat32(dst, v), nil
	case float64:
		return appendFloat64(dst, v), nil
	case bool:
		if v {
			return append(dst, codeTrue), nil
		}
		return append(dst, codeFalse), nil
	case UUID:
		return append(append(dst, codeUUID), v[:]...), nil
	case Versionstamp:
		dst = append(append(dst, codeVersionstam), v.TransactionVersion[:]...)
		return binary.BigEndian.AppendUint16(dst, v.UserVersion), nil
	default:
		return nil, &UnsupportedTypeError{Value: e}
	}
}

func appendEscaped(dst, b []byte) []byte {
	i := bytes.IndexByte(b, 0x00)
	if i < 0 {
		return append(append(dst, b...), 0x00)
	}
	// Room for all of it at once: a zero byte takes two.
	dst = slices.Grow(dst, len(b)+bytes.Count(b[i:], zeroByte)+1)
	for {
		dst = append(dst, b[:i]...)
		b = b[i:]
		// A run of zeros a byte at a time, not a search each: binary
		// values (little-endian integers, padding) have long ones.
		for len(b) > 0 && b[0] == 0x00 {
			dst = append(dst, 0x00, 0xff)
			b = b[1:]
		}
		if i = bytes.IndexByte(b, 0x00); i < 0 {
			return append(append(dst, b...), 0x00)
		}
	}
}

var zeroByte = []byte{0x00}

// appendEscapedString is appendEscaped of s's bytes, which it only reads.
func appendEscapedString(dst []byte, s string) []byte {
	return appendEscaped(dst, unsafe.Slice(unsafe.StringData(s), len(s)))
}

// AppendBytes appends the tuple encoding of the byte string v to dst: what
// Tuple{v}.AppendPack appends, without boxing v in an interface (an
// allocation a row of a push).
func AppendBytes(dst, v []byte) []byte {
	return appendEscaped(append(dst, codeBytes), v)
}

// AppendStringBytes appends the tuple encoding of the string whose bytes
// are v to dst: what Tuple{string(v)}.AppendPack appends, without making
// the string (an INSERT's []byte given for a TEXT column).
func AppendStringBytes(dst, v []byte) []byte {
	return appendEscaped(append(dst, codeString), v)
}

// AppendInt appends the tuple encoding of the integer v to dst. It is the
// allocation-free path the queue layer uses for its keys.
//
// Where dst has room, the bytes are written into it in place, exactly
// those and no byte past them (a caller may hold bytes there, as append
// leaves them): appendCoded's copy of a few bytes through memmove, and the
// append's checks, were most of the 60 instructions an integer took, and
// a 100-row INSERT's keys and values hold about 2,000 (callgrind: 1,270
// instructions a row).
func AppendInt(dst []byte, v int64) []byte {
	u := uint64(v)
	n := byteLen(u)
	code := byte(codeIntZero + n)
	if v < 0 {
		// Negative: one's complement of the magnitude, in the fewest
		// bytes.
		mag := -u // the magnitude, 1<<63 for math.MinInt64 too
		n = byteLen(mag)
		u, code = ^mag, byte(codeIntZero-n)
	}
	l := len(dst)
	if cap(dst)-l <= n {
		return appendCoded(dst, code, u, n)
	}
	dst = dst[:l+1+n]
	dst[l] = code
	for i := l + n; i > l; i-- {
		dst[i] = byte(u)
		u >>= 8
	}
	return dst
}

func appendUint(dst []byte, v uint64) []byte {
	n := byteLen(v)
	return appendCoded(dst, byte(codeIntZero+n), v, n)
}

// appendCoded appends code and the low n bytes of v, big-endian, in one
// append: a byte at a time, each append checking the capacity, was 5% of
// a 100-row INSERT's time (a row's keys and value hold about 20 integers).
func appendCoded(dst []byte, code byte, v uint64, n int) []byte {
	var b [9]byte
	b[0] = code
	binary.BigEndian.PutUint64(b[1:], v<<(64-8*uint(n))) // n = 0: a shift by 64 is 0
	return append(dst, b[:1+n]...)
}

// byteLen is the number of bytes needed to hold v (0 for 0).
func byteLen(v uint64) int {
	return (bits.Len64(v) + 7) >> 3
}

func appendBigInt(dst []byte, v *big.Int) ([]byte, error) {
	if v.IsInt64() {
		return AppendInt(dst, v.Int64()), nil
	}
	if v.IsUint64() {
		return appendUint(dst, v.Uint64()), nil
	}
	if v.Sign() > 0 {
		b := v.Bytes()
		if len(b) > 255 {
			return nil, fmt.Errorf("fdbqueue: tuple integer too large: %d bytes (at most 255)", len(b))
		}
		dst = append(dst, codePosIntBig, byte(len(b)))
		return append(dst, b...), nil
	}
	mag := new(big.Int).Neg(v)
	if mag.IsUint64() {
		// Magnitude in 8 bytes: the fixed-width form 0x0c.
		return binary.BigEndian.AppendUint64(append(dst, codeIntZero-8), ^mag.Uint64()), nil
	}
	b := mag.Bytes()
	if len(b) > 255 {
		return nil, fmt.Errorf("fdbqueue: tuple integer too large: %d bytes (at most 255)", len(b))
	}
	dst = append(dst, codeNegIntBig, byte(len(b))^0xff)
	for _, c := range b {
		dst = append(dst, ^c)
	}
	return dst, nil
}

func appendFloat32(dst []byte, f float32) []byte {
	bits := math.Float32bits(f)
	if bits&(1<<31) != 0 {
		bits = ^bits
	} else {
		bits ^= 1 << 31
	}
	return binary.BigEndian.AppendUint32(append(dst, codeFloat), bits)
}

func appendFloat64(dst []byte, f float64) []byte {
	bits := math.Float64bits(f)
	if bits&(1<<63) != 0 {
		bits = ^bits
	} else {
		bits ^= 1 << 63
	}
	return binary.BigEndian.AppendUint64(append(dst, codeDouble), bits)
}

// Unpack decodes a packed tuple.
func Unpack(b []byte) (Tuple, error) {
	t, rest, err := decodeTuple(b, false)
	if err != nil {
		return nil, err
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrInvalid, len(rest))
	}
	return t, nil
}

// UnpackUntil decodes the elements at the start of b up to one that
// starts with the byte stop, which must be no type code (0xfe, say), and
// returns them with the rest of b from stop on; rest is nil when no
// element starts with stop, and every byte of b was decoded. It reads
// records that end with bytes of their own after packed elements.
func UnpackUntil(b []byte, stop byte) (t Tuple, rest []byte, err error) {
	t = Tuple{}
	for len(b) > 0 {
		if b[0] == stop {
			return t, b, nil
		}
		e, r, err := decodeElement(b)
		if err != nil {
			return nil, nil, err
		}
		t, b = append(t, e), r
	}
	return t, nil, nil
}

func decodeTuple(b []byte, nested bool) (Tuple, []byte, error) {
	t := Tuple{}
	for len(b) > 0 {
		if nested && b[0] == 0x00 {
			if len(b) > 1 && b[1] == 0xff {
				t = append(t, nil)
				b = b[2:]
				continue
			}
			return t, b[1:], nil
		}
		e, rest, err := decodeElement(b)
		if err != nil {
			return nil, nil, err
		}
		t = append(t, e)
		b = rest
	}
	if nested {
		return nil, nil, fmt.Errorf("%w: nested tuple not terminated", ErrInvalid)
	}
	return t, b, nil
}

func decodeElement(b []byte) (any, []byte, error) {
	code := b[0]
	switch {
	case code == codeNil:
		return nil, b[1:], nil
	case code == codeBytes:
		v, rest, err := decodeEscaped(b[1:])
		return v, rest, err
	case code == codeString:
		end, escapes, err := escapedEnd(b[1:])
		if err != nil {
			return nil, nil, err
		}
		// Not checked for UTF-8, as the official Go bindings do not: a
		// string Pack accepts always unpacks (a check here once made one
		// bad value fail every read of a table).
		if escapes == 0 {
			return string(b[1 : 1+end]), b[2+end:], nil
		}
		return string(unescape(b[1:1+end], escapes)), b[2+end:], nil
	case code == codeNested:
		return decodeTuple(b[1:], true)
	case code > codeNegIntBig && code < codePosIntBig:
		return decodeInt(b)
	case code == codeNegIntBig || code == codePosIntBig:
		return decodeBigInt(b)
	case code == codeFloat:
		if len(b) < 5 {
			return nil, nil, fmt.Errorf("%w: truncated float", ErrInvalid)
		}
		bits := binary.BigEndian.Uint32(b[1:5])
		if bits&(1<<31) != 0 {
			bits ^= 1 << 31
		} else {
			bits = ^bits
		}
		return math.Float32frombits(bits), b[5:], nil
	case code == codeDouble:
		if len(b) < 9 {
			return nil, nil, fmt.Errorf("%w: truncated double", ErrInvalid)
		}
		bits := binary.BigEndian.Uint64(b[1:9])
		if bits&(1<<63) != 0 {
			bits ^= 1 << 63
		} else {
			bits = ^bits
		}
		return math.Float64frombits(bits), b[9:], nil
	case code == codeFalse:
		return false, b[1:], nil
	case code == codeTrue:
		return true, b[1:], nil
	case code == codeUUID:
		if len(b) < 17 {
			return nil, nil, fmt.Errorf("%w: truncated UUID", ErrInvalid)
		}
		var u UUID
		copy(u[:], b[1:17])
		return u, b[17:], nil
	case code == codeVersionstam:
		if len(b) < 13 {
			return nil, nil, fmt.Errorf("%w: truncated versionstamp", ErrInvalid)
		}
		var v Versionstamp
		copy(v.TransactionVersion[:], b[1:11])
		v.UserVersion = binary.BigEndian.Uint16(b[11:13])
		return v, b[13:], nil
	}
	return nil, nil, fmt.Errorf("%w: unknown type code 0x%02x", ErrInvalid, code)
}

// DecodeBytes decodes a single packed byte string element at the start of
// b and returns a copy of its bytes with the rest of b: what Unpack
// returns for it, without the tuple around it.
func DecodeBytes(b []byte) ([]byte, []byte, error) {
	if len(b) == 0 || b[0] != codeBytes {
		return nil, nil, fmt.Errorf("%w: not a byte string element", ErrInvalid)
	}
	return decodeEscaped(b[1:])
}

// decodeEscaped decodes the escaped bytes of a byte string, after its type
// code, into a slice of their size: one allocation, where growing it from
// 16 bytes took four for a 64-byte payload.
func decodeEscaped(b []byte) ([]byte, []byte, error) {
	end, escapes, err := escapedEnd(b)
	if err != nil {
		return nil, nil, err
	}
	return unescape(b[:end], escapes), b[end+1:], nil
}

// escapedEnd returns where the escaped bytes at the start of b end (at
// the unescaped 0x00 that terminates them), and how many escaped 0x00s
// (0x00 0xff) are before it.
func escapedEnd(b []byte) (end, escapes int, err error) {
	for {
		i := bytes.IndexByte(b[end:], 0x00)
		if i < 0 {
			return 0, 0, fmt.Errorf("%w: byte string not terminated", ErrInvalid)
		}
		end += i
		if end+1 < len(b) && b[end+1] == 0xff {
			end += 2
			escapes++
			continue
		}
		return end, escapes, nil
	}
}

// unescape returns a new slice of the bytes that the escaped bytes b,
// holding escapes escaped 0x00s, stand for.
func unescape(b []byte, escapes int) []byte {
	out := make([]byte, 0, len(b)-escapes)
	for escapes > 0 {
		i := bytes.IndexByte(b, 0x00)
		out = append(out, b[:i+1]...)
		b = b[i+2:]
		escapes--
	}
	return append(out, b...)
}

func decodeInt(b []byte) (any, []byte, error) {
	i, u, rest, kind, err := decodeIntParts(b)
	switch {
	case err != nil:
		return nil, nil, err
	case kind == intFits:
		return i, rest, nil
	case kind == intBigPos:
		return u, rest, nil
	}
	return new(big.Int).Neg(new(big.Int).SetUint64(u)), rest, nil
}

// What decodeIntParts found: an int64, a uint64 above MaxInt64, or the
// magnitude of a negative number below MinInt64.
const (
	intFits = iota
	intBigPos
	intBigNeg
)

// decodeIntParts decodes an integer element of up to 8 bytes without
// boxing it, so that DecodeInt does not allocate.
func decodeIntParts(b []byte) (i int64, u uint64, rest []byte, kind int, err error) {
	code := int(b[0])
	n := code - codeIntZero
	neg := n < 0
	if neg {
		n = -n
	}
	if len(b) < 1+n {
		return 0, 0, nil, 0, fmt.Errorf("%w: truncated integer", ErrInvalid)
	}
	for _, c := range b[1 : 1+n] {
		u = u<<8 | uint64(c)
	}
	rest = b[1+n:]
	if !neg {
		if u > math.MaxInt64 {
			return 0, u, rest, intBigPos, nil
		}
		return int64(u), 0, rest, intFits, nil
	}
	// One's complement of the magnitude, in n bytes.
	if n < 8 {
		u = u - (1<<(8*uint(n)) - 1)
		return int64(u), 0, rest, intFits, nil // wraps to the negative value
	}
	mag := ^u
	if mag <= 1<<63 {
		return int64(-mag), 0, rest, intFits, nil // -2^63 wraps correctly
	}
	return 0, mag, rest, intBigNeg, nil
}

// DecodeInt decodes a single packed integer element at the start of b and
// returns it with the rest of b. It is the allocation-free path used for keys.
func DecodeInt(b []byte) (int64, []byte, error) {
	if len(b) == 0 || b[0] <= codeNegIntBig || b[0] >= codePosIntBig {
		return 0, nil, fmt.Errorf("%w: not an integer element", ErrInvalid)
	}
	i, _, rest, kind, err := decodeIntParts(b)
	if err != nil {
		return 0, nil, err
	}
	if kind != intFits {
		return 0, nil, fmt.Errorf("%w: integer out of int64 range", ErrInvalid)
	}
	return i, rest, nil
}

func decodeBigInt(b []byte) (any, []byte, error) {
	if len(b) < 2 {
		return nil, nil, fmt.Errorf("%w: truncated big integer", ErrInvalid)
	}
	neg := b[0] == codeNegIntBig
	n := int(b[1])
	if neg {
		n ^= 0xff
	}
	if len(b) < 2+n {
		return nil, nil, fmt.Errorf("%w: truncated big integer", ErrInvalid)
	}
	mag := make([]byte, n)
	copy(mag, b[2:2+n])
	if neg {
		for i := range mag {
			mag[i] = ^mag[i]
		}
	}
	v := new(big.Int).SetBytes(mag)
	if neg {
		v.Neg(v)
	}
	return normalizeBig(v), b[2+n:], nil
}

// normalizeBig returns v as int64 or uint64 when it fits, as the official
// package does for every integer it decodes.
func normalizeBig(v *big.Int) any {
	if v.IsInt64() {
		return v.Int64()
	}
	if v.IsUint64() {
		return v.Uint64()
	}
	return v
}
