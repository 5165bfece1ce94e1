// A transaction's buffered writes: what each key is set to, and the atomic
// operations applied on top.

package embedded

import (
	"bytes"
	"cmp"
	"slices"
	"sync"

	"github.com/fdbqueue/fdbqueue/internal/btree"
	"github.com/fdbqueue/fdbqueue/kv"
)

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
	opBitAnd
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
		case opBitAnd:
			val, ok = andBytes(val, ok, op.param), true
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

// andBytes is FoundationDB's BIT_AND: the value, as long as the parameter
// (cut, or extended with zeros), ANDed with it; an absent value takes the
// parameter itself.
func andBytes(val []byte, ok bool, param []byte) []byte {
	out := make([]byte, len(param))
	copy(out, param)
	if ok {
		for i := range out {
			if i < len(val) {
				out[i] &= val[i]
			} else {
				out[i] = 0
			}
		}
	}
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

// A transaction's writes are appended to pending as they are made, each
// with its own copy of its key, in the order made: a key written twice is
// there twice. They are sorted and folded once, when something needs them
// in key order: a read of the transaction's own writes, a range clear, or
// the commit (sortPending). A commit whose writes all came after its reads
// (an INSERT: its reads, then its rows) sorts them once into its batch, and
// builds no tree of them: keeping them sorted on every write cost a
// 100-row INSERT a tree insertion per key, a sixth of its time.
//
// A pending write says what it does to its key given what the writes
// before it left: baseSet and baseCleared replace it, baseDB applies its
// operations on top (fold). Successive atomic operations on a few keys (a
// counter added to once a row) go into one pending write (recent), so a
// long transaction of many such operations buffers one write per key, as
// it did when each write was folded at once.

// recentAtomics is how many keys of atomic operations recent remembers.
const recentAtomics = 4

// sortEntry is a pending write in sortPending's order: pre0 and pre1 are
// the 16 bytes of its key after the keys' common prefix (zero-padded), and
// i its index in pending, which orders writes to one key.
type sortEntry struct {
	pre0, pre1 uint64
	i          int
}

// sortPending sorts the pending writes by key and folds the writes to each
// key into its first, in the order they were made. It returns them, one a
// key, and empties pending. A write with base baseDB starts from whatever
// the transaction's earlier writes (in t.writes) or clears left.
func (t *txn) sortPending() []*write {
	p := t.pending
	t.pending, t.recent = nil, [recentAtomics]*write{}
	if len(p) == 0 {
		return nil
	}
	if len(p) == 1 {
		return p
	}
	b := t.buffers()
	cp := len(p[0].key)
	for _, w := range p[1:] {
		cp = kv.CommonPrefix(p[0].key[:cp], w.key)
	}
	ord := slices.Grow(b.sortBuf[:0], len(p))
	for i, w := range p {
		rest := w.key[cp:]
		ord = append(ord, sortEntry{pre0: kv.Abbrev(rest), pre1: kv.Abbrev(rest[min(len(rest), 8):]), i: i})
	}
	slices.SortFunc(ord, func(a, b sortEntry) int {
		if a.pre0 != b.pre0 {
			return cmp.Compare(a.pre0, b.pre0)
		}
		if a.pre1 != b.pre1 {
			return cmp.Compare(a.pre1, b.pre1)
		}
		if c := bytes.Compare(p[a.i].key[cp:], p[b.i].key[cp:]); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i)
	})
	out := b.list(len(p))
	for j := 0; j < len(ord); {
		w := p[ord[j].i]
		for j++; j < len(ord) && ord[j].pre0 == ord[j-1].pre0 && ord[j].pre1 == ord[j-1].pre1 && bytes.Equal(p[ord[j].i].key, w.key); j++ {
			t.fold(w, p[ord[j].i])
		}
		out = append(out, w)
	}
	b.sortBuf = ord[:0]
	b.putList(p)
	return out
}

// fold applies w, a later write to dst's key, to dst: a set or a clear
// replaces what dst does, atomic operations go on top. The transaction's
// size counts w's key (and an ADD folded into the last one) no more.
func (t *txn) fold(dst, w *write) {
	t.size -= len(w.key)
	if w.base != baseDB {
		dst.base, dst.val, dst.ops = w.base, w.val, w.ops
		return
	}
	for _, op := range w.ops {
		t.addOp(dst, op)
	}
}

// addOp appends op to w's operations, or folds it into the last one
// (foldOp), which the size then counts no more.
func (t *txn) addOp(w *write, op atomicOp) {
	if foldOp(w, op.kind, op.param) {
		t.size -= len(op.param)
		return
	}
	w.ops = append(w.ops, op)
}

