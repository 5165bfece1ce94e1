package queues

import (
	"bytes"

	"github.com/fdbqueue/fdbqueue/kv"
)

// Batch sizes of a cursor's reads: the first is small (a pop of a few rows
// wants a few entries of each cell), later ones double, up to maxBatch.
const (
	firstBatch = 8
	maxBatch   = 1024
)

// cursor reads the fit index entries under one cell or shape in queue
// order, a batch at a time, each batch one complete range read (so that
// cursors never hold iterators open), issued ahead of the wait for it
// (issue) when cursors read in rounds. Its reads are serializable and cover
// the entries from the start of the cell or shape to its head in queue
// order, so a concurrent push of a better entry conflicts.
type cursor struct {
	prefix   []byte // the entries' prefix: P (tag, coords...)
	maxFirst bool   // queue order is priorities from the highest down
	order    Order
	dirTag   int     // the directory listing the cell or shape,
	coords   []int64 // under these coordinates

	limits     []int64 // if set, entries that do not fit are skipped,
	budget     int     // at most this many,
	overBudget bool    // past which the cursor stops
	res        []int64 // scratch: an entry's resources

	pk *pick // entries of items other attempts claimed are passed over

	after  *pos // entries at or before it are skipped
	head   pos  // the entry advance found
	read   *pos // the last entry read, if any
	opened bool // open found its first entry

	// Reading state: the range left to read, [from, end): the whole cell
	// or shape, or in Max order its current priority (from is nil when the
	// next range is still to be found); levels, in Max order, ends the
	// priorities not visited yet.
	from, end, levels []byte
	done              bool
	batch             []kv.KeyValue
	bi                int
	size              int // the next batch's size
	// The read issued and not yet taken: the next batch, or in Max order
	// the last entry of the priorities not visited yet (topping).
	next    kv.FutureRange
	top     oneRow
	topping bool
	// ahead is what was read ahead of the cursor's next batches, through
	// the snapshot (readAhead): the read in flight (aheadF, with a row
	// limit of whole batches), then the rows left of the range from the
	// cursor's from on. The pick records a batch when the cursor takes it.
	ahead         bool
	aheadF        kv.FutureRange
	aheadLimit    int
	aheadRows     []kv.KeyValue
	aheadComplete bool // the rows go to the range's end
}

// advance moves the cursor to its next entry, and reports whether there
// was one; false with overBudget means the cursor gave up. With stall, it
// stops at a read that was not issued, and reports stalled, instead of
// making it.
func (c *cursor) advance(tr kv.ReadTransaction, stall bool) (ok, stalled bool, err error) {
	for {
		if c.bi == len(c.batch) {
			if ok, stalled, err := c.refill(tr, stall); !ok || err != nil {
				return false, stalled, err
			}
		}
		p, take, giveUp, err := c.step(c.batch[c.bi], &c.budget)
		c.bi++
		if err != nil {
			return false, false, err
		}
		c.read = &p
		switch {
		case giveUp:
			c.overBudget = true
			return false, false, nil
		case take:
			c.head = p
			return true, false, nil
		}
	}
}

// step says what advance does with the entry e it read, at p: pass over
// it, take it as the cursor's head, or give up, when entries that do not
// fit spent budget.
func (c *cursor) step(e kv.KeyValue, budget *int) (p pos, take, giveUp bool, err error) {
	if p, err = decodeEntry(c.prefix, e.Key); err != nil {
		return p, false, false, err
	}
	if c.after != nil && !better(*c.after, p, c.order) {
		return p, false, false, nil
	}
	if c.limits != nil {
		if err := decodeInts(e.Value, c.res); err != nil {
			return p, false, false, err
		}
		if !fits(c.res, c.limits) {
			*budget--
			return p, false, *budget < 0, nil
		}
	}
	return p, !c.pk.claimed(p), false, nil
}

// readAhead reads the cursor's next batches ahead through snap, as many
// as hold entries more (up to aheadBatches of them), unless it has a read
// in flight or no batch to read (its range read to the end).
func (c *cursor) readAhead(snap kv.ReadTransaction, entries int) {
	c.readAheadBatches(snap, entries, aheadBatches)
}

// openAhead reads ahead, when the cursor opens, the batches it may take
// before it finds its first entry, in the round of the other cursors'
// first batches: a cursor that skips entries (those that do not fit, up
// to its budget, or those step 1 took) would otherwise wait for its
// batches one after another. It reports whether it read ahead: a cursor
// that skips nothing reads its first batch (issue), and so does one in
// Max order, whose first read is its last entry.
func (c *cursor) openAhead(snap kv.ReadTransaction, want int) bool {
	if c.maxFirst || c.from != nil || (c.limits == nil && c.after == nil) {
		return false
	}
	entries := want
	if c.limits != nil {
		entries += c.budget + 1
	}
	all := extending(c.prefix)
	c.from, c.end = all.Begin, all.End
	c.readAheadBatches(snap, entries, openBatches)
	return true
}

// openBatches is the most batches a cursor reads ahead when it opens:
// from a first batch of one entry, 127 of them, past a straddling cell's
// budget.
const openBatches = 7

