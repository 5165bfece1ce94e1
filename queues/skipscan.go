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
