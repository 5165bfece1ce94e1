// A transaction's buffered writes: what each key is set to, and the atomic
// operations applied on top.

package embedded

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"slices"

	"github.com/fdbqueue/fdbqueue/internal/btree"
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
	cp := len(p[0].key)
	for _, w := range p[1:] {
		cp = commonPrefix(p[0].key[:cp], w.key)
	}
	ord := slices.Grow(t.sortBuf[:0], len(p))
	for i, w := range p {
		rest := w.key[cp:]
		ord = append(ord, sortEntry{pre0: prefix8(rest), pre1: prefix8(rest[min(len(rest), 8):]), i: i})
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
	out := make([]*write, 0, len(p))
	for j := 0; j < len(ord); {
		w := p[ord[j].i]
		for j++; j < len(ord) && ord[j].pre0 == ord[j-1].pre0 && ord[j].pre1 == ord[j-1].pre1 && bytes.Equal(p[ord[j].i].key, w.key); j++ {
			t.fold(w, p[ord[j].i])
		}
		out = append(out, w)
	}
	t.sortBuf = ord[:0]
	return out
}

// commonPrefix returns the length of the longest common prefix of a and b.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// prefix8 returns the first 8 bytes of b as a big-endian number, b padded
// with zeros.
func prefix8(b []byte) uint64 {
	if len(b) >= 8 {
		return binary.BigEndian.Uint64(b)
	}
	var buf [8]byte
	copy(buf[:], b)
	return binary.BigEndian.Uint64(buf[:])
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
// (foldAdd), which the size then counts no more.
func (t *txn) addOp(w *write, op atomicOp) {
	if foldAdd(w, op.kind, op.param) {
		t.size -= len(op.param)
		return
	}
	w.ops = append(w.ops, op)
}

// foldAdd adds param into w's last operation, and reports that it did,
// when both are ADDs of one length: (v+a)+b = v+(a+b), both truncated to
// that length. The counters a pop or a push adds to (a queue's count, its
// statistics) take one operation per transaction, not one per row.
func foldAdd(w *write, kind opKind, param []byte) bool {
	n := len(w.ops)
	if kind != opAdd || n == 0 || w.ops[n-1].kind != opAdd || len(w.ops[n-1].param) != len(param) {
		return false
	}
	addInto(w.ops[n-1].param, param)
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
		return
	}
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
