package queues

import (
	"bytes"
	"context"
	"slices"
	"sync"

	"github.com/fdbqueue/fdbqueue/kv"
)

// Reads answered from what a round read ahead. A search that reads the
// fit index in rounds (fitindex.go, fitstraddle.go, fitmany.go, and the
// directories' skip-scans, skipscan.go) reads some ranges before the
// reads that use them, through the transaction's snapshot: a directory
// whole, where a skip-scan then reads one piece at a time, or the first
// entries of a cell, which a scan then reads only as far as it needs. A
// knownReader answers the reads inside such a range from its rows, exactly
// as the same reads through the pick's reader would have, and records what
// they covered and returned, for the pick to add as its read conflicts
// (pick.record): reading ahead costs a request, never a conflict. The
// reads it cannot answer go to the pick's reader. A search reads ahead
// only where reads wait (pick.readsAhead): on an engine that answers a
// read when it is issued, the reads that would be answered here read
// themselves, through the pick's reader.

// known is a range read ahead: the rows of r in key order, all of them, or
// the first ones when a limit cut the read short.
type known struct {
	r    kv.Range
	rows []kv.KeyValue
	// upTo is where what is known of r ends: r.End, or just past the last
	// row when a limit cut the read short.
	upTo []byte
}

// newKnown returns what a read of r with a row limit (0: none) that
// returned rows knows.
func newKnown(r kv.Range, limit int, rows []kv.KeyValue) known {
	k := known{r: r, rows: rows, upTo: r.End}
	if limit > 0 && len(rows) == limit {
		k.upTo = kv.KeyAfter(rows[len(rows)-1].Key)
	}
	return k
}

// complete reports whether every row of r is known.
func (k *known) complete() bool { return bytes.Equal(k.upTo, k.r.End) }

// from returns the index of the first known row at or after key.
func (k *known) from(key []byte) int {
	i, _ := slices.BinarySearchFunc(k.rows, key, func(e kv.KeyValue, key []byte) int { return bytes.Compare(e.Key, key) })
	return i
}

// knownReader answers reads from ranges read ahead (ks) and from a
// one-row read made already through rd (one, of oneRange, in reverse:
// its conflicts are rd's), and passes the others on to rd. covered and
// seen are what the reads it answered from ks covered and returned.
type knownReader struct {
	rd       kv.ReadTransaction
	ks       []known
	one      *oneRow
	oneRange kv.Range
	covered  []kv.Range
	seen     [][]byte
	its      []*knownIter
	// dirs: the reads are a directory's, which record no seen keys (see
	// pick.record), and found the keys its Firsts found, answered or
	// passed on.
	dirs  bool
	found [][]byte
	iters []knownIter // where GetRange's iterators are carved from
}

// knownReaders holds the readers not in use, with the memory of their
// slices: a search reads the directory and each straddling cell through
// one, and would otherwise allocate about as many bytes as they hold.
var knownReaders = sync.Pool{New: func() any { return new(knownReader) }}

// newKnownReader returns a reader through rd (dirs: a directory's), with
// nothing known yet; release gives it back once what it recorded is
// recorded (pick.record) and nothing reads through it or its iterators.
func newKnownReader(rd kv.ReadTransaction, dirs bool) *knownReader {
	x := knownReaders.Get().(*knownReader)
	x.rd, x.dirs = rd, dirs
	return x
}

// release gives x back for the next reader, dropping what it refers to
// (what record handed on, it dropped already).
func (x *knownReader) release() {
	clear(x.ks)
	clear(x.covered)
	clear(x.seen)
	clear(x.its)
	clear(x.found)
	clear(x.iters)
	*x = knownReader{ks: x.ks[:0], covered: x.covered[:0], seen: x.seen[:0], its: x.its[:0], found: x.found[:0], iters: x.iters[:0]}
	knownReaders.Put(x)
}

