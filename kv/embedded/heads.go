// Path hints of one-row range reads: where the last seek for a pivot went
// down the tree, for the next seek for the same pivot.

package embedded

import (
	"encoding/binary"
	"hash/maphash"
	"sync/atomic"
	"unsafe"

	"github.com/fdbqueue/fdbqueue/internal/btree"
)

// A fit pop reads the head of each of its ~50 fitting cells (store.first),
// and the next pop reads the same cells' heads again: a seek for the same
// pivot follows the same path down the tree. A seek costs the comparisons
// of a binary search at each level, each a record loaded from a slab
// (scattered: a cache miss); with the path of the last seek for its pivot
// as a hint, it costs two a level, of the records that seek loaded.
//
// headHints remembers the path of the last seek for a pivot in a slot
// chosen by the pivot's hash, shared by every reader of the store: a
// collision, a race between two readers, or a tree changed since only
// makes a hint wrong, and any hint is safe (the btree only tries it). A
// slot is two words stored atomically each; a hint torn between two
// writers is a hint still.
type headHints struct {
	seed  maphash.Seed
	slots [headSlots]hintSlot
}

// headSlots is the number of pivots remembered: a table's cells, shapes
// and queue heads, a few hundred, fit.
const headSlots = 1024

// A hint is 16 bytes, two words.
var _ [16 - unsafe.Sizeof(btree.PathHint{})]byte
var _ [unsafe.Sizeof(btree.PathHint{}) - 16]byte

func newHeadHints() *headHints { return &headHints{seed: maphash.MakeSeed()} }

// hintSlot holds a hint as two words.
type hintSlot [2]atomic.Uint64

// slot returns the slot of pivot.
func (h *headHints) slot(pivot []byte) *hintSlot {
	return &h.slots[maphash.Bytes(h.seed, pivot)&(headSlots-1)]
}

// load returns the hint in slot s.
func (s *hintSlot) load() btree.PathHint {
	var p btree.PathHint
	b := (*[16]byte)(unsafe.Pointer(&p))
	binary.LittleEndian.PutUint64(b[:8], s[0].Load())
	binary.LittleEndian.PutUint64(b[8:], s[1].Load())
	return p
}

// store puts hint p in slot s, unless it holds it already (a store of an
// unchanged word would still take its cache line from other cores).
func (s *hintSlot) store(p *btree.PathHint) {
	b := (*[16]byte)(unsafe.Pointer(p))
	if w := binary.LittleEndian.Uint64(b[:8]); s[0].Load() != w {
		s[0].Store(w)
	}
	if w := binary.LittleEndian.Uint64(b[8:]); s[1].Load() != w {
		s[1].Store(w)
	}
}
