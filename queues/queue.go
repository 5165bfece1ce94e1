package queues

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"

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

// scanBudget is how many items a fit pop reads in queue order before it
// turns to the index. Reading an item inside a batched range read costs
// about a tenth of an index head read, and a fit pop through the index reads
// one head per fitting cell, so the scan pays while a fit is likely among
// the first hundred or so items.
const scanBudget = 128

// Queue is one queue's place in the key space and its shape. It holds no
// state of its own: every method works through the transaction it is given.
type Queue struct {
	prefix    []byte
	kind      Kind
	resources []string
	sub       [11][]byte // prefix + tag, for each tag (see the package doc and idempotency.go)
}

// New returns the queue stored under prefix (a packed tuple, so that the keys
// stay readable by FoundationDB's tuple layer). resources names the
// resources tasks declare; PopFit takes limits in the same order.
func New(prefix []byte, kind Kind, resources ...string) *Queue {
	q := &Queue{prefix: bytes.Clone(prefix), kind: kind, resources: append([]string(nil), resources...)}
	for tag := range q.sub {
		q.sub[tag] = tuple.AppendInt(bytes.Clone(prefix), int64(tag))
	}
	return q
}

// Kind returns the queue's recipe.
func (q *Queue) Kind() Kind { return q.kind }

// Resources returns the names of the queue's resources.
func (q *Queue) Resources() []string { return append([]string(nil), q.resources...) }

// Range returns the key range holding all of the queue's data.
func (q *Queue) Range() kv.Range { return kv.PrefixRange(q.prefix) }

// NewID returns a random positive id for Push. Make it outside the
// transaction function, so that a retry pushes the same id.
func NewID() int64 {
	for {
		if id := rand.Int64(); id > 0 {
			return id
		}
	}
}

