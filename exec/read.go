package exec

import (
	"fmt"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/parser"
	"github.com/fdbqueue/fdbqueue/queues"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// row is a stored row with its queue item.
type row struct {
	item queues.Item
	vals []any // declared columns
}

// decodeRow decodes a stored row. A row that does not decode (not written
// by insert: by an older version, or another program) is an
// ErrUnreadableRow naming it and how to remove it; statements that need no
// column values (a DELETE by id, say) do not decode rows, so they still
// work on it.
func (e *Executor) decodeRow(t *Table, it queues.Item) (row, error) {
	unreadable := func(why string) error {
		return fmt.Errorf("%w: row %d of %s %s (DELETE FROM %s WHERE id = %d removes it)", ErrUnreadableRow, it.ID, t.Name, why, t.Name, it.ID)
	}
	tup, err := tuple.Unpack(it.Value)
	if err != nil {
		return row{}, unreadable(fmt.Sprintf("is not a packed tuple: %v", err))
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
	return row{item: it, vals: vals}, nil
}

// decoder returns how the statement decodes rows: not at all when it needs
// ids only.
func (e *Executor) decoder(pr *prepared) func(*Table, queues.Item) (row, error) {
	if pr != nil && pr.idsOnly {
		return func(_ *Table, it queues.Item) (row, error) { return row{item: it}, nil }
	}
	return e.decodeRow
}

func (e *Executor) selectRows(tr kv.Transaction, st *parser.Select, pr *prepared) (*Result, error) {
	t, err := e.cat.table(tr, st.Table)
	if err != nil {
		return nil, err
	}
	conds, err := e.bindWhere(t, st.Where, pr)
	if err != nil {
		return nil, err
	}
	if st.Count {
		res := &Result{HasRows: true, Columns: []string{"COUNT(*)"}, Types: []parser.Type{parser.TypeInt}, Nullable: []bool{false}, Lengths: []int{0}}
		var n int64
		if len(conds) == 0 {
			n, err = t.Queue.Count(tr)
		} else {
			var rows []row
			rows, err = e.find(tr, t, conds, queues.Min, -1, false, nil)
			n = int64(len(rows))
		}
		if err != nil {
			return nil, err
		}
		res.Rows = [][]any{{n}}
		return res, nil
	}
	// The projection: * is the declared columns; id is selectable.
	var proj []int
	res := &Result{HasRows: true}
	add := func(i int) {
		proj = append(proj, i)
		c := &idColumn
		if i >= 0 {
			c = &t.Columns[i]
		}
		nullable := !c.NotNull && i >= 0 && i != t.Priority && !slicesContains(t.Resources, i)
		res.Columns = append(res.Columns, c.Name)
		res.Types = append(res.Types, c.Type)
		res.Nullable = append(res.Nullable, nullable)
		res.Lengths = append(res.Lengths, c.Length)
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
	order, err := e.order(t, st.OrderBy)
	if err != nil {
		return nil, err
	}
	n, err := e.limit(st.Limit, pr)
	if err != nil {
		return nil, err
	}
	pr.idsOnly = idsOnly(proj, conds)
	rows, err := e.find(tr, t, conds, order, n, st.ForPop, pr)
	if err != nil {
		return nil, err
	}
	res.Rows = make([][]any, len(rows))
	for k, r := range rows {
		out := make([]any, len(proj))
		for j, i := range proj {
			if i < 0 {
				out[j] = r.item.ID
			} else {
				out[j] = r.vals[i]
			}
		}
		res.Rows[k] = out
	}
	if st.ForPop {
		res.RowsAffected = int64(len(rows))
	}
	return res, nil
}
