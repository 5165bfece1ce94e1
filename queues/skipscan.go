package queues

import (
	"bytes"
	"sync"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// skipScan calls fn for every key base+(v_1, ..., v_d) with mins[i] <= v_i <=
// maxs[i], reading one small range per distinct prefix instead of every key.
// The bounds of its reads are carved out of *keys (appendTo), where they
// stay until the caller is done with what the reads recorded: a
// worst-case fit pop allocated a dozen keys a pop here.
func skipScan(tr kv.ReadTransaction, keys *[]byte, base []byte, mins, maxs []int64, fn func([]int64) error) error {
	cur := make([]int64, 0, len(mins))
	return skipScanDim(tr, keys, base, 0, mins, maxs, cur, fn)
}

func skipScanDim(tr kv.ReadTransaction, keys *[]byte, base []byte, dim int, mins, maxs, cur []int64, fn func([]int64) error) error {
	if mins[dim] > maxs[dim] {
		return nil
	}
	from := carveKey(keys, base, mins[dim])
	if dim == len(mins)-1 {
		// Up to the key after base+maxs[dim].
		it := tr.GetRange(kv.Range{Begin: from, End: carveKey(keys, base, maxs[dim], 0)}, kv.RangeOptions{})
		for it.Next() {
			v, _, err := tuple.DecodeInt(it.KeyValue().Key[len(base):])
			if err != nil {
				return err
			}
			if err := fn(append(cur, v)); err != nil {
				return err
			}
		}
		return it.Err()
	}
	end := carveKey(keys, base, maxs[dim], tupleEnd) // past base+maxs[dim]'s keys (extending)
	for {
		e, ok, err := kv.First(tr, kv.Range{Begin: from, End: end}, false)
		if err != nil || !ok {
			return err
		}
		v, _, err := tuple.DecodeInt(e.Key[len(base):])
		if err != nil {
			return err
		}
		if err := skipScanDim(tr, keys, carveKey(keys, base, v), dim+1, mins, maxs, append(cur, v), fn); err != nil {
			return err
		}
		if v == maxs[dim] {
			return nil // the next read's range is empty: it covers nothing
		}
		from = carveKey(keys, base, v, tupleEnd)
	}
}

// carveKey returns prefix with v appended, then end if given, carved out
// of *keys (appendTo).
func carveKey(keys *[]byte, prefix []byte, v int64, end ...byte) []byte {
	return appendTo(keys, len(prefix)+maxIntLen+len(end), func(b []byte) []byte {
		return append(tuple.AppendInt(append(b, prefix...), v), end...)
	})
}

// dirAhead is a directory read in one round ahead of the skip-scan that
// lists what it holds within mins..maxs (skipScan), through the snapshot.
// The skip-scan's reads are then answered from what it read where they
// can be, the others made as before, through the pick's directory reads;
// and the pick records what the reads answered covered: the conflicts are
// the skip-scan's, not those of what was read ahead. A dirAhead that read
// nothing ahead (a pick that does not read ahead, or nothing fits) has the
// skip-scan make every read itself.
type dirAhead struct {
	base       []byte
	mins, maxs []int64
	reads      []aheadRead
	learn      func([]int64) // see readDirAhead
	// cellDir: d is the cell directory's, which an attempt of several
	// pops reads whole once (Attempt.dirKnown).
	cellDir bool
	keys    []byte // the reads' bounds, one after another (key)
}

// dirAheads holds the dirAheads not in use, with their memory: the reads'
// array and bounds, which a fit pop would otherwise allocate anew.
var dirAheads = sync.Pool{New: func() any { return new(dirAhead) }}

func newDirAhead(base []byte, mins, maxs []int64, learn func([]int64)) *dirAhead {
	d := dirAheads.Get().(*dirAhead)
	d.base, d.mins, d.maxs, d.learn = base, mins, maxs, learn
	return d
}

// release gives d back for the next directory read, once every read of
// d's was waited for: an engine may hold a read's bounds until then.
func (d *dirAhead) release() {
	clear(d.reads)
	*d = dirAhead{reads: d.reads[:0], keys: d.keys[:0]}
	dirAheads.Put(d)
}

// key returns prefix with v appended, then end if given, in d's memory.
func (d *dirAhead) key(prefix []byte, v int64, end ...byte) []byte {
	return carveKey(&d.keys, prefix, v, end...)
}

// aheadRead is one range read of a dirAhead, with a row limit (0: none).
type aheadRead struct {
	r     kv.Range
	limit int
	f     kv.FutureRange
}

// maxDirAhead is the most keys readDirAhead reads in one range.
const maxDirAhead = 1024

// readDirAhead issues, through snap, the reads of the directory under base
// that a skip-scan within mins..maxs makes, where it can tell them
// beforehand:
//
//   - with one coordinate, the skip-scan's one range read;
//   - with two, given firsts (sorted), the first coordinates the directory
//     held when last read: for each, the read that finds it (the first key
//     after the one before) and the read of its range of second
//     coordinates. Where the directory holds other first coordinates now,
//     the skip-scan reads them itself;
//   - otherwise, one range read of every key whose first coordinate is
//     within mins[0]..maxs[0] (the range of the skip-scan's first read),
//     up to maxDirAhead keys.
//
// learn, if set, is given the first coordinates the skip-scan found.
func readDirAhead(snap kv.ReadTransaction, base []byte, mins, maxs, firsts []int64, learn func([]int64)) *dirAhead {
	d := newDirAhead(base, mins, maxs, learn)
	if mins[0] > maxs[0] {
		return d
	}
	// The bounds are the skip-scan's: a coordinate's first key, the key
	// after a coordinate's keys (a tupleEnd byte past the coordinate), the
	// key after one key (a 0 byte past it).
	from := d.key(base, mins[0])
	switch {
	case len(mins) == 1:
		d.read(snap, kv.Range{Begin: from, End: d.key(base, maxs[0], 0)}, 0)
	case len(mins) == 2 && len(firsts) > 0:
		end := d.key(base, maxs[0], tupleEnd)
		for _, v := range firsts {
			if v < mins[0] || v > maxs[0] {
				continue
			}
			d.read(snap, kv.Range{Begin: from, End: end}, 1)
			if mins[1] <= maxs[1] { // (else the skip-scan reads no second coordinates)
				vb := d.key(base, v)
				d.read(snap, kv.Range{Begin: d.key(vb, mins[1]), End: d.key(vb, maxs[1], 0)}, 0)
			}
			from = d.key(base, v, tupleEnd)
		}
		if bytes.Compare(from, end) < 0 {
			d.read(snap, kv.Range{Begin: from, End: end}, 1)
		}
	default:
		d.read(snap, kv.Range{Begin: from, End: d.key(base, maxs[0], tupleEnd)}, maxDirAhead)
	}
	return d
}

// readBoxAhead issues, through snap, the reads a skip-scan of the
// directory under base within the small box lo..hi (the shapes of one
// cell) starts with, along the box's lowest corner: the first key of each
// coordinate's range, and the last coordinate's range. A box whose
// coordinates but the last are single values is then read whole, in one
// round. (The shape directory has a key for each resource vector in use:
// too many to read a coordinate's whole range.)
func readBoxAhead(snap kv.ReadTransaction, base []byte, lo, hi []int64) *dirAhead {
	d := newDirAhead(base, lo, hi, nil)
	prefix := base
	for dim := range lo {
		if lo[dim] > hi[dim] {
			break
		}
		from := d.key(prefix, lo[dim])
		if dim == len(lo)-1 {
			d.read(snap, kv.Range{Begin: from, End: d.key(prefix, hi[dim], 0)}, 0)
			break
		}
		d.read(snap, kv.Range{Begin: from, End: d.key(prefix, hi[dim], tupleEnd)}, 1)
		prefix = from
	}
	return d
}

// readBox is readBoxAhead of the directory under base for pk, if it
// reads ahead.
func readBox(pk *pick, base []byte, lo, hi []int64) *dirAhead {
	if !pk.readsAhead() {
		return newDirAhead(base, lo, hi, nil)
	}
	return readBoxAhead(pk.snapshot(), base, lo, hi)
}

// read issues one of d's reads.
func (d *dirAhead) read(snap kv.ReadTransaction, r kv.Range, limit int) {
	d.reads = append(d.reads, aheadRead{r: r, limit: limit,
		f: kv.GetRangeAsync(snap, r, kv.RangeOptions{Limit: limit, Mode: kv.StreamingModeWantAll})})
}

// scan waits for d's reads and runs the skip-scan for pk, calling fn as
// skipScan does; fn must not read.
func (d *dirAhead) scan(pk *pick, fn func([]int64) error) error {
	x := newKnownReader(pk.dirs(), true)
	defer x.release()
	pk.cells = nil
	if d.cellDir && len(d.reads) == 0 && pk.a != nil {
		// An attempt of several pops reads the directory once for all
		// of them.
		k, err := pk.a.dirKnown(d.base)
		if err != nil {
			return err
		}
		if k != nil {
			x.ks = append(x.ks, *k)
			if dc := pk.a.dir.cells(d.base, len(d.mins)); dc != nil && d.learn == nil {
				defer d.release()
				pk.cells = dc
				if err := cellsScan(x, dc, d.base, d.mins, d.maxs, fn); err != nil {
					return err
				}
				return pk.record(x, true)
			}
		}
	}
	for _, a := range d.reads {
		rows, err := a.f.Get()
		if err != nil {
			return err
		}
		x.ks = append(x.ks, newKnown(a.r, a.limit, rows))
	}
	// Every read is in: d is given back once the skip-scan no longer
	// needs it.
	defer d.release()
	if err := skipScan(x, &d.keys, d.base, d.mins, d.maxs, fn); err != nil {
		return err
	}
	if d.learn != nil {
		// The skip-scan's reads that found a key found each first
		// coordinate (and, deeper, more of them).
		var firsts []int64
		for _, k := range x.found {
			if v, _, err := tuple.DecodeInt(k[len(d.base):]); err == nil && (len(firsts) == 0 || v != firsts[len(firsts)-1]) {
				firsts = append(firsts, v)
			}
		}
		d.learn(firsts)
	}
	return pk.record(x, true)
}
