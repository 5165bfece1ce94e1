package exec

import (
	"fmt"
	"strings"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/parser"
)

// planDelete binds a DELETE and chooses its plan.
func (s *stmtCtx) planDelete(st *parser.Delete) (plan, error) {
	conds, err := s.where(st.Where)
	if err != nil {
		return nil, err
	}
	order, n, err := s.orderLimit(st.OrderBy, st.Limit)
	if err != nil {
		return nil, err
	}
	s.idsOnly = idsOnly(nil, conds)
	return choosePlan(s.t, conds, order, n, goalDelete, s.b.spread), nil
}

func (e *Executor) deleteRows(tr kv.Transaction, st *parser.Delete, b *bound) (*Result, error) {
	s, err := e.stmt(tr, st.Table, b)
	if err != nil {
		return nil, err
	}
	p, err := s.planDelete(st)
	if err != nil {
		return nil, err
	}
	// A DELETE reports only how many rows it removed, so in autocommit its
	// receipt is that count: a retry after commit_unknown_result reports
	// what the committed attempt did (see Auto).
	if b.token != 0 {
		if count, ok, err := s.t.Queue.CountReceipt(tr, b.token); err != nil || ok {
			return &Result{RowsAffected: count}, err
		}
	}
	_, count, err := p.run(s)
	if err != nil {
		return nil, err
	}
	if b.token != 0 {
		if err := s.t.Queue.RecordCount(tr, b.token, count); err != nil {
			return nil, err
		}
	}
	return &Result{RowsAffected: count}, nil
}

// planUpdate binds the one UPDATE there is, of a row's priority by its id.
func (s *stmtCtx) planUpdate(st *parser.Update) (plan, error) {
	t := s.t
	const form = "the only UPDATE is UPDATE t SET priority = v WHERE id = v"
	if t.Priority < 0 {
		return nil, fmt.Errorf("%w: %s is a FIFO table (no priority column); %s", ErrStatement, t.Name, form)
	}
	if len(st.Set) != 1 || !strings.EqualFold(st.Set[0].Column, t.Columns[t.Priority].Name) {
		return nil, fmt.Errorf("%w: %s", ErrStatement, form)
	}
	conds, err := s.where(st.Where)
	if err != nil {
		return nil, err
	}
	id, ok := idLookup(conds)
	if !ok || len(conds) != 1 {
		return nil, fmt.Errorf("%w: %s", ErrStatement, form)
	}
	v, err := convert(&t.Columns[t.Priority], s.b.value(st.Set[0].Value))
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, fmt.Errorf("%w: priority cannot be NULL", ErrValue)
	}
	return moveByID{id: id, priority: v.(int64)}, nil
}

func (e *Executor) update(tr kv.Transaction, st *parser.Update, b *bound) (*Result, error) {
	s, err := e.stmt(tr, st.Table, b)
	if err != nil {
		return nil, err
	}
	p, err := s.planUpdate(st)
	if err != nil {
		return nil, err
	}
	_, n, err := p.run(s)
	if err != nil {
		return nil, err
	}
	return &Result{RowsAffected: n}, nil
}
