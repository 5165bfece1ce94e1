package queues

import (
	"fmt"
	"math/bits"

	"github.com/fdbqueue/fdbqueue/tuple"
)

// Key-space tags under a queue's prefix; see the package doc.
const (
	tagItems    = 0
	tagIDs      = 1
	tagCount    = 2
	tagCells    = 3
	tagCellDir  = 4
	tagShapes   = 5
	tagShapeDir = 6
)

func appendInts(dst []byte, vs ...int64) []byte {
	for _, v := range vs {
		dst = tuple.AppendInt(dst, v)
	}
	return dst
}

func (q *Queue) key(tag int, vs ...int64) []byte {
	return appendInts(append(make([]byte, 0, len(q.sub[tag])+9*len(vs)+1), q.sub[tag]...), vs...)
}

func (q *Queue) itemKey(p pos) []byte {
	if q.kind == FIFO {
		return q.key(tagItems, p.seq, p.id)
	}
	return q.key(tagItems, p.prio, p.seq, p.id)
}

func (q *Queue) countKey() []byte { return q.sub[tagCount] }

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

// decodeItemKey returns the position of an item key.
func (q *Queue) decodeItemKey(k []byte) (pos, error) {
	rest := k[len(q.sub[tagItems]):]
	if q.kind == FIFO {
		var v [2]int64
		err := decodeInts(rest, v[:])
		return pos{seq: v[0], id: v[1]}, err
	}
	var v [3]int64
	err := decodeInts(rest, v[:])
	return pos{prio: v[0], seq: v[1], id: v[2]}, err
}

// encodeValue packs an item's resources and value as a tuple.
func encodeValue(res []int64, value []byte) []byte {
	b := appendInts(make([]byte, 0, 9*len(res)+len(value)+2), res...)
	b, _ = tuple.Tuple{value}.AppendPack(b)
	return b
}

func (q *Queue) decodeItem(k, v []byte) (Item, pos, error) {
	p, err := q.decodeItemKey(k)
	if err != nil {
		return Item{}, p, err
	}
	t, err := tuple.Unpack(v)
	if err != nil || len(t) != len(q.resources)+1 {
		return Item{}, p, fmt.Errorf("%w: item %d has a malformed value", ErrCorrupt, p.id)
	}
	it := Item{ID: p.id, Priority: p.prio}
	if len(q.resources) > 0 {
		it.Resources = make([]int64, len(q.resources))
		for i := range q.resources {
			r, ok := t[i].(int64)
			if !ok {
				return Item{}, p, fmt.Errorf("%w: item %d has a malformed resource", ErrCorrupt, p.id)
			}
			it.Resources[i] = r
		}
	}
	val, ok := t[len(q.resources)].([]byte)
	if !ok {
		return Item{}, p, fmt.Errorf("%w: item %d has a malformed value", ErrCorrupt, p.id)
	}
	it.Value = val
	return it, p, nil
}

// cellOf quantises a resource value: exact below 16, then 8 buckets per
// power of two. It returns the bucket's lower bound, which names it.
func cellOf(v int64) int64 {
	if v < 16 {
		return v
	}
	shift := bits.Len64(uint64(v)) - 4
	return v >> shift << shift
}

// cellHigh returns the largest value in the bucket whose lower bound is lo.
func cellHigh(lo int64) int64 {
	if lo < 16 {
		return lo
	}
	shift := bits.Len64(uint64(lo)) - 4
	return lo + (1<<shift - 1)
}

func cellsOf(res []int64) []int64 {
	c := make([]int64, len(res))
	for i, v := range res {
		c[i] = cellOf(v)
	}
	return c
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
