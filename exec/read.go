package exec

import (
	"fmt"
	"slices"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/parser"
	"github.com/fdbqueue/fdbqueue/queues"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// row is a stored row with its queue item.
type row struct {
	item    queues.Item
	vals    []any // declared columns
	errText any   // _error: nil or a string (errtext.go)
}

// decodeRow decodes a stored row. A row that does not decode (not written
// by insert: by an older version, or another program) is an
// ErrUnreadableRow naming it and how to remove it; statements that need no
// column values (a DELETE by id, say) do not decode rows, so they still
// work on it.
func decodeRow(t *Table, it queues.Item) (row, error) {
	unreadable := func(why string) error {
		return fmt.Errorf("%w: row %d of %s %s (DELETE FROM %s WHERE id = %d removes it)", ErrUnreadableRow, it.ID, t.Name, why, t.Name, it.ID)
	}
	tup, err := tuple.Unpack(it.Value)
	if err != nil {
		return row{}, unreadable(fmt.Sprintf("is not a packed tuple: %v", err))
	}
	var errText any
	if len(tup) == len(t.Columns)+1 { // an _error follows the columns
		s, ok := tup[len(t.Columns)].(string)
		if !ok {
			return row{}, unreadable(fmt.Sprintf("has an _error that is not text (%T)", tup[len(t.Columns)]))
		}
		errText = s
		tup = tup[:len(t.Columns)]
	}
	if len(tup) != len(t.Columns) {
		return row{}, unreadable(fmt.Sprintf("has %d values for %d columns", len(tup), len(t.Columns)))
	}
	vals := make([]any, len(tup))
	for i, el := range tup {
		if vals[i], err = decodeValue(t.Columns[i].Type, el); err != nil {
			return row{}, unreadable(fmt.Sprintf("column %s %v", t.Columns[i].Name, err))
		}
	}
	if t.Priority >= 0 {
		vals[t.Priority] = it.Priority // UPDATE moves the item without rewriting the row
	}
	return row{item: it, vals: vals, errText: errText}, nil
}

// decode decodes a row the statement found: not at all when it needs ids
// only.
func (s *stmtCtx) decode(it queues.Item) (row, error) {
	if s.idsOnly {
		return row{item: it}, nil
	}
	return decodeRow(s.t, it)
}

func (s *stmtCtx) decodeAll(items []queues.Item) ([]row, error) {
	out := make([]row, 0, len(items))
	for _, it := range items {
		r, err := s.decode(it)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// idsOnly reports whether a statement projecting proj (column indexes,
// negative for pseudo-columns) with conds reads no column values: no
// declared column, nor _error, which is kept with them.
func idsOnly(proj []int, conds []cond) bool {
	for _, i := range proj {
		if i >= 0 || i == colError {
			return false
		}
	}
	for _, c := range conds {
		if c.col >= 0 || c.col == colError {
			return false
		}
	}
	return true
}

// query is a SELECT bound to its table: the columns it returns and the
// plan that finds its rows.
type query struct {
	res  *Result // columns only
	proj []int   // column indexes, -1 for id; nil for COUNT(*)
	plan plan
}

// planSelect binds a SELECT and chooses its plan.
func (s *stmtCtx) planSelect(st *parser.Select) (*query, error) {
	t := s.t
	conds, err := s.where(st.Where)
	if err != nil {
		return nil, err
	}
	if st.Count {
		return &query{
			res:  &Result{HasRows: true, Columns: []string{"COUNT(*)"}, Types: []parser.Type{parser.TypeInt}, Nullable: []bool{false}, Lengths: []int{0}},
			plan: choosePlan(t, conds, queues.Min, -1, goalCount, s.b.spread, s.b.now),
		}, nil
	}
	// The projection: * is the declared columns; id is selectable.
	cols := len(st.Columns)
	if st.Star {
		cols += len(t.Columns)
	}
	q := &query{proj: make([]int, 0, cols), res: &Result{HasRows: true,
		Columns: make([]string, 0, cols), Types: make([]parser.Type, 0, cols),
		Nullable: make([]bool, 0, cols), Lengths: make([]int, 0, cols)}}
	add := func(i int) {
		q.proj = append(q.proj, i)
		c := t.columnDef(i)
		nullable := !c.NotNull && (i < 0 || i != t.Priority && !slices.Contains(t.Resources, i))
		q.res.Columns = append(q.res.Columns, c.Name)
		q.res.Types = append(q.res.Types, c.Type)
		q.res.Nullable = append(q.res.Nullable, nullable)
		q.res.Lengths = append(q.res.Lengths, c.Length)
	}
	if st.Star {
		for i := range t.Columns {
			add(i)
		}
	}
	for _, name := range st.Columns {
		i, err := t.column(name)
		if err != nil {
			return nil, err
		}
		add(i)
	}
	order, n, err := s.orderLimit(st.OrderBy, st.Limit)
	if err != nil {
		return nil, err
	}
	s.idsOnly = idsOnly(q.proj, conds)
	g := goalRead
	switch {
	case st.ForPop:
		g = goalPop
	case st.Lease != nil:
		g = goalLease
	}
	q.plan = choosePlan(t, conds, order, n, g, s.b.spread, s.b.now)
	if g == goalPop {
		q.plan = s.freeing(q.plan) // unique keys (unique.go)
	}
	return q, nil
}

func (e *Executor) selectRows(tr kv.Transaction, st *parser.Select, b *bound) (*Result, error) {
	if isSystemTable(st.Table) {
		return e.selectQueues(tr, st, b)
	}
	s, err := e.stmt(tr, st.Table, b)
	if err != nil {
		return nil, err
	}
	if err := s.checkWaitTable(); err != nil {
		return nil, err
	}
	q, err := s.planSelect(st)
	if err != nil {
		return nil, err
	}
	res := q.res
	if st.Count {
		_, n, err := q.plan.run(s)
		if err != nil {
			return nil, err
		}
		res.Rows = [][]any{{n}}
		return res, nil
	}
	var rows []row
	if st.Takes() && b.token.ID != 0 {
		rows, err = s.popOnce(q.plan)
	} else if rows, _, err = q.plan.run(s); err == nil {
		s.countTaken(rows)
	}
	if err == nil && st.Takes() {
		err = s.armWait(rows, q.plan)
	}
	if err != nil {
		return nil, err
	}
	res.Rows = make([][]any, len(rows))
	for k, r := range rows {
		out := make([]any, len(q.proj))
		for j, i := range q.proj {
			out[j] = r.value(i)
		}
		res.Rows[k] = out
	}
	if st.Takes() {
		res.RowsAffected = int64(len(rows))
	}
	if st.ForPop {
		res.popped = popped{t: s.t, rows: rows}
	}
	return res, nil
}

// popOnce runs a pop's plan with a receipt under the statement's token: a
// retry after commit_unknown_result whose first attempt committed returns
// what that attempt popped instead of popping again.
func (s *stmtCtx) popOnce(p plan) ([]row, error) {
	items, ok, err := s.t.Queue.Receipt(s.tr, s.b.token)
	if err != nil {
		return nil, err
	}
	if ok {
		// An earlier attempt of this statement committed its pops.
		return s.decodeAll(items)
	}
	rows, _, err := p.run(s)
	if err != nil {
		return nil, err
	}
	s.countTaken(rows)
	items = make([]queues.Item, len(rows))
	for i, r := range rows {
		items[i] = r.item
	}
	return rows, s.t.Queue.RecordReceipt(s.tr, s.b.token, items)
}
