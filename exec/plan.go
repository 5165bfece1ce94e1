package exec

import (
	"fmt"
	"math"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/parser"
	"github.com/fdbqueue/fdbqueue/queues"
)

// cond is a bound WHERE comparison.
type cond struct {
	col int // -1: id
	op  parser.Op
	val any // nil: compares with NULL, never true
}

func (c cond) match(r row) bool {
	var v any
	if c.col < 0 {
		v = r.item.ID
	} else {
		v = r.vals[c.col]
	}
	if v == nil || c.val == nil {
		return false
	}
	if x, ok := v.(float64); ok && (math.IsNaN(x) || math.IsNaN(c.val.(float64))) {
		// IEEE 754: NaN is unordered; only != holds. DOUBLE columns refuse
		// NaN (see convert), but a row written before they did may hold one.
		return c.op == parser.OpNe
	}
	n := compare(v, c.val)
	switch c.op {
	case parser.OpEq:
		return n == 0
	case parser.OpNe:
		return n != 0
	case parser.OpLt:
		return n < 0
	case parser.OpLe:
		return n <= 0
	case parser.OpGt:
		return n > 0
	case parser.OpGe:
		return n >= 0
	}
	return false
}

var idColumn = Column{Name: "id", Type: parser.TypeInt}

func (e *Executor) bindWhere(t *Table, where []parser.Cond, pr *prepared) ([]cond, error) {
	out := make([]cond, 0, len(where))
	for _, w := range where {
		i, err := t.column(w.Column)
		if err != nil {
			return nil, err
		}
		col := &idColumn
		if i >= 0 {
			col = &t.Columns[i]
		}
		v, err := convert(col, pr.bind(w.Value))
		if err != nil {
			return nil, fmt.Errorf("WHERE %s %s: %w", w.Column, w.Op, err)
		}
		out = append(out, cond{col: i, op: w.Op, val: v})
	}
	return out, nil
}

func (e *Executor) order(t *Table, ob *parser.OrderBy) (queues.Order, error) {
	if ob == nil {
		return queues.Min, nil
	}
	if t.Priority < 0 {
		return 0, fmt.Errorf("%w: ORDER BY %s on %s, a FIFO table (it has no priority column; rows come in insertion order)", ErrStatement, ob.Column, t.Name)
	}
	i, err := t.column(ob.Column)
	if err != nil {
		return 0, err
	}
	if i < 0 || i != t.Priority {
		return 0, fmt.Errorf("%w: ORDER BY %s; a queue is ordered by priority", ErrStatement, ob.Column)
	}
	if ob.Desc {
		return queues.Max, nil
	}
	return queues.Min, nil
}

func (e *Executor) limit(l *parser.Value, pr *prepared) (int64, error) {
	if l == nil {
		return -1, nil
	}
	v, err := convert(&Column{Name: "LIMIT", Type: parser.TypeInt, NotNull: true}, pr.bind(*l))
	if err != nil {
		return 0, err
	}
	n, _ := v.(int64)
	if v == nil || n < 0 {
		return 0, fmt.Errorf("%w: LIMIT must be a count, 0 or more; got %v", ErrArgs, v)
	}
	return n, nil
}

// fitLimits returns the fit-index limits when every condition bounds a
// resource column from above (col <= v or col < v).
func fitLimits(t *Table, conds []cond) ([]int64, bool) {
	if len(t.Resources) == 0 || len(conds) == 0 {
		return nil, false
	}
	limits := make([]int64, len(t.Resources))
	for i := range limits {
		limits[i] = math.MaxInt64
	}
	for _, c := range conds {
		k := -1
		for j, r := range t.Resources {
			if c.col == r {
				k = j
			}
		}
		v, isInt := c.val.(int64)
		if k < 0 || !isInt || (c.op != parser.OpLe && c.op != parser.OpLt) {
			return nil, false
		}
		if c.op == parser.OpLt {
			if v == math.MinInt64 {
				return nil, false
			}
			v--
		}
		limits[k] = min(limits[k], v)
	}
	return limits, true
}

// idsOnly reports whether a statement projecting proj (column indexes, -1
// for id) with conds reads no column values.
func idsOnly(proj []int, conds []cond) bool {
	for _, i := range proj {
		if i >= 0 {
			return false
		}
	}
	for _, c := range conds {
		if c.col >= 0 {
			return false
		}
	}
	return true
}