// first reports whether k answers a one-row read of [begin, end) in the
// given direction (it holds every row the read passes over up to the one
// it returns), and which row that is (i, ok).
func (k *known) first(begin, end []byte, reverse bool) (i int, ok, answers bool) {
	if bytes.Compare(begin, k.r.Begin) < 0 || bytes.Compare(begin, k.upTo) > 0 {
		return 0, false, false
	}
	if reverse {
		if bytes.Compare(end, k.upTo) > 0 {
			return 0, false, false
		}
		i = k.from(end) - 1
		return i, i >= 0 && bytes.Compare(k.rows[i].Key, begin) >= 0, true
	}
	i = k.from(begin)
	if i < len(k.rows) && bytes.Compare(k.rows[i].Key, end) < 0 {
		return i, true, true
	}
	return 0, false, bytes.Compare(end, k.upTo) <= 0
}

// First is kv.First: from a one-row read made already, or from what is
// known, or through rd.
func (x *knownReader) First(r kv.Range, reverse bool) (kv.KeyValue, bool, error) {
	if bytes.Equal(r.Begin, r.End) {
		return kv.KeyValue{}, false, nil // an empty range: nothing to read, nothing covered
	}
	if x.one != nil && reverse && bytes.Equal(x.oneRange.Begin, r.Begin) && bytes.Equal(x.oneRange.End, r.End) {
		return x.one.get()
	}
	for i := range x.ks {
		k := &x.ks[i]
		j, ok, answers := k.first(r.Begin, r.End, reverse)
		if !answers {
			continue
		}
		var e kv.KeyValue
		if ok {
			e = k.rows[j]
			x.saw(e.Key)
		}
		x.covered = append(x.covered, covered(r, reverse, e, ok))
		return e, ok, nil
	}
	e, ok, err := kv.First(x.rd, r, reverse)
	if ok && x.dirs {
		x.found = append(x.found, e.Key)
	}
	return e, ok, err
}

// saw records a key an answer returned: found by a First of a directory's,
// seen by the pick's other reads.
func (x *knownReader) saw(key []byte) {
	if x.dirs {
		x.found = append(x.found, key)
	} else {
		x.seen = append(x.seen, key)
	}
}

// GetRange answers a forward read without a limit that starts in a known
// range: its rows, then, past them, the rest of the range through rd.
// Other reads go to rd.
func (x *knownReader) GetRange(r kv.Range, opts kv.RangeOptions) kv.Iterator {
	if opts.Limit != 0 || opts.Reverse {
		return x.rd.GetRange(r, opts)
	}
	var best *known // the known range that holds r.Begin and goes on furthest
	for i := range x.ks {
		k := &x.ks[i]
		if bytes.Compare(r.Begin, k.r.Begin) >= 0 && bytes.Compare(r.Begin, k.upTo) < 0 &&
			(best == nil || bytes.Compare(k.upTo, best.upTo) > 0) {
			best = k
		}
	}
	if best == nil {
		return x.rd.GetRange(r, opts)
	}
	it := &bump(&x.iters, 1)[0]
	*it = knownIter{x: x, k: best, r: r, opts: opts, i: best.from(r.Begin)}
	x.its = append(x.its, it)
	return it
}

func (x *knownReader) Get(key []byte) ([]byte, error) { return x.rd.Get(key) }
func (x *knownReader) GetReadVersion() (int64, error) { return x.rd.GetReadVersion() }
func (x *knownReader) Snapshot() kv.ReadTransaction   { return x.rd.Snapshot() }
func (x *knownReader) WriteConflictRanges() kv.WriteConflictRangeSupport {
	return kv.WriteConflictRangesOf(x.rd)
}
func (x *knownReader) Context() context.Context { return x.rd.Context() }

// ranges returns what the reads answered from what is known covered.
func (x *knownReader) ranges() []kv.Range {
	for _, it := range x.its {
		if r, ok := it.covered(); ok {
			x.covered = append(x.covered, r)
		}
	}
	x.its = x.its[:0]
	return x.covered
}

