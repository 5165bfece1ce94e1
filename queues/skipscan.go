package queues

import (
	"bytes"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// skipScan calls fn for every key base+(v_1, ..., v_d) with mins[i] <= v_i <=
// maxs[i], reading one small range per distinct prefix instead of every key.
func skipScan(tr kv.ReadTransaction, base []byte, mins, maxs []int64, fn func([]int64) error) error {
	cur := make([]int64, 0, len(mins))
	return skipScanDim(tr, base, 0, mins, maxs, cur, fn)
}

func skipScanDim(tr kv.ReadTransaction, base []byte, dim int, mins, maxs, cur []int64, fn func([]int64) error) error {
	if mins[dim] > maxs[dim] {
		return nil
	}
	from := tuple.AppendInt(bytes.Clone(base), mins[dim])
	upTo := tuple.AppendInt(bytes.Clone(base), maxs[dim])
	if dim == len(mins)-1 {
		it := tr.GetRange(kv.Range{Begin: from, End: kv.KeyAfter(upTo)}, kv.RangeOptions{})
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
	end := extending(upTo).End
	for {
		e, ok, err := kv.First(tr, kv.Range{Begin: from, End: end}, false)
		if err != nil || !ok {
			return err
		}
		v, _, err := tuple.DecodeInt(e.Key[len(base):])
		if err != nil {
			return err
		}
		next := tuple.AppendInt(bytes.Clone(base), v)
		if err := skipScanDim(tr, next, dim+1, mins, maxs, append(cur, v), fn); err != nil {
			return err
		}
		from = extending(next).End
	}
}

// dirAhead is a directory read in one round ahead of the skip-scan that
// lists what it holds within mins..maxs (skipScan), through the snapshot.
// The skip-scan's reads are then answered from what it read where they
// can be, the others made as before, through the pick's directory reads;
// and the pick records what the reads answered covered: the conflicts are
// the skip-scan's, not those of what was read ahead.
type dirAhead struct {
	base       []byte
	mins, maxs []int64
	reads      []aheadRead
	learn      func([]int64) // see readDirAhead
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
	d := &dirAhead{base: base, mins: mins, maxs: maxs, learn: learn}
	if mins[0] > maxs[0] {
		return d
	}
	from := tuple.AppendInt(bytes.Clone(base), mins[0])
	upTo := tuple.AppendInt(bytes.Clone(base), maxs[0])
	switch {
	case len(mins) == 1:
		d.read(snap, kv.Range{Begin: from, End: kv.KeyAfter(upTo)}, 0)
	case len(mins) == 2 && len(firsts) > 0:
		end := extending(upTo).End
		for _, v := range firsts {
			if v < mins[0] || v > maxs[0] {
				continue
			}
			d.read(snap, kv.Range{Begin: from, End: end}, 1)
			vb := tuple.AppendInt(bytes.Clone(base), v)
			if mins[1] <= maxs[1] { // (else the skip-scan reads no second coordinates)
				d.read(snap, kv.Range{Begin: tuple.AppendInt(bytes.Clone(vb), mins[1]), End: kv.KeyAfter(tuple.AppendInt(vb, maxs[1]))}, 0)
			}
			from = extending(vb).End
		}
		if bytes.Compare(from, end) < 0 {
			d.read(snap, kv.Range{Begin: from, End: end}, 1)
		}
	default:
		d.read(snap, kv.Range{Begin: from, End: extending(upTo).End}, maxDirAhead)
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
	d := &dirAhead{base: base, mins: lo, maxs: hi}
	prefix := base
	for dim := range lo {
		if lo[dim] > hi[dim] {
			break
		}
		from := tuple.AppendInt(bytes.Clone(prefix), lo[dim])
		upTo := tuple.AppendInt(bytes.Clone(prefix), hi[dim])
		if dim == len(lo)-1 {
			d.read(snap, kv.Range{Begin: from, End: kv.KeyAfter(upTo)}, 0)
			break
		}
		d.read(snap, kv.Range{Begin: from, End: extending(upTo).End}, 1)
		prefix = from
	}
	return d
}

// read issues one of d's reads.
func (d *dirAhead) read(snap kv.ReadTransaction, r kv.Range, limit int) {
	d.reads = append(d.reads, aheadRead{r: r, limit: limit,
		f: kv.GetRangeAsync(snap, r, kv.RangeOptions{Limit: limit, Mode: kv.StreamingModeWantAll})})
}

// scan waits for d's reads and runs the skip-scan for pk, calling fn as
// skipScan does; fn must not read.
func (d *dirAhead) scan(pk *pick, fn func([]int64) error) error {
	if len(d.reads) == 0 {
		return nil // no coordinate fits
	}
	x := &knownReader{rd: pk.dirs(), dirs: true, ks: make([]known, 0, len(d.reads))}
	for _, a := range d.reads {
		rows, err := a.f.Get()
		if err != nil {
			return err
		}
		x.ks = append(x.ks, newKnown(a.r, a.limit, rows))
	}
	if err := skipScan(x, d.base, d.mins, d.maxs, fn); err != nil {
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
