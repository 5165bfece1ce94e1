package exec

import (
	"fmt"
	"strings"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/parser"
)

func (e *Executor) deleteRows(tr kv.Transaction, st *parser.Delete, pr *prepared) (*Result, error) {
	t, err := e.cat.table(tr, st.Table)
	if err != nil {
		return nil, err
	}
	conds, err := e.bindWhere(t, st.Where, pr)
	if err != nil {
		return nil, err
	}
	order, err := e.order(t, st.OrderBy)
	if err != nil {
		return nil, err
	}
	n, err := e.limit(st.Limit, pr)
	if err != nil {
		return nil, err
	}
	// A DELETE reports only how many rows it removed, so in autocommit its
	// receipt is that count: a retry after commit_unknown_result reports
	// what the committed attempt did (see Auto).
	if pr.token != 0 {
		if count, ok, err := t.Queue.CountReceipt(tr, pr.token); err != nil || ok {
			return &Result{RowsAffected: count}, err
		}
	}
	pr.idsOnly = idsOnly(nil, conds)
	var count int64
	if len(conds) == 0 && n < 0 {
		if count, err = t.Queue.Count(tr); err != nil {
			return nil, err
		}
		t.Queue.ClearItems(tr)
	} else {
		rows, err := e.findOnce(tr, t, conds, order, n, true, pr)
		if err != nil {
			return nil, err
		}
		count = int64(len(rows))
	}
	if pr.token != 0 {
		if err := t.Queue.RecordCount(tr, pr.token, count); err != nil {
			return nil, err
		}
	}
	return &Result{RowsAffected: count}, nil
}

func (e *Executor) update(tr kv.Transaction, st *parser.Update, pr *prepared) (*Result, error) {
	t, err := e.cat.table(tr, st.Table)
	if err != nil {
		return nil, err
	}
	const form = "the only UPDATE is UPDATE t SET priority = v WHERE id = v"
	if t.Priority < 0 {
		return nil, fmt.Errorf("%w: %s is a FIFO table (no priority column); %s", ErrStatement, t.Name, form)
	}
	if len(st.Set) != 1 || !strings.EqualFold(st.Set[0].Column, t.Columns[t.Priority].Name) {
		return nil, fmt.Errorf("%w: %s", ErrStatement, form)
	}
	conds, err := e.bindWhere(t, st.Where, pr)
	if err != nil {
		return nil, err
	}
	id, ok := idLookup(conds)
	if !ok || len(conds) != 1 {
		return nil, fmt.Errorf("%w: %s", ErrStatement, form)
	}
	v, err := convert(&t.Columns[t.Priority], pr.bind(st.Set[0].Value))
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, fmt.Errorf("%w: priority cannot be NULL", ErrValue)
	}
	moved, err := t.Queue.Move(tr, id, v.(int64))
	if err != nil {
		return nil, err
	}
	res := &Result{}
	if moved {
		res.RowsAffected = 1
	}
	return res, nil
}
