package tuple

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func bigInt(s string) *big.Int {
	v, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic(s)
	}
	return v
}

// The vectors marked "spec" are the test cases printed in FoundationDB's
// design/tuple.md; the others follow from the rules stated there.
var packVectors = []struct {
	name string
	in   Tuple
	want []byte
}{
	{"spec bytes", Tuple{[]byte("foo\x00bar")}, []byte("\x01foo\x00\xffbar\x00")},
	{"spec unicode", Tuple{"F\u00d4O\u0000bar"}, []byte("\x02F\xc3\x94O\x00\xffbar\x00")},
	{"spec nested", Tuple{Tuple{[]byte("foo\x00bar"), nil, Tuple{}}}, []byte("\x05\x01foo\x00\xffbar\x00\x00\xff\x05\x00\x00")},
	{"spec negative int", Tuple{-5551212}, []byte("\x11\xabK\x93")},
	{"spec float", Tuple{float32(-42)}, []byte("\x20\x3d\xd7\xff\xff")},
	{"spec minus one", Tuple{-1}, []byte{0x13, 0xfe}},
	{"spec empty nested", Tuple{Tuple{}}, []byte{0x05, 0x00}},
	{"spec nested null", Tuple{Tuple{nil}}, []byte{0x05, 0x00, 0xff, 0x00}},
	{"nil", Tuple{nil}, []byte{0x00}},
	{"zero", Tuple{0}, []byte{0x14}},
	{"one", Tuple{int64(1)}, []byte{0x15, 0x01}},
	{"255", Tuple{255}, []byte{0x15, 0xff}},
	{"256", Tuple{256}, []byte{0x16, 0x01, 0x00}},
	{"-255", Tuple{-255}, []byte{0x13, 0x00}},
	{"-256", Tuple{-256}, []byte{0x12, 0xfe, 0xff}},
	{"max int64", Tuple{int64(math.MaxInt64)}, []byte{0x1c, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
	{"min int64", Tuple{int64(math.MinInt64)}, []byte{0x0c, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
	{"max uint64", Tuple{uint64(math.MaxUint64)}, []byte{0x1c, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
	{"2^64", Tuple{bigInt("18446744073709551616")}, []byte{0x1d, 0x09, 0x01, 0, 0, 0, 0, 0, 0, 0, 0}},
	{"-2^64", Tuple{bigInt("-18446744073709551616")}, []byte{0x0b, 0xf6, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
	{"-(2^64-1)", Tuple{bigInt("-18446744073709551615")}, []byte{0x0c, 0, 0, 0, 0, 0, 0, 0, 0}},
	{"double 1", Tuple{1.0}, []byte{0x21, 0xbf, 0xf0, 0, 0, 0, 0, 0, 0}},
	{"double -1", Tuple{-1.0}, []byte{0x21, 0x40, 0x0f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
	{"false true", Tuple{false, true}, []byte{0x26, 0x27}},
	{"uuid", Tuple{UUID{0: 0x12, 15: 0x34}}, append(append([]byte{0x30, 0x12}, make([]byte, 14)...), 0x34)},
	{"versionstamp", Tuple{Versionstamp{TransactionVersion: [10]byte{0: 1, 9: 2}, UserVersion: 3}}, []byte{0x33, 1, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 3}},
	{"mixed", Tuple{"a", 1, nil}, []byte{0x02, 'a', 0x00, 0x15, 0x01, 0x00}},
}

func TestPackVectors(t *testing.T) {
	t.Parallel()
	for _, v := range packVectors {
		got, err := v.in.PackWithError()
		require.NoError(t, err, v.name)
		require.Equal(t, v.want, got, v.name)
	}
}

func TestUnpackVectors(t *testing.T) {
	t.Parallel()
	for _, v := range packVectors {
		got, err := Unpack(v.want)
		require.NoError(t, err, v.name)
		require.Equal(t, normalize(v.in), got, v.name)
	}
}

// normalize maps the Go types Pack accepts onto the types Unpack returns.
func normalize(t Tuple) Tuple {
	out := make(Tuple, len(t))
	for i, e := range t {
		switch v := e.(type) {
		case int:
			out[i] = int64(v)
		case uint64:
			if v <= math.MaxInt64 {
				out[i] = int64(v)
			} else {
				out[i] = v
			}
		case *big.Int:
			out[i] = normalizeBig(v)
		case Tuple:
			out[i] = normalize(v)
		default:
			out[i] = e
		}
	}
	return out
}

func TestPackUnsupportedType(t *testing.T) {
	t.Parallel()
	_, err := Tuple{1, struct{}{}}.PackWithError()
	var ute *UnsupportedTypeError
	require.ErrorAs(t, err, &ute)
	require.Equal(t, 1, ute.Index)
	require.Contains(t, err.Error(), "supported:")
	require.Panics(t, func() { Tuple{make(chan int)}.Pack() })
}

func TestUnpackInvalid(t *testing.T) {
	t.Parallel()
	for _, b := range [][]byte{
		{0x01, 'a'},        // unterminated bytes
		{0x05, 0x15},       // truncated nested
		{0x16, 0x01},       // truncated integer
		{0x21, 0x00},       // truncated double
		{0x30, 1, 2},       // truncated UUID
		{0x33, 1},          // truncated versionstamp
		{0x1d, 0x09, 0x01}, // truncated big integer
		{0x7f},             // unknown code
		{0x05, 0x00, 0xff}, // nested not terminated
		{0x0b},             // truncated big negative
	} {
		_, err := Unpack(b)
		require.ErrorIs(t, err, ErrInvalid, "%x", b)
	}
}

func TestRange(t *testing.T) {
	t.Parallel()
	b, e := Tuple{"q"}.Range()
	require.Equal(t, []byte{0x02, 'q', 0x00, 0x00}, b)
	require.Equal(t, []byte{0x02, 'q', 0x00, 0xff}, e)
	inside := Tuple{"q", 5, "x"}.Pack()
	require.True(t, bytes.Compare(b, inside) <= 0 && bytes.Compare(inside, e) < 0)
	outside := Tuple{"qa"}.Pack()
	require.False(t, bytes.Compare(b, outside) <= 0 && bytes.Compare(outside, e) < 0)
}

func TestIntOrderAcrossWidths(t *testing.T) {
	t.Parallel()
	vals := []int64{math.MinInt64, math.MinInt64 + 1, -1 << 40, -65536, -65535, -256, -255, -2, -1, 0, 1, 255, 256, 65535, 65536, 1 << 40, math.MaxInt64}
	for i := 1; i < len(vals); i++ {
		a, b := Tuple{vals[i-1]}.Pack(), Tuple{vals[i]}.Pack()
		require.Negative(t, bytes.Compare(a, b), "%d < %d", vals[i-1], vals[i])
		v, rest, err := DecodeInt(b)
		require.NoError(t, err)
		require.Empty(t, rest)
		require.Equal(t, vals[i], v)
	}
}

// genTuple builds a tuple from fuzzer bytes, so that the fuzzer explores
// every element type.
func genTuple(data []byte, depth int) (Tuple, []byte) {
	t := Tuple{}
	for len(data) > 0 {
		op := data[0]
		data = data[1:]
		take := func(n int) []byte {
			if n > len(data) {
				n = len(data)
			}
			b := data[:n]
			data = data[n:]
			return b
		}
		switch op % 12 {
		case 0:
			t = append(t, nil)
		case 1:
			t = append(t, append([]byte{}, take(int(op>>4))...))
		case 2:
			t = append(t, string(take(int(op>>4)))) // UTF-8 or not, as Pack takes it
		case 3:
			var b [8]byte
			copy(b[:], take(8))
			t = append(t, int64(binary.BigEndian.Uint64(b[:]))>>(op>>4*4))
		case 4:
			var b [8]byte
			copy(b[:], take(8))
			t = append(t, binary.BigEndian.Uint64(b[:]))
		case 5:
			mag := new(big.Int).SetBytes(take(int(op>>4) + 9))
			if op&0x80 != 0 {
				mag.Neg(mag)
			}
			t = append(t, normalizeBig(mag))
		case 6:
			var b [8]byte
			copy(b[:], take(8))
			t = append(t, math.Float64frombits(binary.BigEndian.Uint64(b[:])))
		case 7:
			var b [4]byte
			copy(b[:], take(4))
			t = append(t, math.Float32frombits(binary.BigEndian.Uint32(b[:])))
		case 8:
			t = append(t, op&0x10 != 0)
		case 9:
			var u UUID
			copy(u[:], take(16))
			t = append(t, u)
		case 10:
			var v Versionstamp
			copy(v.TransactionVersion[:], take(10))
			v.UserVersion = uint16(op)
			t = append(t, v)
		case 11:
			if depth < 3 {
				var nested Tuple
				n := int(op>>4) + 1
				nested, _ = genTuple(take(n*4), depth+1)
				t = append(t, nested)
			}
		}
		if op == 0xff {
			return t, data
		}
	}
	return t, data
}

// typeClass orders the element kinds as their type codes do.
func typeClass(e any) int {
	switch e.(type) {
	case nil:
		return 0
	case []byte:
		return 1
	case string:
		return 2
	case Tuple:
		return 5
	case int64, uint64, *big.Int:
		return 20
	case float32:
		return 32
	case float64:
		return 33
	case bool:
		return 38
	case UUID:
		return 48
	case Versionstamp:
		return 51
	}
	panic("unknown")
}

func toBig(e any) *big.Int {
	switch v := e.(type) {
	case int64:
		return big.NewInt(v)
	case uint64:
		return new(big.Int).SetUint64(v)
	case *big.Int:
		return v
	}
	panic("not an integer")
}

// totalOrder64 is IEEE 754's totalOrder key, which the encoding implements.
func totalOrder64(f float64) uint64 {
	b := math.Float64bits(f)
	if b&(1<<63) != 0 {
		return ^b
	}
	return b | 1<<63
}

func compareElem(a, b any) int {
	ca, cb := typeClass(a), typeClass(b)
	if ca != cb {
		return cmpInt(ca, cb)
	}
	switch va := a.(type) {
	case nil:
		return 0
	case []byte:
		return bytes.Compare(va, b.([]byte))
	case string:
		return bytes.Compare([]byte(va), []byte(b.(string)))
	case Tuple:
		return compareTuple(va, b.(Tuple))
	case int64, uint64, *big.Int:
		return toBig(a).Cmp(toBig(b))
	case float32:
		return cmpUint(totalOrder64(float64(va)), totalOrder64(float64(b.(float32))))
	case float64:
		return cmpUint(totalOrder64(va), totalOrder64(b.(float64)))
	case bool:
		return cmpInt(boolInt(va), boolInt(b.(bool)))
	case UUID:
		vb := b.(UUID)
		return bytes.Compare(va[:], vb[:])
	case Versionstamp:
		vb := b.(Versionstamp)
		if c := bytes.Compare(va.TransactionVersion[:], vb.TransactionVersion[:]); c != 0 {
			return c
		}
		return cmpInt(int(va.UserVersion), int(vb.UserVersion))
	}
	panic("unknown")
}

func compareTuple(a, b Tuple) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := compareElem(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmpInt(len(a), len(b))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func sign(c int) int { return cmpInt(c, 0) }

func FuzzRoundTripAndOrder(f *testing.F) {
	for _, v := range packVectors {
		f.Add(v.want, []byte{0x13})
	}
	f.Add([]byte{3, 1, 2, 3, 4, 5, 6, 7, 8, 0xff, 3, 0, 0, 0, 0, 0, 0, 0, 0}, []byte{0x26, 0x01})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		ta, _ := genTuple(a, 0)
		tb, _ := genTuple(b, 0)
		pa, err := ta.PackWithError()
		require.NoError(t, err)
		pb, err := tb.PackWithError()
		require.NoError(t, err)

		ua, err := Unpack(pa)
		require.NoError(t, err)
		require.Zero(t, compareTuple(ta, ua), "round trip of %v gave %v", ta, ua)
		repacked, err := ua.PackWithError()
		require.NoError(t, err)
		require.Equal(t, pa, repacked)

		require.Equal(t, sign(compareTuple(ta, tb)), sign(bytes.Compare(pa, pb)), "order of %v and %v", ta, tb)
	})
}

func FuzzUnpack(f *testing.F) {
	for _, v := range packVectors {
		f.Add(v.want)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		u, err := Unpack(b)
		if err != nil {
			return
		}
		p, err := u.PackWithError()
		require.NoError(t, err)
		u2, err := Unpack(p)
		require.NoError(t, err)
		require.Zero(t, compareTuple(u, u2))
	})
}

// TestDecodeIntDoesNotAllocate: keys are decoded on every index read.
func TestDecodeIntDoesNotAllocate(t *testing.T) {
	for _, v := range []int64{0, 300, -300, 1 << 40, math.MinInt64, math.MaxInt64} {
		b := AppendInt(nil, v)
		allocs := testing.AllocsPerRun(100, func() {
			got, rest, err := DecodeInt(b)
			if err != nil || got != v || len(rest) != 0 {
				t.Fatalf("DecodeInt(%x) = %d, %x, %v", b, got, rest, err)
			}
		})
		require.Zero(t, allocs, "%d", v)
	}
}

// TestStringsThatAreNotUTF8 round-trip: Pack takes any Go string, so Unpack
// gives it back, as the official bindings' decoder does.
func TestStringsThatAreNotUTF8(t *testing.T) {
	t.Parallel()
	in := Tuple{"ok", "\xff\xfe", "a\x00\xc3"}
	out, err := Unpack(in.Pack())
	require.NoError(t, err)
	require.Equal(t, in, out)
}

// TestAppendBytes: AppendBytes appends what Pack appends for a tuple of the
// one byte string, zero bytes escaped, without allocating into a buffer
// with room.
func TestAppendBytes(t *testing.T) {
	for _, v := range [][]byte{nil, {}, {0}, {0, 0xff, 0}, []byte("payload\x00\x00x"), bytes.Repeat([]byte{7, 0}, 100)} {
		want := Tuple{v}.Pack()
		require.Equal(t, want, AppendBytes(nil, v), "%x", v)
		require.Equal(t, append([]byte("pre"), want...), AppendBytes([]byte("pre"), v), "%x", v)
		buf := make([]byte, 0, 3*len(v)+2)
		require.Zero(t, testing.AllocsPerRun(10, func() { AppendBytes(buf, v) }), "%x", v)
	}
}

// TestAppendStringBytes: AppendStringBytes appends what Pack appends for a
// tuple of the one string those bytes hold.
func TestAppendStringBytes(t *testing.T) {
	for _, v := range [][]byte{nil, {}, {0}, {0, 0xff, 0}, []byte("payload\x00\x00x"), []byte("héllo")} {
		want := Tuple{string(v)}.Pack()
		require.Equal(t, want, AppendStringBytes(nil, v), "%x", v)
		require.Equal(t, append([]byte("pre"), want...), AppendStringBytes([]byte("pre"), v), "%x", v)
	}
}

// zeroDensity returns the n-th of a series of byte strings whose lengths
// and shares of zero bytes (none to all) vary with n; with ff, some of the
// other bytes are 0xff, the byte an escape adds after a zero.
func zeroDensity(r *rand.Rand, n int, ff bool) []byte {
	b := make([]byte, n%70+n/10)
	for i := range b {
		switch {
		case r.IntN(10) >= n%11:
			b[i] = byte(1 + r.IntN(255))
		case ff && r.IntN(3) == 0:
			b[i] = 0xff
		}
	}
	return b
}

// TestEscapeMatchesByteLoop: byte strings and strings of every zero
// density, packed, escape each zero byte as 0x00 0xff and end with 0x00,
// as a byte-at-a-time loop does.
func TestEscapeMatchesByteLoop(t *testing.T) {
	t.Parallel()
	escape := func(code byte, b []byte) []byte {
		out := []byte{code}
		for _, c := range b {
			if c == 0 {
				out = append(out, 0, 0xff)
			} else {
				out = append(out, c)
			}
		}
		return append(out, 0)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 300 {
		b := zeroDensity(r, n, false)
		require.Equal(t, escape(codeBytes, b), AppendBytes(nil, b), "%x", b)
		require.Equal(t, escape(codeBytes, b), Tuple{b}.Pack(), "%x", b)
		require.Equal(t, escape(codeString, b), Tuple{string(b)}.Pack(), "%x", b)
	}
}

// TestDecodeBytesOfEveryZeroDensity: byte strings and strings of every
// zero density unpack to what was packed, alone and followed by another
// element, and DecodeBytes returns the bytes, a copy of their size, and
// the rest; a byte string without its terminator, or not a byte string,
// is an error.
func TestDecodeBytesOfEveryZeroDensity(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for n := range 300 {
		b := zeroDensity(r, n, true)
		packed := Tuple{b, string(b), int64(n)}.Pack()
		got, err := Unpack(packed)
		require.NoError(t, err)
		require.Equal(t, Tuple{b, string(b), int64(n)}, got, "%x", b)

		v, rest, err := DecodeBytes(packed)
		require.NoError(t, err)
		require.Equal(t, b, v, "%x", b)
		require.Equal(t, len(b), cap(v), "a copy of the bytes' size")
		require.Equal(t, Tuple{string(b), int64(n)}.Pack(), rest)
		if len(b) > 0 {
			v[0] ^= 1
			require.Equal(t, byte(codeBytes), packed[0])
			again, _, err := DecodeBytes(packed)
			require.NoError(t, err)
			require.Equal(t, b, again, "the bytes are a copy")
		}
		enc := AppendBytes(nil, b)
		_, _, err = DecodeBytes(enc[:len(enc)-1])
		require.ErrorIs(t, err, ErrInvalid)
	}
	_, _, err := DecodeBytes(Tuple{"text"}.Pack())
	require.ErrorIs(t, err, ErrInvalid)
	_, _, err = DecodeBytes(nil)
	require.ErrorIs(t, err, ErrInvalid)
}

// AppendInt writes what the byte-at-a-time loop it replaced wrote: the
// type code of the length, then the magnitude (one's complement for a
// negative number) in the fewest bytes, big-endian, around every length's
// bounds, after what dst holds.
func TestAppendIntMatchesByteLoop(t *testing.T) {
	t.Parallel()
	loop := func(dst []byte, v int64) []byte {
		mag := uint64(v)
		if v < 0 {
			mag = uint64(-(v + 1)) + 1
		}
		n := 0
		for m := mag; m != 0; m >>= 8 {
			n++
		}
		x, code := mag, byte(codeIntZero+n)
		if v < 0 {
			x, code = ^mag, byte(codeIntZero-n)
		}
		dst = append(dst, code)
		for i := n - 1; i >= 0; i-- {
			dst = append(dst, byte(x>>(8*uint(i))))
		}
		return dst
	}
	vals := []int64{0, math.MaxInt64, math.MinInt64, math.MinInt64 + 1}
	for shift := uint(0); shift < 64; shift += 4 {
		for _, d := range []int64{-1, 0, 1} {
			v := int64(1)<<shift + d
			vals = append(vals, v, -v)
		}
	}
	prefix := []byte("p\x00")
	for _, v := range vals {
		require.Equal(t, loop(slices.Clone(prefix), v), AppendInt(slices.Clone(prefix), v), "%d", v)
		require.Equal(t, loop(nil, v), AppendInt(nil, v), "%d", v)
	}
}

// BenchmarkAppendBytes: a 64-byte value with no zero byte, with zeros
// here and there, and all zeros.
func BenchmarkAppendBytes(b *testing.B) {
	for _, c := range []struct {
		name string
		v    []byte
	}{
		{"none", bytes.Repeat([]byte{7}, 64)},
		{"some", append(bytes.Repeat([]byte{7}, 60), 0, 0, 0, 0)},
		{"zeros", make([]byte, 64)},
	} {
		b.Run(c.name, func(b *testing.B) {
			buf := make([]byte, 0, 256)
			for b.Loop() {
				buf = AppendBytes(buf[:0], c.v)
			}
		})
	}
}

// AppendInt into a slice with room writes the integer's bytes in place,
// and no byte past them: a caller's bytes after the slice's length, in its
// capacity, stay as they were, as append leaves them.
func TestAppendIntInPlaceLeavesTheRestOfTheCapacity(t *testing.T) {
	t.Parallel()
	vals := []int64{0, 1, -1, 255, 256, -256, 1 << 16, 1<<24 - 1, 1 << 24, 1 << 32, 1<<40 + 5, 1 << 48, 1 << 56, math.MaxInt64, math.MinInt64}
	for _, v := range vals {
		want := AppendInt([]byte("p"), v) // no room: appended
		buf := bytes.Repeat([]byte{0xee}, 32)
		copy(buf, "p")
		got := AppendInt(buf[:1], v)
		require.Equal(t, want, got, "%d", v)
		require.Equal(t, &buf[0], &got[0], "%d: written in place", v)
		require.Equal(t, bytes.Repeat([]byte{0xee}, 32-len(got)), buf[len(got):], "%d: the bytes past it", v)
	}
}

// TestUnpackUntil: the elements before a byte that starts none (0xfe),
// and the rest from it on, bytes of any kind; nil rest without it.
func TestUnpackUntil(t *testing.T) {
	t.Parallel()
	head := Tuple{int64(-300), []byte{0xfe, 0}, "s\x00", Tuple{int64(1), nil}, int64(254)}
	packed := head.Pack()
	for _, tail := range [][]byte{{0xfe}, {0xfe, 0xfe, 0, 1, 0xff}, append([]byte{0xfe}, packed...)} {
		got, rest, err := UnpackUntil(append(slices.Clone(packed), tail...), 0xfe)
		require.NoError(t, err)
		require.Equal(t, head, got)
		require.Equal(t, tail, rest)
	}
	got, rest, err := UnpackUntil(packed, 0xfe)
	require.NoError(t, err)
	require.Equal(t, head, got)
	require.Nil(t, rest)
	_, _, err = UnpackUntil(append(slices.Clone(packed), 0xfd), 0xfe)
	require.ErrorIs(t, err, ErrInvalid)
}
