package embedded

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// encodeV1 is the record encoder as it was before records were encoded
// in place (batch.appendRecord): the payload in a buffer of its own, then
// the header, [u32 length][u32 CRC-32C] before it. The log's files are
// written that way by every earlier version, and read by this one.
func encodeV1(b *batch, ver uint64) []byte {
	var out []byte
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
	rec := binary.LittleEndian.AppendUint32(nil, uint32(len(out)))
	rec = binary.LittleEndian.AppendUint32(rec, crc32.Checksum(out, castagnoli))
	return append(rec, out...)
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// randBatch returns a batch of random clears and writes: sets, clears and
// atomic operations on the committed value, values from empty to
// kv.MaxValueSize.
func randBatch(rng *rand.Rand) *batch {
	b := &batch{}
	for range rng.IntN(4) {
		b.clears = append(b.clears, kv.Range{Begin: randBytes(rng, rng.IntN(20)), End: randBytes(rng, 1+rng.IntN(20))})
	}
	for range rng.IntN(40) {
		w := &write{key: randBytes(rng, 1+rng.IntN(200)), base: baseKind(rng.IntN(3))}
		if w.base == baseSet {
			size := rng.IntN(300)
			if rng.IntN(20) == 0 {
				size = kv.MaxValueSize - rng.IntN(2)
			}
			w.val = randBytes(rng, size)
		}
		for range rng.IntN(3) {
			w.ops = append(w.ops, atomicOp{kind: opKind(rng.IntN(int(opBitAnd) + 1)), param: randBytes(rng, rng.IntN(16))})
		}
		b.writes = append(b.writes, w)
	}
	return b
}

// TestAppendRecordIsFormatV1: records encoded in place, several to one
// buffer as the log writes a group, and into a buffer reused from the
// last group, are byte for byte what the encoder before wrote, and
// replay reads each back.
func TestAppendRecordIsFormatV1(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	var buf []byte
	for range 200 {
		// The log's buffer from the last group: its bytes are stale.
		buf = buf[:cap(buf)]
		for i := range buf {
			buf[i] = 0xa5
		}
		buf = buf[:0]
		var want []byte
		var batches []*batch
		for range 1 + rng.IntN(4) {
			b, ver := randBatch(rng), rng.Uint64N(1<<45)
			if rng.IntN(4) == 0 {
				ver = uint64(len(batches)) + 1
			}
			var err error
			buf, err = b.appendRecord(buf, ver)
			require.NoError(t, err)
			want = append(want, encodeV1(b, ver)...)
			batches = append(batches, b)
		}
		require.True(t, bytes.Equal(want, buf), "in-place records differ from format 1 as written before")

		// Replay reads them back, in order.
		off := 0
		for _, b := range batches {
			n := int(binary.LittleEndian.Uint32(buf[off:]))
			payload := buf[off+recHeaderSize : off+recHeaderSize+n]
			require.Equal(t, binary.LittleEndian.Uint32(buf[off+4:]), crc32.Checksum(payload, castagnoli))
			_, got, err := decodeBatch(payload)
			require.NoError(t, err)
			require.Equal(t, len(b.writes), len(got.writes))
			require.Equal(t, len(b.clears), len(got.clears))
			for i, w := range b.writes {
				require.Equal(t, len(w.ops), len(got.writes[i].ops))
				for j, op := range w.ops {
					require.Equal(t, op.kind, got.writes[i].ops[j].kind)
					require.True(t, bytes.Equal(op.param, got.writes[i].ops[j].param))
				}
			}
			off += recHeaderSize + n
		}
		require.Equal(t, len(buf), off)
	}
}

// TestAppendRecordTooLarge: a record over maxRecordSize is refused, and
// the buffer comes back as it was: the records before it in the group
// are untouched.
func TestAppendRecordTooLarge(t *testing.T) {
	t.Parallel()
	small := &batch{writes: []*write{{key: []byte("k"), base: baseSet, val: []byte("v")}}}
	buf, err := small.appendRecord(nil, 1)
	require.NoError(t, err)
	before := bytes.Clone(buf)
	big := &batch{}
	for i := range maxRecordSize/kv.MaxValueSize + 1 {
		big.writes = append(big.writes, &write{key: []byte{byte(i >> 8), byte(i)}, base: baseSet, val: make([]byte, kv.MaxValueSize)})
	}
	out, err := big.appendRecord(buf, 2)
	require.ErrorContains(t, err, "log record of")
	require.Equal(t, before, out)
}

// TestReplayRefusesARecordItCannotDecode: a record with a good checksum
// that this version cannot decode (here an atomic operation of a kind it
// does not have, as a later version may write) fails the open, and leaves
// the log as it is, where a torn tail is cut: cutting it would drop that
// commit and every one after it.
func TestReplayRefusesARecordItCannotDecode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, err := OpenFile(dir, FileConfig{})
	require.NoError(t, err)
	require.NoError(t, db.Transact(t.Context(), func(tr kv.Transaction) error {
		tr.Set([]byte("k"), []byte("v"))
		return nil
	}))
	require.NoError(t, db.Close())
	names, err := filepath.Glob(filepath.Join(dir, "wal-*.log"))
	require.NoError(t, err)
	last := names[len(names)-1]
	data, err := os.ReadFile(last)
	require.NoError(t, err)
	// A clean close leaves no reserved space after the records.
	later := &batch{writes: []*write{{key: []byte("k"), base: baseDB, ops: []atomicOp{{kind: opBitAnd + 1, param: []byte{1}}}}}}
	rec, err := later.appendRecord(nil, 1<<20)
	require.NoError(t, err)
	data = append(data, rec...)
	require.NoError(t, os.WriteFile(last, data, 0o600))

	_, err = OpenFile(dir, FileConfig{})
	require.ErrorContains(t, err, "does not decode")
	require.ErrorContains(t, err, "a later version of fdbqueue wrote it")
	after, err := os.ReadFile(last)
	require.NoError(t, err)
	require.Equal(t, data, after, "the log is left as it was")
}