// foldOp folds param into w's last operation, and reports that it did,
// when both are ADDs, or both BIT_ANDs, of one length: (v+a)+b = v+(a+b),
// (v&a)&b = v&(a&b), both cut to that length (and an absent value, which
// takes a, then a&b, takes a&b). The counters a pop or a push adds to (a
// queue's count, its statistics) take one operation per transaction, not
// one per row.
func foldOp(w *write, kind opKind, param []byte) bool {
	n := len(w.ops)
	if kind != opAdd && kind != opBitAnd || n == 0 || w.ops[n-1].kind != kind || len(w.ops[n-1].param) != len(param) {
		return false
	}
	last := w.ops[n-1].param
	if kind == opBitAnd {
		for i := range last {
			last[i] &= param[i]
		}
		return true
	}
	addInto(last, param)
	return true
}

// startFrom sets the base of w, a write that no earlier write of the
// transaction is folded into, from the transaction's clears: atomic
// operations on a cleared key start from nothing.
func (t *txn) startFrom(w *write) {
	if w.base == baseDB && t.inClears(w.key) {
		w.base = baseCleared
	}
}

// flushWrites folds the pending writes into t.writes, the tree that reads
// of the transaction's own writes search.
func (t *txn) flushWrites() {
	if len(t.pending) == 0 {
		return
	}
	ws := t.sortPending()
	if t.writes == nil {
		t.writes = btree.NewBTreeGOptions(writeLess, btree.Options{NoLocks: true, Degree: 16})
	}
	if t.writes.Len() == 0 {
		for _, w := range ws {
			t.startFrom(w)
			t.writes.Load(w) // in order: appended to the last leaf
		}
	} else {
		var hint btree.PathHint
		for _, w := range ws {
			if e, ok := t.writes.GetHint(w, &hint); ok {
				t.fold(e, w)
				continue
			}
			t.startFrom(w)
			t.writes.SetHint(w, &hint)
		}
	}
	t.buffers().putList(ws) // sortPending's, no one else's
}

// sortedWrites returns the transaction's writes in key order, one a key,
// for its commit's batch.
func (t *txn) sortedWrites() []*write {
	if t.writes == nil || t.writes.Len() == 0 {
		ws := t.sortPending()
		for _, w := range ws {
			t.startFrom(w)
		}
		// Still the transaction's writes, should it go on after a
		// failed commit: in key order, one a key, as sortPending
		// leaves them.
		t.pending = ws
		return ws
	}
	t.flushWrites()
	ws := make([]*write, 0, t.writes.Len())
	t.writes.Scan(func(w *write) bool {
		ws = append(ws, w)
		return true
	})
	return ws
}

// A transaction's buffers are reused by the next ones: its write blocks,
// byte blocks, and slices of writes and sort entries were allocated
// afresh for each transaction, two thirds of the bytes a 100-row INSERT
// allocated (a write block holds pointers: the collector scanned it too).
// They go back to bufPool when the transaction ends (release): committed,
// cancelled, or reset for another attempt. Nothing refers to them then:
// the batch is applied (memory) or written and applied (file), the tree
// holds records of its own (slabs), and the history's keys are the
// records' (record). Only the bytes a read returned may still be held, by
// the caller: a transaction whose reads returned its own writes (leaked)
// keeps its byte blocks out of the pool.
type txnBufs struct {
	wblocks [][]write // write blocks, [:wused] handed out
	wused   int
	bblocks [][]byte // byte blocks, [:bused] handed out
	bused   int
	lists   [2][]*write // free slices of writes, for pending and sortPending
	sortBuf []sortEntry
	pre     prebuilt
	oblocks [][]atomicOp // atomic operations' blocks, [:oused] handed out
	oused   int
	batch   batch // the commit's
	// reads is the array of a transaction's read conflicts, empty, for
	// the next one's (growReads): a fit pop's dozens of reads grew one of
	// 3 KiB a pop, half the bytes it allocated.
	reads []span
	// wprobe is the probe of lookups in the transaction's writes (a
	// tree of the buffers' writes): in the transaction, it made every
	// transaction's object a size class larger.
	wprobe write
	// rows is the batch of a transaction's last finished range read,
	// empty, for the next one's first (newRangeIter).
	rows []kv.KeyValue
	// oks, order and ord are getMany's arrays (no pointers in them).
	oks   []bool
	order []int
	ord   []keyOrder
}

var bufPool = sync.Pool{New: func() any { return new(txnBufs) }}

