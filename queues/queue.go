package queues

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// Kind is a queue's recipe.
type Kind uint8

const (
	// FIFO serves items in the order they were pushed.
	FIFO Kind = iota
	// Priority serves items by priority, oldest first within one priority.
	Priority
)

func (k Kind) String() string {
	if k == FIFO {
		return "fifo"
	}
	return "priority"
}

// Order is the direction a priority queue is served in.
type Order uint8

const (
	// Min serves the lowest priority first.
	Min Order = iota
	// Max serves the highest priority first.
	Max
)

// Item is one queued item.
type Item struct {
	// ID identifies the item; see NewID.
	ID int64
	// Priority orders a priority queue's items; FIFO queues ignore it.
	Priority int64
	// Resources are what a task needs, one per resource the queue was
	// made with, in that order.
	Resources []int64
	// Value is the item's payload.
	Value []byte
	// VisibleAt is when the item may be popped or leased again: pops and
	// leases take an item only once it has passed (the zero time: always).
	// A push with a VisibleAt in the future is a delayed item; Lease sets
	// it to the end of the lease. See lease.go.
	VisibleAt time.Time
	// Lease is the token of the item's current (or last) lease, 0 if it
	// was never leased.
	Lease int64
	// Attempts is how many times the item was leased.
	Attempts int64
	// Seq is the item's place among the items of its priority (of the
	// queue, for FIFO), as the read, pop or lease that returned it found
	// it (see layout.go). Push and PushAll ignore it and give the item
	// the next place; PutBack puts an item back at it.
	Seq int64
	// PushedAt is when the item was pushed, to the second: the zero
	// time for an item pushed before statistics were kept (see stats.go).
	// A push of an item without one gives it the clock's time; PutBack
	// and Move keep it.
	PushedAt time.Time
	// Held reports that an invisible item is hidden by a lease: Lease
	// sets it, Extend and SetVisibleAt keep it while the item stays
	// invisible, Release clears it, and so does the item's becoming
	// visible. An invisible item without it is delayed (see stats.go).
	Held bool
}

// Errors of the queue layer.
var (
	// ErrDuplicateID is returned by Push when the queue holds an item with
	// the same id.
	ErrDuplicateID = errors.New("fdbqueue: an item with this id is already queued")
	// ErrInvalidItem is returned (wrapped) by Push and PopFit for an item or
	// limits that do not match the queue: an id that is not positive, or the
	// wrong number of resources.
	ErrInvalidItem = errors.New("fdbqueue: invalid item")
	// ErrCorrupt is returned (wrapped) by Check when an invariant is broken.
	ErrCorrupt = errors.New("fdbqueue: queue invariant violated")
)

// DuplicateIDError is the ErrDuplicateID of an item pushed under an id the
// queue holds already: errors.As finds the id, so that a caller pushing
// many items can say which one (errors.Is(err, ErrDuplicateID) holds).
type DuplicateIDError struct{ ID int64 }

func (e *DuplicateIDError) Error() string { return fmt.Sprintf("%v: id %d", ErrDuplicateID, e.ID) }

// Is makes errors.Is(err, ErrDuplicateID) true.
func (e *DuplicateIDError) Is(target error) bool { return target == ErrDuplicateID }

// Queue is one queue's place in the key space and its shape. Its items
// live in the key space: every method works through the transaction it is
// given. Besides, it holds hints that the copies WithOptions makes share
// (fitHints, topHint): what earlier fit pops missed and the highest
// priority found, which save reads and do not change what a method returns.
type Queue struct {
	prefix    []byte
	kind      Kind
	resources []string
	cells     cellGrid        // how its fit index quantises resources
	sub       [numTags][]byte // P (tag), for each tag (see layout.go)
	opts      Options
	marks     markers          // push markers: tags 7 and 8
	receipts  Receipts         // pop, count and push receipts: tag 14
	hints     *fitHints        // shared by the copies WithOptions makes
	top       *topHint         // the same (see head.go)
	statKeys  [numStats][]byte // the counters' keys (stats.go)
	// marksCleared is when this process last cleared old visible-at
	// marks (unix nanoseconds; see hidden.go), shared like hints.
	marksCleared *atomic.Int64
	// runSweep is the id sweepRuns goes on from, shared like hints.
	runSweep *atomic.Int64
}

// New returns the queue stored under prefix (a packed tuple, so that the keys
// stay readable by FoundationDB's tuple layer). resources names the
// resources tasks declare; PopFit takes limits in the same order.
func New(prefix []byte, kind Kind, resources ...string) *Queue {
	q := &Queue{prefix: bytes.Clone(prefix), kind: kind, resources: append([]string(nil), resources...), cells: ExactCellsBelow, hints: &fitHints{}, top: &topHint{}, marksCleared: &atomic.Int64{}, runSweep: &atomic.Int64{}}
	for tag := range q.sub {
		q.sub[tag] = tuple.AppendInt(bytes.Clone(prefix), int64(tag))
	}
	q.statKeys = statKeysOf(q.sub[tagStats])
	return q.WithOptions(Options{})
}

// WithOptions returns a copy of the queue that uses opts (its clock and
// receipt lifetime).
func (q *Queue) WithOptions(opts Options) *Queue {
	c := *q
	c.opts = opts
	c.marks = markers{mark: c.sub[tagMarks], exp: c.sub[tagMarkExpiry], opts: opts}
	c.receipts = NewReceipts(c.sub[tagReceipts], opts, kv.Range{Begin: c.sub[tagOldReceipts], End: c.sub[tagSignal]})
	return &c
}

