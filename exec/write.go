package exec

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/parser"
	"github.com/fdbqueue/fdbqueue/queues"
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
	return s.freeing(choosePlan(s.t, conds, order, n, goalDelete, s.b.spread, s.b.now)), nil
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
	if count, ok, err := s.t.Queue.CountReceipt(tr, b.token); err != nil || ok {
		return &Result{RowsAffected: count}, err
	}
	_, count, err := p.run(s)
	if err != nil {
		return nil, err
	}
	s.countDeleted(st, count)
	if err := s.t.Queue.RecordCount(tr, b.token, count); err != nil {
		return nil, err
	}
	return &Result{RowsAffected: count}, nil
}

// planUpdate binds the UPDATEs there are: of a row's priority by its id,
// and of its _visible_at and _error (see planSetVisible).
func (s *stmtCtx) planUpdate(st *parser.Update) (plan, error) {
	t := s.t
	pseudo := 0 // _visible_at and _error assignments
	for _, a := range st.Set {
		if i, ok := pseudoColumn(a.Column); ok {
			if i == colLease || i == colAttempts || i == colID {
				return nil, readOnlyColumn(t.columnDef(i).Name)
			}
			pseudo++
		}
	}
	switch {
	case pseudo == len(st.Set):
		return s.planSetVisible(st)
	case pseudo > 0:
		return nil, fmt.Errorf("%w: %s; %s", ErrStatement, "an UPDATE sets priority alone, or _visible_at and _error", updateForms)
	}
	const form = updateForms
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
	if err := nullKey(conds); err != nil {
		return nil, err
	}
	id, ok := idLookup(conds)
	if !ok || len(conds) != 1 {
		return nil, fmt.Errorf("%w: %s", ErrStatement, form)
	}
	v, err := s.b.convert(&t.Columns[t.Priority], st.Set[0].Value)
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

// nullKey reports a WHERE id = NULL or _lease = NULL of an UPDATE by id:
// the statement has the right shape, but its value is never a row's.
func nullKey(conds []cond) error {
	for _, c := range conds {
		if (c.col == colID || c.col == colLease) && c.op == parser.OpEq && c.val == nil {
			return fmt.Errorf("%w: WHERE %s = NULL: a row's %s is never NULL; bind the row's %s", ErrValue, c.name, c.name, c.name)
		}
	}
	return nil
}

// updateForms are the UPDATEs there are, for errors.
const updateForms = "the UPDATEs are UPDATE t SET priority = v WHERE id = v, and UPDATE t SET _visible_at = v [, _error = v] WHERE id = v [AND _lease = v] (_visible_at NULL: after the table's BACKOFF)"

// planSetVisible binds UPDATE t SET _visible_at = v [, _error = v] WHERE
// id = v [AND _lease = v], and UPDATE t SET _error = v WHERE ...: a
// heartbeat or release of a lease when _lease is given, and of the row
// whoever holds it when it is not; with _error, the error it records.
func (s *stmtCtx) planSetVisible(st *parser.Update) (plan, error) {
	p := setVisible{}
	var sets []string
	for _, a := range st.Set {
		i, _ := pseudoColumn(a.Column)
		name := pseudoColumns[i].Name
		if slices.Contains(sets, name) {
			return nil, fmt.Errorf("%w: UPDATE sets %s twice", ErrStatement, name)
		}
		sets = append(sets, name)
		v, err := s.b.convert(pseudoColumns[i], a.Value)
		if err != nil {
			return nil, err
		}
		switch {
		case i == colError:
			if p.errText, err = checkError(v); err != nil {
				return nil, err
			}
			p.setErr = true
		case v == nil:
			// A release without a time: after the table's backoff for the
			// row's attempts, at once without one (backoff.go).
			p.setAt, p.backoff = true, true
		default:
			p.setAt, p.at = true, v.(time.Time)
			if err := checkVisibleAt(p.at); err != nil {
				return nil, err
			}
		}
	}
	what := "UPDATE of " + strings.Join(sets, " and ")
	conds, err := s.where(st.Where)
	if err != nil {
		return nil, err
	}
	if err := nullKey(conds); err != nil {
		return nil, err
	}
	var hasID bool
	for _, c := range conds {
		switch {
		case c.col == colID && c.op == parser.OpEq && !hasID && c.val != nil:
			p.id, hasID = c.val.(int64), true
		case c.col == colLease && c.op == parser.OpEq && p.lease == nil && c.val != nil:
			l := c.val.(int64)
			p.lease = &l
		default:
			return nil, fmt.Errorf("%w: %s WHERE %s; it takes WHERE id = v [AND _lease = v] (one row, by id)", ErrStatement, what, c)
		}
	}
	if !hasID {
		return nil, fmt.Errorf("%w: %s without WHERE id = v; it takes WHERE id = v [AND _lease = v] (one row, by id)", ErrStatement, what)
	}
	return p, nil
}

// setVisible sets the _visible_at (if setAt) and the _error (if setErr)
// of the row with id, if its _lease is lease (when set): UPDATE t SET
// _visible_at = v [, _error = v] WHERE id = v [AND _lease = v]. With
// backoff (_visible_at = NULL) the time is the statement's plus the
// backoff of the row's attempts.
type setVisible struct {
	id             int64
	lease          *int64
	setAt, backoff bool
	at             time.Time
	setErr         bool
	errText        any
}

func (p setVisible) run(s *stmtCtx) ([]row, int64, error) {
	set := s.t.Queue.SetVisibleWith
	if p.backoff {
		set = s.t.Queue.ReleaseWith // a release after the backoff ends the lease
	}
	ok, err := set(s.tr, p.id, func(it queues.Item) (time.Time, []byte, bool, error) {
		if p.lease != nil && it.Lease != *p.lease {
			return time.Time{}, nil, false, nil // the lease was lost
		}
		at := it.VisibleAt
		switch {
		case p.backoff:
			at = s.b.now.Add(s.t.backoffDelay(it.ID, it.Attempts))
		case p.setAt:
			at = p.at
		}
		var value []byte
		if p.setErr {
			var err error
			if value, err = withError(s.t, it, p.errText); err != nil {
				return time.Time{}, nil, false, err
			}
		}
		return at, value, true, nil
	})
	if err != nil || !ok {
		return nil, 0, err
	}
	return nil, 1, nil
}

func (p setVisible) String() string {
	args := []string{fmt.Sprintf("id=%d", p.id)}
	if p.lease != nil {
		args = append(args, fmt.Sprintf("lease=%d", *p.lease))
	}
	switch {
	case p.backoff:
		args = append(args, "at=backoff")
	case p.setAt:
		args = append(args, "at="+sqlLiteral(p.at))
	}
	if p.setErr {
		args = append(args, "error="+sqlLiteral(p.errText))
	}
	return "setVisible(" + strings.Join(args, ", ") + ")"
}