// pooledBlocks bounds the write and byte blocks a txnBufs keeps,
// pooledList the writes its slices hold, pooledReads and pooledRows the
// read conflicts and range-read rows its arrays hold (a fit pop's are a
// few dozen, a few): a transaction of a million writes, or a long scan,
// does not leave its memory in the pool.
const (
	pooledBlocks = 64
	pooledList   = pooledBlocks * writeBlock
	pooledReads  = 256
	pooledRows   = 64
	pooledMany   = 1024
)

// buffers returns the transaction's buffers, taken from the pool at its
// first write.
func (t *txn) buffers() *txnBufs {
	if t.bufs == nil {
		t.bufs = bufPool.Get().(*txnBufs)
	}
	return t.bufs
}

// writeBlock returns a block of writes, all zero: the next pooled one, or
// a new one sized for a transaction of n writes so far (blocks grow with
// the transaction: one of a few writes takes little).
func (b *txnBufs) writeBlock(n int) []write {
	if b.wused < len(b.wblocks) {
		b.wused++
		return b.wblocks[b.wused-1]
	}
	blk := make([]write, min(max(n, 4), writeBlock))
	if len(b.wblocks) < pooledBlocks {
		b.wblocks = append(b.wblocks, blk)
		b.wused++
	}
	return blk
}

// byteBlock returns a block of bytes for room: the next pooled one if it
// holds n bytes, else a new one of size.
func (b *txnBufs) byteBlock(size, n int) []byte {
	if b.bused < len(b.bblocks) {
		if blk := b.bblocks[b.bused]; len(blk) >= n {
			b.bused++
			return blk
		}
		blk := make([]byte, size)
		b.bblocks[b.bused] = blk
		b.bused++
		return blk
	}
	blk := make([]byte, size)
	if len(b.bblocks) < pooledBlocks {
		b.bblocks = append(b.bblocks, blk)
		b.bused++
	}
	return blk
}

// opBlock returns a block of atomic operations, all zero: the next
// pooled one, or a new one.
func (b *txnBufs) opBlock() []atomicOp {
	if b.oused < len(b.oblocks) {
		b.oused++
		return b.oblocks[b.oused-1]
	}
	blk := make([]atomicOp, opBlock)
	if len(b.oblocks) < pooledBlocks {
		b.oblocks = append(b.oblocks, blk)
		b.oused++
	}
	return blk
}

// list returns an empty slice of writes with room for n: a free one, or a
// new one. It is the caller's until putList.
func (b *txnBufs) list(n int) []*write {
	for i, l := range b.lists {
		if cap(l) >= n {
			b.lists[i] = nil
			return l
		}
	}
	return make([]*write, 0, n)
}

// putList makes l, which no one uses any more, free for list.
func (b *txnBufs) putList(l []*write) {
	if cap(l) > pooledList {
		return
	}
	clear(l)
	i := 0
	if cap(b.lists[1]) < cap(b.lists[0]) {
		i = 1
	}
	if cap(l) > cap(b.lists[i]) {
		b.lists[i] = l[:0]
	}
}

// release ends the transaction's use of its buffers and returns them to
// the pool: it is called once nothing refers to them (see txnBufs), and
// drops the transaction's own references to them.
func (t *txn) release() {
	b := t.bufs
	if b == nil {
		return
	}
	for _, blk := range b.wblocks[:b.wused] {
		clear(blk)
	}
	b.wused = 0
	if t.leaked {
		// The caller may hold bytes of these blocks: they are its.
		b.bblocks = b.bblocks[:copy(b.bblocks, b.bblocks[b.bused:])]
	}
	b.bused = 0
	b.putList(t.pending) // no one else's: a list's, or sortPending's
	clear(b.pre)
	b.pre = b.pre[:0]
	for _, blk := range b.oblocks[:b.oused] {
		clear(blk)
	}
	b.oused = 0
	b.batch = batch{}
	if cap(t.reads) > cap(b.reads) && cap(t.reads) <= pooledReads {
		clear(t.reads) // no keys kept alive
		b.reads = t.reads[:0]
	}
	if cap(t.spareBatch) > cap(b.rows) && cap(t.spareBatch) <= pooledRows {
		// Cleared by the iterator that finished with it.
		b.rows = t.spareBatch[:0]
	}
	t.spareBatch = nil
	t.bufs, t.pending, t.writes, t.recent = nil, nil, nil, [recentAtomics]*write{}
	t.wblock, t.bblock, t.oblock = nil, nil, nil
	// The read conflicts go with the buffers: no commit reads them any
	// more, and an iterator left open past the end writes no span (Next
	// fails once the transaction ended or was reset).
	t.reads = nil
	t.creq = commitReq{}
	bufPool.Put(b)
}