// WithExactCells returns a copy of the queue whose fit index makes every
// resource value below below a cell of its own: ExactCellsBelow, as New
// does, or LegacyExactCellsBelow, for a queue written by versions before
// 2026-11-27. A queue must be read and written with the bound its rows
// were filed with. Copies share hints as WithOptions's do.
func (q *Queue) WithExactCells(below int64) (*Queue, error) {
	if below != ExactCellsBelow && below != LegacyExactCellsBelow {
		return nil, fmt.Errorf("fdbqueue: a fit index with exact cells below %d (accepted: %d, or %d for queues written before 2026-11-27)", below, ExactCellsBelow, LegacyExactCellsBelow)
	}
	c := *q
	c.cells = cellGrid(below)
	return &c, nil
}

// ExactCells returns the bound below which the queue's fit index makes
// every resource value a cell of its own (WithExactCells).
func (q *Queue) ExactCells() int64 { return int64(q.cells) }

// Kind returns the queue's recipe.
func (q *Queue) Kind() Kind { return q.kind }

// Resources returns the names of the queue's resources.
func (q *Queue) Resources() []string { return append([]string(nil), q.resources...) }

// Range returns the key range holding all of the queue's data.
func (q *Queue) Range() kv.Range { return kv.PrefixRange(q.prefix) }

// NewID returns a new positive id for Push. Make it outside the
// transaction function, so that a retry pushes the same id.
//
// A process hands out ids in blocks of consecutive ids, each block from a
// random start, so that the ids of a batch are neighbours in the id index:
// their lookups and inserts follow one path of the B-tree, where random ids
// would each descend a path of their own, missing the cache at every level
// (about a quarter of a 100-row INSERT's time). Two processes (on
// one FoundationDB cluster) meet only if their blocks overlap, which is
// less likely than for the same number of random ids; a push that would
// reuse an id in the queue fails with ErrDuplicateID, never overwrites.
func NewID() int64 { return ids.id() }

// idBlock is how many consecutive ids NewID hands out from one random
// start.
const idBlock = 1 << 20

// idSource hands out ids in blocks (see NewID); ids is the process's.
type idSource struct {
	mu        sync.Mutex
	next, end int64 // the block's next id and its end (exclusive)
}

var ids idSource

func (s *idSource) id() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next == s.end {
		s.next = 1 + rand.Int64N(math.MaxInt64-idBlock)
		s.end = s.next + idBlock
	}
	id := s.next
	s.next++
	return id
}

// pos is an item's place in queue order. due is 0 for a visible item, and
// an invisible item's visible_at (unix nanoseconds) otherwise: it says
// where the item is stored (see itemKey), not where it sorts.
type pos struct {
	prio, seq, id int64
	due           int64
}

// better reports whether a comes before b in order.
func better(a, b pos, order Order) bool {
	if a.prio != b.prio {
		return (a.prio < b.prio) == (order == Min)
	}
	if a.seq != b.seq {
		return a.seq < b.seq
	}
	return a.id < b.id
}

func (q *Queue) checkResources(res []int64, what string) error {
	if len(res) != len(q.resources) {
		return fmt.Errorf("%w: %d %s given, the queue has %d resources %v", ErrInvalidItem, len(res), what, len(q.resources), q.resources)
	}
	return nil
}

// Count returns the number of queued items, from a counter kept with atomic
// adds: O(1), and a read conflict only on the counter.
func (q *Queue) Count(tr kv.ReadTransaction) (int64, error) {
	v, err := tr.Get(q.countKey())
	if err != nil || v == nil {
		return 0, err
	}
	if len(v) != counterLen {
		return 0, fmt.Errorf("%w: counter of %d bytes", ErrCorrupt, len(v))
	}
	return int64(binary.LittleEndian.Uint64(v)), nil
}

// Clear removes the queue's whole key range: its items and indexes, and its
// push markers and pop receipts. It is for dropping the queue; ClearItems
// empties a queue that stays in use.
func (q *Queue) Clear(tr kv.Transaction) {
	tr.ClearRange(q.Range())
}

// ClearItems removes every item, visible or not, with its indexes and
// count, and keeps the push markers and pop receipts, so that a push or pop
// retried after commit_unknown_result still finds what its committed
// attempt did. It clears the statistics' counts of the items too, and
// keeps their counters (a caller counts what it removed: AddStat).
func (q *Queue) ClearItems(tr kv.Transaction) {
	tr.ClearRange(kv.Range{Begin: q.sub[tagItems], End: q.sub[tagMarks]})
	tr.ClearRange(kv.Range{Begin: q.sub[tagDue], End: kv.PrefixRange(q.sub[tagHidden]).End})
	tr.ClearRange(kv.Range{Begin: q.key(tagStats, statDue), End: q.key(tagStats, statSince)})
	// The directories' guards hold nothing, but whatever clears a
	// directory key clears its guard, which the pushes that found the key
	// there read (readDir). (Those pushes conflict with this clear through
	// their ids' reads anyway.)
	tr.ClearRange(kv.PrefixRange(q.sub[tagDirGuard]))
	if mayHoldRuns(tr) {
		tr.ClearRange(kv.PrefixRange(q.sub[tagRuns]))
	}
}