func (c *cursor) readAheadBatches(snap kv.ReadTransaction, entries, batches int) {
	if c.from == nil || c.done || c.next != nil || c.topping || c.ahead {
		return
	}
	c.aheadLimit = 0
	for i, size := 0, c.size; i < batches && c.aheadLimit < entries; i, size = i+1, min(2*size, maxBatch) {
		c.aheadLimit += size
	}
	c.ahead = true
	c.aheadF = kv.GetRangeAsync(snap, kv.Range{Begin: c.from, End: c.end}, kv.RangeOptions{Limit: c.aheadLimit, Mode: kv.StreamingModeWantAll})
}

// aheadBatches is the most batches of a cursor read ahead together.
const aheadBatches = 3

// takeAhead takes the cursor's next batch from what was read ahead, and
// records it as the read of the batch it stands for.
func (c *cursor) takeAhead() ([]kv.KeyValue, error) {
	if c.aheadF != nil {
		rows, err := c.aheadF.Get()
		c.aheadF = nil
		if err != nil {
			return nil, err
		}
		c.aheadRows, c.aheadComplete = rows, len(rows) < c.aheadLimit
	}
	rows := c.aheadRows
	if len(rows) >= c.size {
		rows, c.aheadRows = rows[:c.size:c.size], rows[c.size:]
	} else {
		c.aheadRows = nil // the range's last batch: the rows read ahead reached its end
	}
	// Read ahead in whole batches: the rows run out at the end of a batch.
	c.ahead = len(c.aheadRows) > 0 || c.aheadComplete && len(rows) == c.size
	return rows, c.pk.recordRange(kv.Range{Begin: c.from, End: c.end}, kv.RangeOptions{Limit: c.size}, rows)
}

// issue issues the read the cursor needs next: its next batch, or in Max
// order, when the priority it read is done, the last entry of those left
// (nextRange's read).
func (c *cursor) issue(tr kv.ReadTransaction) {
	all := extending(c.prefix)
	if c.from == nil && c.maxFirst {
		if c.levels == nil {
			c.levels = all.End
		}
		issueFirst(tr, kv.Range{Begin: all.Begin, End: c.levels}, true, &c.top)
		c.topping = true
		return
	}
	if c.from == nil {
		c.from, c.end = all.Begin, all.End
	}
	c.next = kv.GetRangeAsync(tr, kv.Range{Begin: c.from, End: c.end}, kv.RangeOptions{Limit: c.size, Mode: kv.StreamingModeWantAll})
}

// refill takes the cursor's next batch, issuing its reads unless stall
// (then it reports stalled at the first not issued), and reports whether
// the batch holds any entry.
func (c *cursor) refill(tr kv.ReadTransaction, stall bool) (ok, stalled bool, err error) {
	c.batch, c.bi = nil, 0
	for !c.done {
		if c.next == nil && !c.topping && c.ahead {
			// The batch read ahead is the one the cursor reads next.
			rows, err := c.takeAhead()
			if err != nil {
				return false, false, err
			}
			if c.took(rows) {
				return true, false, nil
			}
			continue
		}
		if c.next == nil && !c.topping {
			if stall {
				return false, true, nil
			}
			c.issue(tr)
		}
		if c.topping {
			c.topping = false
			if err := c.nextRange(); err != nil || c.done {
				return false, false, err
			}
			continue
		}
		rows, err := c.next.Get()
		c.next = nil
		if err != nil {
			return false, false, err
		}
		if c.took(rows) {
			return true, false, nil
		}
	}
	return false, false, nil
}

// took makes rows, the answer of the read of the cursor's next batch, its
// batch, and moves on to the next, or past the range read to its end; it
// reports whether the batch holds any entry.
func (c *cursor) took(rows []kv.KeyValue) bool {
	c.batch = rows
	full := len(rows) == c.size
	c.size = min(2*c.size, maxBatch)
	if full {
		c.from = kv.KeyAfter(rows[len(rows)-1].Key)
		return true
	}
	// The range is read to its end.
	c.from, c.done = nil, !c.maxFirst
	return len(rows) > 0
}

// nextRange takes, in Max order, the last entry of the priorities not
// visited yet, and makes the entries of its priority the range the cursor
// reads next. It sets done when there is none.
func (c *cursor) nextRange() error {
	last, ok, err := c.top.get()
	if err != nil || !ok {
		c.done = true
		return err
	}
	p, err := decodeEntry(c.prefix, last.Key)
	if err != nil {
		return err
	}
	level := extending(appendInts(bytes.Clone(c.prefix), p.prio))
	c.from, c.end, c.levels = level.Begin, level.End, level.Begin
	return nil
}

// cursorHeap orders cursors by their heads, best first.
type cursorHeap struct {
	cs    []*cursor
	order Order
}

func (h *cursorHeap) Len() int           { return len(h.cs) }
func (h *cursorHeap) Less(i, j int) bool { return better(h.cs[i].head, h.cs[j].head, h.order) }
func (h *cursorHeap) Swap(i, j int)      { h.cs[i], h.cs[j] = h.cs[j], h.cs[i] }
func (h *cursorHeap) Push(x any)         { h.cs = append(h.cs, x.(*cursor)) }
func (h *cursorHeap) Pop() any {
	c := h.cs[len(h.cs)-1]
	h.cs = h.cs[:len(h.cs)-1]
	return c
}
