package queues

import (
	"bytes"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// The key layout: the one table of every key a queue writes. Other comments
// and documents point here rather than repeat it.
//
// A queue lives under a key prefix P (a packed tuple). Every key is P
// followed by a packed tuple of integers, the first of which is the tag, so
// FoundationDB's tuple layer in any language can read them (and the
// integers of the values below, up to an item's or a receipt's 0xfe):
//
//	key                                     value                                         written by
//	P (0, seq, id)                          FIFO item: packed (resources...,              insert, rewrite
//	                                        pushed_at), or (resources..., visible_at,
//	                                        lease, attempts, pushed_at, held) once it
//	                                        has any of those, then the byte 0xfe and
//	                                        the value as it is (encodeValue); written
//	                                        before: packed (resources..., value,
//	                                        [the integers]); without pushed_at and
//	                                        held, a row from before statistics (see
//	                                        stats.go)
//	P (0, priority, seq, id)                priority item: the same                       insert, rewrite
//	P (1, id)                               id index: packed (seq) for FIFO,              insert, rewrite
//	                                        (priority, seq) for priority queues;
//	                                        (..., due) when the item is invisible
//	P (2)                                   item count: little-endian int64,              push, PushAll, remove
//	                                        kept with atomic ADD
//	P (3, cell..., priority, seq, id)       fit index by cell: packed (resources...),     indexAdd
//	                                        "" in an exact cell (earlier versions:
//	                                        its resources too)
//	P (4, cell...)                          cell directory: ""                            indexAdd (ensureDir)
//	P (5, resources..., priority, seq, id)  fit index by shape: "" (only shapes in        indexAdd
//	                                        cells that hold more than one: see
//	                                        cellGrid.exact)
//	P (6, resources...)                     shape directory: "" (the same shapes)         indexAdd (ensureDir)
//	P (7, id)                               push marker (a Receipts): "" (earlier         markPushed
//	                                        versions: the expiry)
//	P (8, expiry, id)                       the push marker by expiry: ""                 markPushed
//	P (9, ...), P (10, ...)                 receipts of earlier versions, by token and    (cleared by
//	                                        by expiry; cleared with expired receipts      Receipts.Record)
//	P (11)                                  push signal: little-endian int64, the items   Push, PushAll,
//	                                        ever pushed, kept with atomic ADD; FOR POP    WatchSignal,
//	                                        WAIT watches it (see signal.go); leases       Lease, SetVisibleAt
//	                                        and releases that make a row due sooner
//	                                        than any other add 1 too
//	P (12, due, priority, seq, id)          due index: "" (due: unix nanoseconds;         rewrite, push
//	                                        priority 0 for FIFO)
//	P (13, seq, id)                         invisible FIFO item (leased or delayed):      rewrite, push
//	                                        the item's value, as under tag 0
//	P (13, priority, seq, id)               invisible priority item: the same             rewrite, push
//	P (14, expiry, token)                   receipt of one part: a count receipt          RecordCount, RecordReceipt,
//	                                        (little-endian int64), a pop receipt of       PushAll, PushSome,
//	                                        one item, "" (PushAll, PutBack, PushSome:     PutBack, SettlePop
//	                                        applied; SettlePop: a pop settled
//	                                        unapplied), or PushSome's bit set of the
//	                                        items it pushed, when it skipped some;
//	                                        expiry: unix nanoseconds (Token)
//	P (14, expiry, token, n)                pop receipt, the n-th item popped:            RecordReceipt
//	                                        packed (id, priority, (resources...),
//	                                        [visible_at, lease, attempts,] seq), the three
//	                                        when any is set (a lease's receipt), then the
//	                                        byte 0xfe and the value as it is; written
//	                                        before: the value packed after (resources...)
//	P (15, k, values...)                    unique index: packed (id), the item holding   exec (unique.go)
//	                                        values (a packed tuple of its values in the
//	                                        columns of unique key k)
//	P (16, k, bucket, values...)            a unique key's window: packed (until, id):    exec (unique.go)
//	                                        item id, which held values in key k, was
//	                                        removed, and they stay taken until until
//	                                        (unix nanoseconds); bucket: until divided
//	                                        by the key's window
//	P (17, 0, stat)                         a statistic's counter: little-endian int64,   AddStat, Push,
//	                                        kept with atomic ADD (Stat)                   pushAll, Lease, ...
//	P (17, 1, kind, level, bucket)          hidden items by due time: little-endian       tally
//	                                        int64, ADD, COMPARE_AND_CLEAR at 0 (kind
//	                                        1 leased, 2 delayed; level 0: seconds,
//	                                        1: dueLevel seconds)
//	P (17, 2, second)                       visible items by the second they became       tally
//	                                        visible: the same
//	P (17, 3)                               statistics exact since: little-endian         StartStats,
//	                                        int64, unix nanoseconds                       MigrateStats
//	P (17, 4)                               migration's cursor: packed (since, tag,       MigrateStats
//	                                        last key)
//	P (18, bucket)                          visible-at mark: "" (an item was written      markVisible
//	                                        under tag 0 with a visible_at in bucket,
//	                                        unix nanoseconds / markGrain, or one
//	                                        before it: see hidden.go)
//	P (19, dir tag, coords...)              a directory key's guard: never written,       dirGuard
//	                                        only cleared, with the directory key, by
//	                                        a pop that finds its cell or shape empty,
//	                                        and by ClearItems and Clear; read by the
//	                                        pushes that find the key (not in queues
//	                                        of legacy cells: see readDir)
//	P (20, first)                           run: packed (n, seq, nonce, priorities...):   PushAll, PushSome
//	                                        the n visible items of one push with ids     (writeRun),
//	                                        first to first+n-1, the i-th at seq+i        sweepRuns
//	                                        under one of the priorities (none in a
//	                                        FIFO queue), in place of their id index
//	                                        keys; nonce: random (see runs.go)
//
// seq orders the items of one priority (of the queue, for FIFO): a push
// takes one more than the last seq in use, read with a snapshot read, so
// pushes never conflict over it, and two pushes that pick the same seq are
// told apart by their ids. ids are positive (NewID). A cell is the vector of
// a task's resources quantised by the queue's cellGrid; a shape is the
// exact vector. FIFO queues file their tasks under priority 0 in the fit
// index. Queues without resources have no fit index (tags 3 to 6). The fit
// index itself is explained in the package doc; markers and receipts in
// receipts.go.
// Tags 15 and 16 are exec's unique keys (exec/unique.go): the queue never
// reads or writes them, and keeps them under its prefix so that Clear
// drops them with the items (see unique.go).
//
// An invisible item (leased, or pushed or released with a visible_at in
// the future; see lease.go) lives under tag 13 instead of tag 0, keeps its
// (priority, seq, id), and is filed by due time under tag 12; it has no fit
// index entries. Pops and leases read only tag 0 and the fit index, so
// their cost does not depend on how many items are invisible; each first
// moves the items due by now back to tag 0 (promote), where their (priority,
// seq, id) puts them at their original place.
//
// Invariants the code relies on:
//
//   - Packed tuple integers sort like the integers, so key order is tag
//     order, then numeric order of each element. Item keys therefore sort in
//     Min order (priority, then seq, then id), and so do the entries of one
//     cell or shape, which end with (priority, seq, id). Max order reads the
//     priorities from the highest down, each oldest first (scanOrdered, head).
//   - Items, their indexes and the count (tags below tagMarks) sort below the
//     push markers and receipts (tagMarks and above), and the invisible
//     items and their due index (tagDue, tagHidden) above the push signal:
//     ClearItems empties a queue by clearing [P (0), P (7)), [P (12),
//     P (14)) and P (19), and keeps what retries need (tags 7 to 11, and 14). It
//     keeps the unique index and windows (tags 15 and 16) too: exec clears
//     tag 15 with it, for a table that has unique keys. It keeps the
//     visible-at marks (tag 18): a mark without its item only sends a
//     ScanHidden to the full scan, until writers clear it (hidden.go).
//   - Every write of an item under tag 0 with a visible_at (rewrite,
//     pushChecked) sets a visible-at mark at or after its millisecond.
//   - A unique key's window entries sort by bucket (P (16, k, bucket)),
//     so one range clear of [P (16, k), P (16, k, b)) drops every entry
//     of key k whose until is before bucket b's start.
//   - Every item is under tag 0 (visible) or tag 13 (invisible), never
//     both; an invisible item has exactly one due index key, whose due is
//     its value's visible_at, and its id index value ends with that due.
//     The counter counts both.
//   - A push takes a seq above every item of its priority, visible or not,
//     so an invisible item comes back before later pushes of its priority.
//   - Every key extends P: Clear drops the queue by clearing P's range.
//   - A packed tuple element starts with a type code below tupleEnd, so P
//     (x...) + tupleEnd is past every key that extends P (x...): see
//     extending.
//   - A cell or shape directory key exists while the cell or shape holds an
//     entry, and may outlive its last entry: fit pops clear the keys of
//     directories they find empty (Check allows such keys).
//   - P (14, expiry, token) is a prefix of P (14, expiry, token, n): a
//     token has one receipt (exec gives each statement its own token), and
//     Receipts.Lookup reads every key under P (14, expiry, token),
//     whichever form the receipt took. Receipts sort by expiry, so one
//     range clear of [P (14), P (14, now)) drops every expired one.
//   - An item with pushed_at (stamped) is counted by the statistics
//     under tag 17 (see stats.go): a visible one under the second it
//     became visible, an invisible one under its due time and kind;
//     ClearItems clears those counts with the items, and keeps the
//     counters. An item without pushed_at (written before statistics) is
//     not counted until MigrateStats stamps it, or a rewrite does.
//   - The push signal sorts above the items (tagSignal > tagMarks), so
//     ClearItems keeps it: a DELETE is no push, and changing the signal
//     would wake every waiter for nothing. Clear removes it, which wakes
//     every waiter on a dropped queue: WatchSignal makes sure the key
//     exists before it watches it, so that its removal is a change.
const (
	tagItems        = 0
	tagIDs          = 1
	tagCount        = 2
	tagCells        = 3
	tagCellDir      = 4
	tagShapes       = 5
	tagShapeDir     = 6
	tagMarks        = 7
	tagMarkExpiry   = 8
	tagOldReceipts  = 9 // and 10: see the table
	tagSignal       = 11
	tagDue          = 12
	tagHidden       = 13
	tagReceipts     = 14
	tagUnique       = 15
	tagUniqueUntil  = 16
	tagStats        = 17
	tagMarksVisible = 18
	tagDirGuard     = 19
	tagRuns         = 20

	numTags = tagRuns + 1
)

// tupleEnd is above every tuple type code: see extending.
const tupleEnd = 0xff

// counterLen is the size of the count's and a count receipt's value, a
// little-endian int64 (FoundationDB's atomic ADD works on such values).
const counterLen = 8

// maxIntLen is the most bytes a packed int64 takes (a type code and eight
// bytes), for sizing key buffers.
const maxIntLen = 9

// Cells: a resource value below a queue's exact bound (its cellGrid) is
// a cell of its own; above, each power of two is split into
// 1<<cellBucketBits cells, so a cell spans at most 1/8 of its values.
const cellBucketBits = 3

// ExactCellsBelow is the exact bound of the cells of a queue New returns,
// and LegacyExactCellsBelow the bound of the queues of versions before
// 2026-11-27, whose values 16 to 31 share a cell by twos (and whose rows
// with such a value are filed under their shape too, a fourth key):
// WithExactCells opens such a queue.
const (
	ExactCellsBelow       = 32
	LegacyExactCellsBelow = 16
)

func appendInts(dst []byte, vs ...int64) []byte {
	for _, v := range vs {
		dst = tuple.AppendInt(dst, v)
	}
	return dst
}

// key returns P (tag, vs...).
func (q *Queue) key(tag int, vs ...int64) []byte {
	return q.appendKey(make([]byte, 0, len(q.sub[tag])+maxIntLen*len(vs)+1), tag, vs...)
}

// appendKey appends P (tag, vs...) to dst.
func (q *Queue) appendKey(dst []byte, tag int, vs ...int64) []byte {
	return appendInts(append(dst, q.sub[tag]...), vs...)
}

// prefixRange returns the range of every key under P (tag, vs...), as
// kv.PrefixRange of q.key(tag, vs...) does, with both bounds in one
// allocation: a pop or a push reads a few such ranges.
func (q *Queue) prefixRange(tag int, vs ...int64) kv.Range {
	b := q.appendKey(make([]byte, 0, 2*(len(q.sub[tag])+maxIntLen*len(vs))), tag, vs...)
	n := len(b)
	b = append(b, b...) // within the capacity: End shares Begin's array
	// kv.Strinc of the copy, in place: a tuple's first byte is a type
	// code, never 0xff, so some byte is left to increment.
	end := b[n:]
	for end[len(end)-1] == 0xff {
		end = end[:len(end)-1]
	}
	end[len(end)-1]++
	return kv.Range{Begin: b[:n:n], End: end}
}

// extending returns the range of the keys that extend prefix by tuple
// elements.
func extending(prefix []byte) kv.Range {
	return kv.Range{Begin: prefix, End: append(prefix[:len(prefix):len(prefix)], tupleEnd)}
}

// itemKey returns the key of the item at p: under tag 0, or tag 13 when p
// is invisible.
func (q *Queue) itemKey(p pos) []byte {
	return q.appendItemKey(make([]byte, 0, len(q.sub[tagItems])+4*maxIntLen), p)
}

// appendItemKey appends the key of the item at p (itemKey) to dst.
func (q *Queue) appendItemKey(dst []byte, p pos) []byte {
	tag := tagItems
	if p.due != 0 {
		tag = tagHidden
	}
	if q.kind == FIFO {
		return q.appendKey(dst, tag, p.seq, p.id)
	}
	return q.appendKey(dst, tag, p.prio, p.seq, p.id)
}

// dueKey returns the due index key of the invisible item at p.
func (q *Queue) dueKey(p pos) []byte { return q.key(tagDue, p.due, p.prio, p.seq, p.id) }

func (q *Queue) idKey(id int64) []byte { return q.key(tagIDs, id) }

// idValue is the id index's value for the item at p.
func (q *Queue) idValue(p pos) []byte { return q.appendIDValue(nil, p) }

// appendIDValue appends the id index's value for the item at p to dst.
func (q *Queue) appendIDValue(dst []byte, p pos) []byte {
	if q.kind == FIFO {
		dst = appendInts(dst, p.seq)
	} else {
		dst = appendInts(dst, p.prio, p.seq)
	}
	if p.due != 0 {
		dst = appendInts(dst, p.due)
	}
	return dst
}

// decodeIDValue returns the position that the id index's value v gives
// the item id.
func (q *Queue) decodeIDValue(id int64, v []byte) (pos, error) {
	p := pos{id: id}
	var s [3]int64
	n := 0
	for rest := v; len(rest) > 0 && n < len(s); n++ {
		x, r, err := tuple.DecodeInt(rest)
		if err != nil {
			return p, fmt.Errorf("%w: id index of item %d: %v", ErrCorrupt, id, err)
		}
		s[n], rest = x, r
		if n == len(s)-1 && len(rest) > 0 {
			return p, fmt.Errorf("%w: id index of item %d is too long", ErrCorrupt, id)
		}
	}
	switch {
	case q.kind == FIFO && n == 1:
		p.seq = s[0]
	case q.kind == FIFO && n == 2:
		p.seq, p.due = s[0], s[1]
	case q.kind == Priority && n == 2:
		p.prio, p.seq = s[0], s[1]
	case q.kind == Priority && n == 3:
		p.prio, p.seq, p.due = s[0], s[1], s[2]
	default:
		return p, fmt.Errorf("%w: id index of item %d has %d elements", ErrCorrupt, id, n)
	}
	return p, nil
}

func (q *Queue) countKey() []byte { return q.sub[tagCount] }

// entryKey returns the fit index entry of the item at p under tag
// (tagCells or tagShapes) and coords (its cell or its shape).
func (q *Queue) entryKey(tag int, coords []int64, p pos) []byte {
	return q.appendEntryKey(make([]byte, 0, len(q.sub[tag])+maxIntLen*(len(coords)+3)), tag, coords, p)
}

// appendEntryKey appends the entry key of p under tag and coords
// (entryKey) to dst.
func (q *Queue) appendEntryKey(dst []byte, tag int, coords []int64, p pos) []byte {
	return appendInts(appendInts(append(dst, q.sub[tag]...), coords...), p.prio, p.seq, p.id)
}

// decodeEntry returns the position of a fit index entry under prefix (a
// cell's or a shape's).
func decodeEntry(prefix, key []byte) (pos, error) {
	var v [3]int64
	err := decodeInts(key[len(prefix):], v[:])
	return pos{prio: v[0], seq: v[1], id: v[2]}, err
}

// decodeInts decodes n packed integers from b.
func decodeInts(b []byte, out []int64) error {
	for i := range out {
		v, rest, err := tuple.DecodeInt(b)
		if err != nil {
			return err
		}
		out[i] = v
		b = rest
	}
	if len(b) != 0 {
		return fmt.Errorf("%w: %d trailing bytes in key", ErrCorrupt, len(b))
	}
	return nil
}

// decodeItemKey returns the position of a visible item's key.
func (q *Queue) decodeItemKey(k []byte) (pos, error) {
	return q.decodeKeyUnder(tagItems, k)
}

// decodeKeyUnder returns the position of an item key under tag (tagItems
// or tagHidden); for tagHidden the position's due is left for the caller,
// which reads it from the value.
func (q *Queue) decodeKeyUnder(tag int, k []byte) (pos, error) {
	rest := k[len(q.sub[tag]):]
	if q.kind == FIFO {
		var v [2]int64
		err := decodeInts(rest, v[:])
		return pos{seq: v[0], id: v[1]}, err
	}
	var v [3]int64
	err := decodeInts(rest, v[:])
	return pos{prio: v[0], seq: v[1], id: v[2]}, err
}

// encodeValue encodes an item's record: its resources and its pushed_at,
// or, when any of them is set, its visible_at, lease, attempts, pushed_at
// and held, packed as tuple integers; then valueRaw and the item's value,
// its bytes as they are, to the record's end. An item without a pushed_at
// (a row from before statistics, see stats.go) has its visible_at, lease
// and attempts when any is set, or no integer after its resources.
//
// Records written before put the value, as a packed byte string, right
// after the resources (decodeItemUnder reads both): each 0x00 of it took
// two bytes, and exec's rows, packed tuples, escape theirs already, so a
// zero byte of a BLOB column took three, and packing and unpacking the
// value once more was a copy of every row and an escape of every zero
// (an all-zero 64-byte payload made an 86-byte record 211).
func encodeValue(it Item) []byte { return appendValue(nil, it) }

// valueRaw marks the start of an item record's value (encodeValue): a byte
// no packed tuple element starts with (0xfe is no type code). A record
// written before has the value as a packed byte string (codeBytes) there.
const (
	valueRaw  = 0xfe
	codeBytes = 0x01
)

// MaxRecordSize returns the most bytes the record of an item with value
// and n resources takes in the store, whether leased or not (its
// resources, the lease fields (visible_at, lease, attempts) a lease adds,
// its pushed_at and held, and its value), or a part of a pop's receipt of
// it (RecordReceipt: its id, priority, resources, lease fields and seq,
// and its value). Both are values of the store, so this must stay within
// kv.MaxValueSize for the item to be pushed, leased, moved and popped.
func MaxRecordSize(value []byte, n int) int {
	return maxIntLen*(n+7) + 3 + len(value)
}

// appendValue appends the item record's value of it (encodeValue) to dst.
func appendValue(dst []byte, it Item) []byte {
	// Sized for the lease fields, the buffer grows at most once.
	size := MaxRecordSize(it.Value, len(it.Resources))
	b := appendInts(slices.Grow(dst, size), it.Resources...)
	vis := nanos(it.VisibleAt)
	meta := vis != 0 || it.Lease != 0 || it.Attempts != 0
	switch {
	case it.PushedAt.IsZero():
		if meta {
			b = appendInts(b, vis, it.Lease, it.Attempts)
		}
	case meta || it.Held:
		held := int64(0)
		if it.Held {
			held = 1
		}
		b = appendInts(b, vis, it.Lease, it.Attempts, pushedSeconds(it.PushedAt), held)
	default:
		b = appendInts(b, pushedSeconds(it.PushedAt))
	}
	return append(append(b, valueRaw), it.Value...)
}

// pushedSeconds returns t (not the zero time) in unix seconds, at least
// 1: an item's pushed_at, kept to the second (5 bytes packed), as the
// statistics count it.
func pushedSeconds(t time.Time) int64 { return max(t.Unix(), 1) }

// stampTime returns t as an item's pushed_at keeps it: to the second.
func stampTime(t time.Time) time.Time { return time.Unix(pushedSeconds(t), 0) }

// MaxVisibleAt is the latest time an item can become visible, and so the
// latest a delay, a lease or an extension can end: a visible_at is kept
// as int64 unix nanoseconds, 0 for the zero time (visible at once).
var MaxVisibleAt = time.Unix(0, math.MaxInt64).UTC()

// VisibleAtRange says which times an item's visible_at can be, for errors.
const VisibleAtRange = "the zero time (visible at once) or a time from 1970-01-01T00:00:00.000000001Z to 2262-04-11T23:47:16.854775807Z"

// ValidVisibleAt reports whether t can be an item's visible_at: the zero
// time, or a time nanos holds as a positive number.
func ValidVisibleAt(t time.Time) bool {
	return t.IsZero() || t.After(time.Unix(0, 0)) && !t.After(MaxVisibleAt)
}

// nanos returns t in unix nanoseconds, 0 for the zero time.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// fromNanos is the inverse of nanos.
func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// decodeItem decodes a visible item.
func (q *Queue) decodeItem(k, v []byte) (Item, pos, error) {
	return q.decodeItemUnder(tagItems, k, v)
}

// decodeItemUnder decodes an item under tag (tagItems or tagHidden); the
// position of a hidden item gets its due from the value.
func (q *Queue) decodeItemUnder(tag int, k, v []byte) (Item, pos, error) {
	p, err := q.decodeKeyUnder(tag, k)
	if err != nil {
		return Item{}, p, err
	}
	it := Item{ID: p.id, Priority: p.prio, Seq: p.seq}
	malformed := func() (Item, pos, error) {
		return Item{}, p, fmt.Errorf("%w: item %d has a malformed value", ErrCorrupt, p.id)
	}
	if len(q.resources) > 0 {
		it.Resources = make([]int64, len(q.resources))
		for i := range it.Resources {
			if it.Resources[i], v, err = tuple.DecodeInt(v); err != nil {
				return Item{}, p, fmt.Errorf("%w: item %d has a malformed resource", ErrCorrupt, p.id)
			}
		}
	}
	// The value: a packed byte string right after the resources (records
	// written before), or the record's rest after valueRaw, after the
	// integers.
	old := len(v) > 0 && v[0] == codeBytes
	if old {
		if it.Value, v, err = tuple.DecodeBytes(v); err != nil {
			return malformed()
		}
	}
	var meta [5]int64
	n := 0
	for len(v) > 0 && (old || v[0] != valueRaw) {
		if n == len(meta) {
			return malformed()
		}
		if meta[n], v, err = tuple.DecodeInt(v); err != nil {
			return Item{}, p, fmt.Errorf("%w: item %d has a malformed lease", ErrCorrupt, p.id)
		}
		n++
	}
	if !old {
		if len(v) == 0 {
			return malformed()
		}
		it.Value = bytes.Clone(v[1:])
	}
	if n == 2 || n == 4 {
		return malformed()
	}
	if n > 0 {
		ms := meta[:n]
		switch len(ms) {
		case 1:
			it.PushedAt = time.Unix(ms[0], 0)
		case 5:
			it.PushedAt, it.Held = time.Unix(ms[3], 0), ms[4] != 0
			fallthrough
		default:
			it.VisibleAt, it.Lease, it.Attempts = fromNanos(ms[0]), ms[1], ms[2]
		}
	}
	if tag == tagHidden {
		p.due = nanos(it.VisibleAt)
		if p.due == 0 {
			return Item{}, p, fmt.Errorf("%w: invisible item %d has no visible_at", ErrCorrupt, p.id)
		}
	}
	return it, p, nil
}

// decodeResources decodes an item value's leading resources into res
// without allocating.
func decodeResources(value []byte, res []int64, id int64) error {
	for i := range res {
		v, rest, err := tuple.DecodeInt(value)
		if err != nil {
			return fmt.Errorf("%w: item %d has a malformed resource", ErrCorrupt, id)
		}
		res[i], value = v, rest
	}
	return nil
}

// cellGrid is how a queue's fit index quantises resource values into
// cells: a value below the grid's exact bound (a power of two, at least
// 1<<(cellBucketBits+1), so that the cells above it are aligned) is a cell
// of its own. The bound is part of a queue's layout: cells computed with
// another bound than the one its rows were filed with would miss their
// entries, or offer rows that do not fit.
type cellGrid int64

// of quantises a resource value. It returns the cell's lower bound, which
// names it.
func (g cellGrid) of(v int64) int64 {
	if v < int64(g) {
		return v
	}
	shift := bits.Len64(uint64(v)) - (cellBucketBits + 1)
	return v >> shift << shift
}

// high returns the largest value in the cell whose lower bound is lo.
func (g cellGrid) high(lo int64) int64 {
	if lo < int64(g) {
		return lo
	}
	shift := bits.Len64(uint64(lo)) - (cellBucketBits + 1)
	return lo + (1<<shift - 1)
}

// exact reports whether res's cell holds res's shape only: every value
// is its own cell. Such a cell is never straddled by limits, so the shape
// index never files it (see indexAdd).
func (g cellGrid) exact(res []int64) bool {
	for _, v := range res {
		if v >= int64(g) {
			return false
		}
	}
	return true
}

func (g cellGrid) cellsOf(res []int64) []int64 {
	return g.appendCells(make([]int64, 0, len(res)), res)
}

// appendCells appends the cell of each of res to dst (cellsOf).
func (g cellGrid) appendCells(dst, res []int64) []int64 {
	for _, v := range res {
		dst = append(dst, g.of(v))
	}
	return dst
}
