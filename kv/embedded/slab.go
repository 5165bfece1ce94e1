// Records: one version of one key, stored with the other versions a commit
// wrote in one block of bytes (a slab), and the tree's handle on a record.

package embedded

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"sync/atomic"
	"unsafe"
)

// rec is one version of a key: a pointer to its record in a slab. A slab is
// a []byte (memory the garbage collector does not scan) holding records
// back to back, each
//
//	word (6 bytes, little endian: the version | flags), uvarint key length,
//	uvarint value length, key, value.
//
// The tree holds recs by value, so a key costs the tree one pointer (and
// the 8 bytes of its abbreviation: the tree orders recs by rec.key, and
// compares the 8 bytes of each key after its node's prefix before it reads
// a record, internal/btree's abbrev.go) and its record 8 bytes more than
// its key and value when both are shorter than 128 bytes: no per-key
// object, header or size-class rounding. A slab lives
// while any of its records is referenced (by the tree, a version chain, a
// pending collection, or a value a reader holds).
//
// Key and value bytes never change once written; the word's flags change
// under store.mu held exclusively, and are read under it held shared.
type rec struct{ p *byte }

// recHeader is the size of the word. Six bytes hold versions below 2^45
// (a commit's version counts commits: a year of a million commits a
// second) and the flags; a word of eight cost the 2 bytes a key more
// (BenchmarkMemoryPerTask: 6.8 keys a task).
const recHeader = 6

const (
	// flagDel marks a deletion.
	flagDel = 1 << 47
	// flagStale marks a record that is no longer the tree's item for its
	// key: a newer version replaced it, it was collected, or it was moved
	// to another slab.
	flagStale = 1 << 46
	// flagOlder marks a record with older versions, in store.older.
	flagOlder = 1 << 45
	verMask   = flagOlder - 1
	wordMask  = 1<<(8*recHeader) - 1
)

// word reads the word with one 8-byte load: a record has at least the two
// length bytes after it.
func (r rec) word() uint64 {
	return binary.LittleEndian.Uint64(unsafe.Slice(r.p, 8)) & wordMask
}

func (r rec) setWord(w uint64) {
	b := unsafe.Slice(r.p, recHeader)
	binary.LittleEndian.PutUint32(b, uint32(w))
	binary.LittleEndian.PutUint16(b[4:], uint16(w>>32))
}

func (r rec) ver() uint64    { return r.word() & verMask }
func (r rec) del() bool      { return r.word()&flagDel != 0 }
func (r rec) stale() bool    { return r.word()&flagStale != 0 }
func (r rec) hasOlder() bool { return r.word()&flagOlder != 0 }

func (r rec) mark(flag uint64)   { r.setWord(r.word() | flag) }
func (r rec) unmark(flag uint64) { r.setWord(r.word() &^ flag) }

// uvarintAt decodes the uvarint at p, returning it and its length. Record
// lengths are below 2^21 (kv.MaxValueSize), so at most 3 bytes are read, all
// inside the record.
func uvarintAt(p unsafe.Pointer) (int, uintptr) {
	var v int
	var n uintptr
	for shift := 0; ; shift += 7 {
		c := *(*byte)(unsafe.Add(p, n))
		n++
		v |= int(c&0x7f) << shift
		if c < 0x80 {
			return v, n
		}
	}
}

// body returns the lengths of the key and the value and where the key
// starts.
func (r rec) body() (klen, vlen int, at unsafe.Pointer) {
	p := unsafe.Add(unsafe.Pointer(r.p), recHeader)
	// Most keys and values are shorter than 128 bytes: one byte each.
	if k, v := *(*byte)(p), *(*byte)(unsafe.Add(p, 1)); k|v < 0x80 {
		return int(k), int(v), unsafe.Add(p, 2)
	}
	klen, n := uvarintAt(p)
	p = unsafe.Add(p, n)
	vlen, n = uvarintAt(p)
	return klen, vlen, unsafe.Add(p, n)
}

// key returns the record's key. Its capacity is its length: appending to it
// never writes into the slab.
func (r rec) key() []byte {
	klen, _, at := r.body()
	if klen == 0 {
		return []byte{}
	}
	return unsafe.Slice((*byte)(at), klen)
}