// pos is an item's place in queue order.
type pos struct {
	prio, seq, id int64
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

func (q *Queue) checkResources(res []int64, what string) error {
	if len(res) != len(q.resources) {
		return fmt.Errorf("%w: %d %s given, the queue has %d resources %v", ErrInvalidItem, len(res), what, len(q.resources), q.resources)
	}
	return nil
}

// Push adds it to the queue. it.ID must be positive and unique in the queue
// (see NewID); ErrDuplicateID is returned otherwise. Push is idempotent: a
// retry of a push that was applied (after commit_unknown_result) finds the
// push's marker and does nothing, so make the id outside the transaction.
func (q *Queue) Push(tr kv.Transaction, it Item) error {
	if err := q.checkItem(it); err != nil {
		return err
	}
	done, err := q.markPushed(tr, it.ID)
	if err != nil || done {
		return err
	}
	return q.push(tr, it)
}

func (q *Queue) checkItem(it Item) error {
	if it.ID <= 0 {
		return fmt.Errorf("%w: id %d is not positive", ErrInvalidItem, it.ID)
	}
	return q.checkResources(it.Resources, "resources")
}

// push adds it without a push marker.
func (q *Queue) push(tr kv.Transaction, it Item) error {
	p := pos{id: it.ID}
	if q.kind == Priority {
		p.prio = it.Priority
	}
	// The seq is one more than the last in use, read with a snapshot read:
	// pushes never conflict with each other over it.
	var tail kv.Range
	if q.kind == FIFO {
		tail = kv.PrefixRange(q.sub[tagItems])
	} else {
		tail = kv.PrefixRange(q.key(tagItems, p.prio))
	}
	last, ok, err := kv.First(tr.Snapshot(), tail, true)
	if err != nil {
		return err
	}
	p.seq = 1
	if ok {
		lp, err := q.decodeItemKey(last.Key)
		if err != nil {
			return err
		}
		p.seq = lp.seq + 1
	}
	idKey := q.key(tagIDs, it.ID)
	if v, err := tr.Get(idKey); err != nil {
		return err
	} else if v != nil {
		return fmt.Errorf("%w: id %d", ErrDuplicateID, it.ID)
	}
	q.insert(tr, p, it)
	return q.indexAdd(tr, p, it.Resources)
}

// insert writes an item, its id index entry and its count.
func (q *Queue) insert(tr kv.Transaction, p pos, it Item) {
	tr.Set(q.itemKey(p), encodeValue(it.Resources, it.Value))
	if q.kind == FIFO {
		tr.Set(q.key(tagIDs, p.id), appendInts(nil, p.seq))
	} else {
		tr.Set(q.key(tagIDs, p.id), appendInts(nil, p.prio, p.seq))
	}
	tr.Add(q.countKey(), 1)
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

// ensureDir makes sure the directory key exists. It reads the key
// serializably, so that a pop removing it concurrently conflicts with us, and
// writes it only when absent, so that pushes into a live cell do not conflict
// with pops reading the directory.
func ensureDir(tr kv.Transaction, key []byte) error {
	v, err := tr.Get(key)
	if err != nil {
		return err
	}
	if v == nil {
		tr.Set(key, nil)
	}
	return nil
}

func (q *Queue) indexAdd(tr kv.Transaction, p pos, res []int64) error {
	if len(res) == 0 {
		return nil
	}
	cell := cellsOf(res)
	if err := ensureDir(tr, q.key(tagCellDir, cell...)); err != nil {
		return err
	}
	// The entry carries the task's resources, so that a cell straddling a
	// limit can be scanned without reading the items.
	tr.Set(appendInts(q.key(tagCells, cell...), p.prio, p.seq, p.id), appendInts(nil, res...))
	if err := ensureDir(tr, q.key(tagShapeDir, res...)); err != nil {
		return err
	}
	tr.Set(appendInts(q.key(tagShapes, res...), p.prio, p.seq, p.id), nil)
	return nil
}

// remove deletes the item at p (whose resources are res). It leaves the
// directory keys of the item's cell and shape even if they are now empty: a
// fit pop that finds a listed cell empty clears its key (see
// bestFromIndex). Checking for emptiness here would read the cell
// serializably and make concurrent pops of one cell conflict.
func (q *Queue) remove(tr kv.Transaction, p pos, res []int64) error {
	tr.Clear(q.itemKey(p))
	tr.Clear(q.key(tagIDs, p.id))
	tr.Add(q.countKey(), -1)
	if len(res) == 0 {
		return nil
	}
	tr.Clear(appendInts(q.key(tagCells, cellsOf(res)...), p.prio, p.seq, p.id))
	tr.Clear(appendInts(q.key(tagShapes, res...), p.prio, p.seq, p.id))
	return nil
}

// first returns the first item in order.
func (q *Queue) first(tr kv.ReadTransaction, order Order) (kv.KeyValue, bool, error) {
	items := kv.PrefixRange(q.sub[tagItems])
	if q.kind == FIFO || order == Min {
		return kv.First(tr, items, false)
	}
	// The highest priority is the last key; its oldest item the first key
	// under that priority.
	last, ok, err := kv.First(tr, items, true)
	if err != nil || !ok {
		return last, ok, err
	}
	p, err := q.decodeItemKey(last.Key)
	if err != nil {
		return last, false, err
	}
	return kv.First(tr, kv.PrefixRange(q.key(tagItems, p.prio)), false)
}

// Peek returns the first item in order without removing it.
func (q *Queue) Peek(tr kv.ReadTransaction, order Order) (Item, bool, error) {
	e, ok, err := q.first(tr, order)
	if err != nil || !ok {
		return Item{}, false, err
	}
	it, _, err := q.decodeItem(e.Key, e.Value)
	return it, err == nil, err
}

// Pop removes and returns the first item in order.
func (q *Queue) Pop(tr kv.Transaction, order Order) (Item, bool, error) {
	e, ok, err := q.first(tr, order)
	if err != nil || !ok {
		return Item{}, false, err
	}
	it, p, err := q.decodeItem(e.Key, e.Value)
	if err != nil {
		return Item{}, false, err
	}
	return it, true, q.remove(tr, p, it.Resources)
}

// PopSpread is Pop for many consumers popping one queue at once: instead of
// all of them wanting the first item (and all but one retrying), each takes
// one of the first k items of the best priority at random. Priority order
// stays exact (a concurrent push of a better priority conflicts with the
// pop); the order within that priority is relaxed to "one of its k oldest".
// Every pop stays exactly-once: the chosen item is read serializably, so two
// pops that choose it conflict. Use it when exact pops keep conflicting.
func (q *Queue) PopSpread(tr kv.Transaction, order Order, k int) (Item, bool, error) {
	head, ok, err := q.first(tr.Snapshot(), order)
	if err != nil || !ok {
		return Item{}, false, err
	}
	hp, err := q.decodeItemKey(head.Key)
	if err != nil {
		return Item{}, false, err
	}
	var cands []kv.KeyValue
	r := kv.PrefixRange(q.sub[tagItems])
	if q.kind == Priority {
		r = kv.PrefixRange(q.key(tagItems, hp.prio))
	}
	it := tr.Snapshot().GetRange(r, kv.RangeOptions{Limit: max(k, 1)})
	for it.Next() {
		cands = append(cands, it.KeyValue())
	}
	if err := it.Err(); err != nil {
		return Item{}, false, err
	}
	if len(cands) == 0 {
		return Item{}, false, nil
	}
	c := cands[rand.IntN(len(cands))]
	return q.takeSpread(tr, order, c.Key)
}

// takeSpread removes the chosen item of a spread pop: it reads the item
// serializably (the only conflict between pops) and guards the better
// priorities with a read-conflict range.
func (q *Queue) takeSpread(tr kv.Transaction, order Order, key []byte) (Item, bool, error) {
	p, err := q.decodeItemKey(key)
	if err != nil {
		return Item{}, false, err
	}
	v, err := tr.Get(key)
	if err != nil || v == nil {
		return Item{}, false, err
	}
	if q.kind == Priority {
		items, prio := kv.PrefixRange(q.sub[tagItems]), kv.PrefixRange(q.key(tagItems, p.prio))
		guard := kv.Range{Begin: items.Begin, End: prio.Begin}
		if order == Max {
			guard = kv.Range{Begin: prio.End, End: items.End}
		}
		if err := tr.AddReadConflictRange(guard); err != nil {
			return Item{}, false, err
		}
	}
	it, _, err := q.decodeItem(key, v)
	if err != nil {
		return Item{}, false, err
	}
	return it, true, q.remove(tr, p, it.Resources)
}

// PopFitSpread is PopFit for many consumers with the same limits: it reads
// the first items in queue order with a snapshot read and takes one of the
// first k that fit and share the best fitting priority, at random, with the
// same guarantees as PopSpread. When none of the first items fits, it is
// PopFit.
func (q *Queue) PopFitSpread(tr kv.Transaction, order Order, limits []int64, k int) (Item, bool, error) {
	if err := q.checkResources(limits, "limits"); err != nil {
		return Item{}, false, err
	}
	var cands [][]byte
	bestPrio, n := int64(0), 0
	res := make([]int64, len(limits))
	stopped, err := q.scan(tr.Snapshot(), order, func(e kv.KeyValue, p pos) (bool, error) {
		if len(cands) > 0 && p.prio != bestPrio {
			return false, nil // past the best fitting priority
		}
		if err := decodeResources(e.Value, res, p.id); err != nil {
			return false, err
		}
		if fits(res, limits) {
			bestPrio = p.prio
			cands = append(cands, e.Key)
			return len(cands) < max(k, 1), nil
		}
		n++
		return n < scanBudget || len(cands) > 0, nil
	})
	if err != nil {
		return Item{}, false, err
	}
	if len(cands) == 0 {
		if !stopped {
			return Item{}, false, nil // the whole queue was read: nothing fits
		}
		return q.PopFit(tr, order, limits)
	}
	return q.takeSpread(tr, order, cands[rand.IntN(len(cands))])
}

// PopN removes and returns up to n items in order, reading the queue once:
// n calls to Pop in one transaction would each read past the items the
// earlier ones removed.
func (q *Queue) PopN(tr kv.Transaction, order Order, n int) ([]Item, error) {
	if n <= 0 {
		return nil, nil
	}
	var items []Item
	var poss []pos
	_, err := q.scan(tr, order, func(e kv.KeyValue, p pos) (bool, error) {
		it, _, err := q.decodeItem(e.Key, e.Value)
		if err != nil {
			return false, err
		}
		items, poss = append(items, it), append(poss, p)
		return len(items) < n, nil
	})
	if err != nil {
		return nil, err
	}
	for i, it := range items {
		if err := q.remove(tr, poss[i], it.Resources); err != nil {
			return nil, err
		}
	}
	return items, nil
}

// Scan calls fn with the queue's items in order until fn returns false or an
// error. It streams: the queue is never loaded whole.
func (q *Queue) Scan(tr kv.ReadTransaction, order Order, fn func(Item) (bool, error)) error {
	_, err := q.scan(tr, order, func(e kv.KeyValue, _ pos) (bool, error) {
		it, _, err := q.decodeItem(e.Key, e.Value)
		if err != nil {
			return false, err
		}
		return fn(it)
	})
	return err
}

// scan is Scan with positions; it also reports whether fn stopped it.
func (q *Queue) scan(tr kv.ReadTransaction, order Order, fn func(kv.KeyValue, pos) (bool, error)) (stopped bool, err error) {
	prefix := q.sub[tagItems]
	return scanOrdered(tr, prefix, q.kind == Priority && order == Max, q.decodeItemKey, func(p pos) []byte {
		return tuple.AppendInt(bytes.Clone(prefix), p.prio)
	}, fn)
}

// scanOrdered visits the keys under prefix in queue order: key order, or,
// for maxFirst, priorities from the highest down, each in key order (oldest
// first). decode gives a key's position; under gives the prefix of a
// position's priority.
func scanOrdered(tr kv.ReadTransaction, prefix []byte, maxFirst bool, decode func([]byte) (pos, error),
	under func(pos) []byte, fn func(kv.KeyValue, pos) (bool, error)) (stopped bool, err error) {
	visit := func(r kv.Range) (bool, error) {
		it := tr.GetRange(r, kv.RangeOptions{})
		for it.Next() {
			e := it.KeyValue()
			p, err := decode(e.Key)
			if err != nil {
				return true, err
			}
			more, err := fn(e, p)
			if err != nil || !more {
				return true, err
			}
		}
		return false, it.Err()
	}
	all := kv.PrefixRange(prefix)
	if !maxFirst {
		return visit(all)
	}
	end := all.End
	for {
		last, ok, err := kv.First(tr, kv.Range{Begin: all.Begin, End: end}, true)
		if err != nil || !ok {
			return false, err
		}
		p, err := decode(last.Key)
		if err != nil {
			return true, err
		}
		r := kv.PrefixRange(under(p))
		if stopped, err := visit(r); stopped || err != nil {
			return stopped, err
		}
		end = r.Begin
	}
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

// fits reports whether every resource is within its limit.
func fits(res, limits []int64) bool {
	for i, r := range res {
		if r > limits[i] {
			return false
		}
	}
	return true
}

// PeekFit returns the first item in order whose every resource is at most
// its limit, without removing it.
func (q *Queue) PeekFit(tr kv.ReadTransaction, order Order, limits []int64) (Item, bool, error) {
	it, _, ok, err := q.findFit(tr, order, limits)
	return it, ok, err
}

// PopFit removes and returns the first item in order whose every resource is
// at most its limit. limits are in the order of the queue's resources.
func (q *Queue) PopFit(tr kv.Transaction, order Order, limits []int64) (Item, bool, error) {
	it, p, ok, err := q.findFit(tr, order, limits)
	if err != nil || !ok {
		return Item{}, false, err
	}
	return it, true, q.remove(tr, p, it.Resources)
}

func (q *Queue) findFit(tr kv.ReadTransaction, order Order, limits []int64) (Item, pos, bool, error) {
	if err := q.checkResources(limits, "limits"); err != nil {
		return Item{}, pos{}, false, err
	}
	// Step 1: the first items in queue order.
	var found Item
	var foundPos pos
	var ok bool
	n := 0
	res := make([]int64, len(limits))
	stopped, err := q.scan(tr, order, func(e kv.KeyValue, p pos) (bool, error) {
		// Only the resources, without allocating, for items that do not fit.
		if err := decodeResources(e.Value, res, p.id); err != nil {
			return false, err
		}
		if fits(res, limits) {
			it, _, err := q.decodeItem(e.Key, e.Value)
			found, foundPos, ok = it, p, err == nil
			return false, err
		}
		n++
		return n < scanBudget, nil
	})
	if err != nil || ok || !stopped {
		// Found, failed, or the whole queue was read.
		return found, foundPos, ok, err
	}
	// Step 2: the index.
	best, ok, err := q.bestFromIndex(tr, order, limits)
	if err != nil || !ok {
		return Item{}, pos{}, false, err
	}
	v, err := tr.Get(q.itemKey(best))
	if err != nil {
		return Item{}, pos{}, false, err
	}
	if v == nil {
		return Item{}, pos{}, false, fmt.Errorf("%w: fit index names item %d, which is not queued", ErrCorrupt, best.id)
	}
	it, p, err := q.decodeItem(q.itemKey(best), v)
	if err != nil {
		return Item{}, pos{}, false, err
	}
	if !fits(it.Resources, limits) {
		return Item{}, pos{}, false, fmt.Errorf("%w: fit index files item %d under resources it does not have", ErrCorrupt, best.id)
	}
	return it, p, true, nil
}

// straddleBudget is how many entries of a cell straddling a limit a fit pop
// reads in queue order before it resolves the cell through its exact shapes.
const straddleBudget = 64

// bestFromIndex finds the best fitting task through the cell and shape
// directories. Cells wholly inside the limits give their heads first; then
// each cell straddling a limit is read in queue order, only as far as it can
// still beat the best head found, and at most straddleBudget entries, past
// which its fitting shapes are visited instead.
//
// A listed cell or shape that turns out empty has its directory key cleared
// when tr is writable (a pop); the read that found it empty was
// serializable, so a concurrent push into it conflicts with the clear.
func (q *Queue) bestFromIndex(tr kv.ReadTransaction, order Order, limits []int64) (pos, bool, error) {
	d := len(limits)
	var best pos
	found := false
	offer := func(p pos) {
		if !found || better(p, best, order) {
			best, found = p, true
		}
	}
	wtr, writable := tr.(kv.Transaction)
	// consider reads the head of a cell (or shape: entries under tag,
	// listed under dirTag).
	var buf []byte
	consider := func(tag, dirTag int, coords []int64) error {
		var cutoff *pos
		if found {
			cutoff = &best
		}
		buf = appendInts(append(buf[:0], q.sub[tag]...), coords...)
		p, ok, err := q.head(tr, buf, order, cutoff)
		if ok {
			offer(p)
		} else if err == nil && writable {
			wtr.Clear(q.key(dirTag, coords...))
		}
		return err
	}
	noMin := make([]int64, d)
	for i := range noMin {
		noMin[i] = math.MinInt64
	}
	var straddling [][]int64
	err := skipScan(tr, q.sub[tagCellDir], noMin, limits, func(cell []int64) error {
		for i, c := range cell {
			if cellHigh(c) > limits[i] {
				straddling = append(straddling, slices.Clone(cell))
				return nil
			}
		}
		return consider(tagCells, tagCellDir, cell)
	})
	if err != nil {
		return pos{}, false, err
	}
	res := make([]int64, d)
	for _, cell := range straddling {
		prefix := q.key(tagCells, cell...)
		n := 0
		stopped, err := scanOrdered(tr, prefix, q.kind == Priority && order == Max,
			func(k []byte) (pos, error) {
				var v [3]int64
				err := decodeInts(k[len(prefix):], v[:])
				return pos{prio: v[0], seq: v[1], id: v[2]}, err
			},
			func(p pos) []byte { return tuple.AppendInt(bytes.Clone(prefix), p.prio) },
			func(e kv.KeyValue, p pos) (bool, error) {
				if found && !better(p, best, order) {
					return false, nil // nothing further in this cell can win
				}
				if n++; n > straddleBudget {
					return false, nil
				}
				if err := decodeInts(e.Value, res); err != nil {
					return false, err
				}
				if fits(res, limits) {
					offer(p)
					return false, nil
				}
				return true, nil
			})
		if err != nil {
			return pos{}, false, err
		}
		if !stopped && n == 0 && writable {
			wtr.Clear(q.key(tagCellDir, cell...)) // listed, but empty
		}
		if !stopped || n <= straddleBudget {
			continue
		}
		// Over budget: the cell's fitting shapes, exactly.
		lo, hi := make([]int64, d), make([]int64, d)
		for i, c := range cell {
			lo[i], hi[i] = c, min(cellHigh(c), limits[i])
		}
		err = skipScan(tr, q.sub[tagShapeDir], lo, hi, func(shape []int64) error {
			return consider(tagShapes, tagShapeDir, shape)
		})
		if err != nil {
			return pos{}, false, err
		}
	}
	return best, found, nil
}

// head returns the best index entry under prefix (a cell or a shape). In
// Max order that takes two reads: the last entry gives the highest
// priority, then the first entry of that priority is the oldest. When the
// highest priority is below cutoff's, no entry can beat cutoff, and head
// returns that last entry after one read: callers only compare it.
func (q *Queue) head(tr kv.ReadTransaction, prefix []byte, order Order, cutoff *pos) (pos, bool, error) {
	// Tuple type codes are below 0xff, so prefix+0xff ends the entries
	// under prefix (and the reads copy the range's keys they keep).
	r := kv.Range{Begin: prefix, End: append(prefix[:len(prefix):len(prefix)], 0xff)}
	if order == Max && q.kind == Priority {
		last, ok, err := kv.First(tr, r, true)
		if err != nil || !ok {
			return pos{}, false, err
		}
		var v [3]int64
		if err := decodeInts(last.Key[len(prefix):], v[:]); err != nil {
			return pos{}, false, err
		}
		if cutoff != nil && v[0] < cutoff.prio {
			// The read covered the cell from this entry to its end, so a
			// concurrent push of a higher priority conflicts.
			return pos{prio: v[0], seq: v[1], id: v[2]}, true, nil
		}
		sub := appendInts(bytes.Clone(prefix), v[0])
		r = kv.Range{Begin: sub, End: append(sub, 0xff)}
	}
	e, ok, err := kv.First(tr, r, false)
	if err != nil || !ok {
		return pos{}, false, err
	}
	var v [3]int64
	if err := decodeInts(e.Key[len(prefix):], v[:]); err != nil {
		return pos{}, false, err
	}
	return pos{prio: v[0], seq: v[1], id: v[2]}, true, nil
}

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
	end := append(upTo, 0xff)
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
		from = append(next, 0xff)
	}
}

// Get returns the item with id.
func (q *Queue) Get(tr kv.ReadTransaction, id int64) (Item, bool, error) {
	p, ok, err := q.lookup(tr, id)
	if err != nil || !ok {
		return Item{}, false, err
	}
	k := q.itemKey(p)
	v, err := tr.Get(k)
	if err != nil {
		return Item{}, false, err
	}
	if v == nil {
		return Item{}, false, fmt.Errorf("%w: id index names item %d, which is not queued", ErrCorrupt, id)
	}
	it, _, err := q.decodeItem(k, v)
	return it, err == nil, err
}

// lookup returns the position of the item with id.
func (q *Queue) lookup(tr kv.ReadTransaction, id int64) (pos, bool, error) {
	v, err := tr.Get(q.key(tagIDs, id))
	if err != nil || v == nil {
		return pos{}, false, err
	}
	p := pos{id: id}
	if q.kind == FIFO {
		var s [1]int64
		err = decodeInts(v, s[:])
		p.seq = s[0]
	} else {
		var s [2]int64
		err = decodeInts(v, s[:])
		p.prio, p.seq = s[0], s[1]
	}
	return p, true, err
}

// Remove deletes the item with id, and reports whether it was queued.
func (q *Queue) Remove(tr kv.Transaction, id int64) (Item, bool, error) {
	it, ok, err := q.Get(tr, id)
	if err != nil || !ok {
		return Item{}, false, err
	}
	p, _, err := q.lookup(tr, id)
	if err != nil {
		return Item{}, false, err
	}
	return it, true, q.remove(tr, p, it.Resources)
}

// Move re-prioritises the item with id: it keeps its id and value and goes
// to the back of its new priority. It reports whether the item was queued.
func (q *Queue) Move(tr kv.Transaction, id, priority int64) (bool, error) {
	if q.kind != Priority {
		return false, fmt.Errorf("%w: a %s queue has no priorities", ErrInvalidItem, q.kind)
	}
	it, ok, err := q.Remove(tr, id)
	if err != nil || !ok {
		return false, err
	}
	it.Priority = priority
	return true, q.push(tr, it) // the same id again: no push marker
}

// Count returns the number of queued items, from a counter kept with atomic
// adds: O(1), and a read conflict only on the counter.
func (q *Queue) Count(tr kv.ReadTransaction) (int64, error) {
	v, err := tr.Get(q.countKey())
	if err != nil || v == nil {
		return 0, err
	}
	if len(v) != 8 {
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

// ClearItems removes every item, with its indexes and count, and keeps the
// push markers and pop receipts, so that a push or pop retried after
// commit_unknown_result still finds what its committed attempt did.
func (q *Queue) ClearItems(tr kv.Transaction) {
	tr.ClearRange(kv.Range{Begin: q.sub[tagItems], End: q.sub[tagMarks]})
}