// idLookup returns the id of an id = v condition.
func idLookup(conds []cond) (int64, bool) {
	for _, c := range conds {
		if c.col < 0 && c.op == parser.OpEq {
			id, ok := c.val.(int64)
			return id, ok
		}
	}
	return 0, false
}

// find returns up to n rows (n < 0: all) matching conds, in order, and
// removes them if pop.
func (e *Executor) find(tr kv.Transaction, t *Table, conds []cond, order queues.Order, n int64, pop bool, pr *prepared) ([]row, error) {
	if !pop || pr == nil || pr.token == 0 {
		return e.findOnce(tr, t, conds, order, n, pop, pr)
	}
	items, ok, err := t.Queue.Receipt(tr, pr.token)
	if err != nil {
		return nil, err
	}
	if ok {
		// An earlier attempt of this statement committed its pops.
		out := make([]row, len(items))
		for i, it := range items {
			if out[i], err = e.decoder(pr)(t, it); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	out, err := e.findOnce(tr, t, conds, order, n, pop, pr)
	if err != nil {
		return nil, err
	}
	items = make([]queues.Item, len(out))
	for i, r := range out {
		items[i] = r.item
	}
	return out, t.Queue.RecordReceipt(tr, pr.token, items)
}

// findOnce is find without receipts.
func (e *Executor) findOnce(tr kv.Transaction, t *Table, conds []cond, order queues.Order, n int64, pop bool, pr *prepared) ([]row, error) {
	spread := 0
	if pr != nil {
		spread = pr.spread
	}
	decodeRow := e.decoder(pr)
	var out []row
	if n == 0 {
		return nil, nil
	}
	if id, ok := idLookup(conds); ok {
		it, found, err := t.Queue.Get(tr, id)
		if err != nil || !found {
			return nil, err
		}
		r, err := decodeRow(t, it)
		if err != nil {
			return nil, err
		}
		for _, c := range conds {
			if !c.match(r) {
				return nil, nil
			}
		}
		if pop {
			if _, _, err := t.Queue.Remove(tr, id); err != nil {
				return nil, err
			}
		}
		return []row{r}, nil
	}
	// Pops (and a single fit peek) take one item at a time from the queue.
	var next func() (queues.Item, bool, error)
	if limits, ok := fitLimits(t, conds); ok && (pop || n == 1) {
		next = func() (queues.Item, bool, error) {
			switch {
			case pop && spread > 0 && n == 1:
				return t.Queue.PopFitSpread(tr, order, limits, spread)
			case pop:
				return t.Queue.PopFit(tr, order, limits)
			}
			return t.Queue.PeekFit(tr, order, limits)
		}
	} else if len(conds) == 0 && pop && spread > 0 && n == 1 {
		next = func() (queues.Item, bool, error) { return t.Queue.PopSpread(tr, order, spread) }
	} else if len(conds) == 0 && pop {
		// Plain pops: one ordered pass, not n passes from the head.
		limit := int(min(n, math.MaxInt32))
		if n < 0 {
			limit = math.MaxInt32
		}
		items, err := t.Queue.PopN(tr, order, limit)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			r, err := decodeRow(t, it)
			if err != nil {
				return nil, err
			}
			out = append(out, r)
		}
		return out, nil
	}
	if next != nil {
		for int64(len(out)) < n || n < 0 {
			it, found, err := next()
			if err != nil {
				return nil, err
			}
			if !found {
				break
			}
			r, err := decodeRow(t, it)
			if err != nil {
				return nil, err
			}
			out = append(out, r)
		}
		return out, nil
	}
	err := t.Queue.Scan(tr, order, func(it queues.Item) (bool, error) {
		r, err := decodeRow(t, it)
		if err != nil {
			return false, err
		}
		for _, c := range conds {
			if !c.match(r) {
				return true, nil
			}
		}
		out = append(out, r)
		return n < 0 || int64(len(out)) < n, nil
	})
	if err != nil {
		return nil, err
	}
	if pop {
		for _, r := range out {
			if _, _, err := t.Queue.Remove(tr, r.item.ID); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}