// kv returns the record's key and value (capacities = lengths).
func (r rec) kv() (key, val []byte) {
	klen, vlen, at := r.body()
	if klen+vlen == 0 {
		return []byte{}, []byte{}
	}
	b := unsafe.Slice((*byte)(at), klen+vlen)
	// A slice expression with no capacity left keeps the base pointer,
	// never one past the end of the slab.
	return b[:klen:klen], b[klen:]
}

// size returns the bytes the record takes in its slab.
func (r rec) size() int {
	klen, vlen, at := r.body()
	return int(uintptr(at)-uintptr(unsafe.Pointer(r.p))) + klen + vlen
}

// val returns the record's value.
func (r rec) val() []byte {
	_, v := r.kv()
	return v
}

func recLess(a, b rec) bool { return bytes.Compare(a.key(), b.key()) < 0 }

// recSize is the size of the record of key and val.
func recSize(key, val []byte) int {
	return recHeader + uvarintLen(len(key)) + uvarintLen(len(val)) + len(key) + len(val)
}

func uvarintLen(n int) int {
	l := 1
	for n >= 0x80 {
		n >>= 7
		l++
	}
	return l
}

// putRec writes the record of (ver, key, val, del) at the start of b and
// returns it with the bytes written.
func putRec(b []byte, ver uint64, key, val []byte, del bool) (rec, int) {
	if ver > verMask {
		panic("embedded: version beyond the record word's 45 bits")
	}
	w := ver
	if del {
		w |= flagDel
	}
	r := rec{p: &b[0]}
	r.setWord(w)
	n := recHeader
	n += binary.PutUvarint(b[n:], uint64(len(key)))
	n += binary.PutUvarint(b[n:], uint64(len(val)))
	n += copy(b[n:], key)
	n += copy(b[n:], val)
	return r, n
}

// slabSize is the size of a slab: the largest size class of the Go
// allocator, so that a slab is not rounded up to whole pages, and small
// enough that a few live records do not keep much memory alive.
const slabSize = 32 << 10

// slabWriter fills slabs with records, one after the other, each record in
// one slab; a record larger than a quarter of a slab gets a slab of its
// own. It counts the bytes of records in use and of slabs not yet
// collected, which tell when compacting pays (compact.go).
type slabWriter struct {
	buf []byte // the current slab's free space
	// live is the bytes of the records the tree or a version chain holds;
	// dead, of those dropped since the last compaction began.
	live, dead int
	// slabBytes is the bytes of the slabs allocated and not yet collected.
	// Cleanups subtract a slab when the collector frees it: it is a
	// separate object, so that they do not keep the store alive.
	slabBytes *atomic.Int64
}

// put writes the record of (ver, key, val, del) and returns it.
func (sw *slabWriter) put(ver uint64, key, val []byte, del bool) rec {
	n := recSize(key, val)
	sw.live += n
	if n > len(sw.buf) {
		if n > slabSize/4 {
			r, _ := putRec(sw.newSlab(n), ver, key, val, del)
			return r
		}
		sw.buf = sw.newSlab(slabSize)
	}
	r, n := putRec(sw.buf, ver, key, val, del)
	sw.buf = sw.buf[n:]
	return r
}

func (sw *slabWriter) newSlab(n int) []byte {
	if sw.slabBytes == nil {
		sw.slabBytes = new(atomic.Int64)
	}
	b := make([]byte, n)
	sw.slabBytes.Add(int64(n))
	runtime.AddCleanup(&b[0], func(c slabCleanup) { c.counter.Add(-c.n) }, slabCleanup{sw.slabBytes, int64(n)})
	return b
}

type slabCleanup struct {
	counter *atomic.Int64
	n       int64
}

// drop counts r as dead: nothing references it any more.
func (sw *slabWriter) drop(r rec) {
	n := r.size()
	sw.live -= n
	sw.dead += n
}

// probe makes a record of key in *scratch (reused), for tree lookups.
func probe(scratch *[]byte, key []byte) rec {
	n := recSize(key, nil)
	if cap(*scratch) < n {
		*scratch = make([]byte, n, n+32)
	}
	r, _ := putRec((*scratch)[:n], 0, key, nil, false)
	return r
}