// knownIter is a range read of a knownReader: the known rows of r, and of
// the known ranges that go on from where they end, then, if r goes on past
// them, a read of the rest through rd.
type knownIter struct {
	x    *knownReader
	k    *known
	r    kv.Range
	opts kv.RangeOptions
	i    int // the next known row
	cur  kv.KeyValue
	last []byte      // the last known row returned, if any
	end  bool        // read to r's end within what is known
	rest kv.Iterator // the read past what is known
}

func (it *knownIter) Next() bool {
	if it.rest != nil {
		if !it.rest.Next() {
			return false
		}
		it.cur = it.rest.KeyValue()
		return true
	}
	if it.end {
		return false
	}
	if it.i < len(it.k.rows) && bytes.Compare(it.k.rows[it.i].Key, it.r.End) < 0 {
		it.cur = it.k.rows[it.i]
		it.i++
		it.last = it.cur.Key
		if !it.x.dirs {
			it.x.seen = append(it.x.seen, it.cur.Key)
		}
		return true
	}
	if bytes.Compare(it.r.End, it.k.upTo) <= 0 {
		it.end = true
		return false
	}
	for i := range it.x.ks {
		if k := &it.x.ks[i]; bytes.Equal(k.r.Begin, it.k.upTo) {
			it.k, it.i = k, 0 // read ahead too: the rest of the range
			return it.Next()
		}
	}
	it.rest = it.x.rd.GetRange(kv.Range{Begin: it.k.upTo, End: it.r.End}, it.opts)
	return it.Next()
}

func (it *knownIter) KeyValue() kv.KeyValue { return it.cur }

func (it *knownIter) Err() error {
	if it.rest != nil {
		return it.rest.Err()
	}
	return nil
}

// covered returns what the part of the read answered from what is known
// covered, if anything: all of it once read past, or to r's end.
func (it *knownIter) covered() (kv.Range, bool) {
	switch {
	case it.rest != nil:
		return kv.Range{Begin: it.r.Begin, End: it.k.upTo}, true
	case it.end:
		return it.r, true
	case it.last == nil:
		return kv.Range{}, false
	}
	return kv.Range{Begin: it.r.Begin, End: kv.KeyAfter(it.last)}, true
}

// record adds what the reads x answered from what was read ahead covered
// and returned, as the pick's reader (or, for dirs, its directory reads)
// would have: as read conflicts, or, through a conflictReader, as its
// records. x starts over.
func (pk *pick) record(x *knownReader, dirs bool) error {
	rs := x.ranges()
	switch {
	case !dirs && pk.cr != nil:
		pk.cr.done = append(pk.cr.done, rs...)
		pk.cr.seen = append(pk.cr.seen, x.seen...)
	case pk.tr != nil:
		for _, r := range mergeRanges(rs) {
			if err := pk.tr.AddReadConflictRange(r); err != nil {
				return err
			}
		}
	}
	// (Without a transaction the reads are a peek's in a read-only
	// transaction, which never commits: it has no conflicts to add.)
	clear(x.covered)
	clear(x.seen)
	x.covered, x.seen = x.covered[:0], x.seen[:0]
	return nil
}

// recordRange records, as record does, a range read of r with opts that
// returned rows, made ahead through the snapshot for a read the pick's
// reader would have made.
func (pk *pick) recordRange(r kv.Range, opts kv.RangeOptions, rows []kv.KeyValue) error {
	switch {
	case pk.cr != nil:
		pk.cr.recordRange(r, opts, rows)
	case pk.tr != nil:
		return pk.tr.AddReadConflictRange(rangeCovered(r, opts, rows))
	}
	return nil
}

// mergeRanges sorts rs and merges the ranges that overlap or touch, in
// place.
func mergeRanges(rs []kv.Range) []kv.Range {
	slices.SortFunc(rs, func(x, y kv.Range) int { return bytes.Compare(x.Begin, y.Begin) })
	merged := rs[:0]
	for _, r := range rs {
		if n := len(merged); n > 0 && bytes.Compare(r.Begin, merged[n-1].End) <= 0 {
			if bytes.Compare(r.End, merged[n-1].End) > 0 {
				merged[n-1].End = r.End
			}
			continue
		}
		merged = append(merged, r)
	}
	return merged
}
