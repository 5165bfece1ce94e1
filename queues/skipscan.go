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
// lists what it holds within mins..maxs (skipScan): one range read, through
// the snapshot, of every key whose first coordinate is within
// mins[0]..maxs[0], the range of the skip-scan's first read. The
// skip-scan's reads are then answered from it, and the pick records what
// they covered as directory reads (pick.record): the conflicts are the
// skip-scan's, not the whole range's.
type dirAhead struct {
	base       []byte
	mins, maxs []int64
	r          kv.Range
	f          kv.FutureRange // nil: no coordinate fits
}

// readDirAhead issues the read of the directory under base for a
// skip-scan within mins..maxs, through snap.
func readDirAhead(snap kv.ReadTransaction, base []byte, mins, maxs []int64) *dirAhead {
	d := &dirAhead{base: base, mins: mins, maxs: maxs}
	if mins[0] <= maxs[0] {
		d.r = kv.Range{Begin: tuple.AppendInt(bytes.Clone(base), mins[0]), End: extending(tuple.AppendInt(bytes.Clone(base), maxs[0])).End}
		d.f = kv.GetRangeAsync(snap, d.r, kv.RangeOptions{Mode: kv.StreamingModeWantAll})
	}
	return d
}

// scan waits for the read and runs the skip-scan over it for pk, calling
// fn as skipScan does; fn must not read.
func (d *dirAhead) scan(pk *pick, fn func([]int64) error) error {
	if d.f == nil {
		return nil
	}
	rows, err := d.f.Get()
	if err != nil {
		return err
	}
	x := &knownReader{rd: pk.dirs(), ks: []known{{r: d.r, rows: rows, upTo: d.r.End}}}
	if err := skipScan(x, d.base, d.mins, d.maxs, fn); err != nil {
		return err
	}
	return pk.record(x, true)
}
