package exec

import (
	"errors"
	"fmt"
	"strings"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/parser"
)

// INSERT INTO t [(columns)] SELECT ... FROM s [WHERE] [ORDER BY] LIMIT n
// [FOR POP]: rows copied from s into t, or moved with FOR POP, in one
// transaction: a redrive of dead letters (INSERT INTO jobs SELECT * FROM
// jobs_dead ... FOR POP), or any copy between tables of compatible columns.
//
// The SELECT runs as that SELECT alone would (its plan: a scan, a pop, a
// read by id ...): with FOR POP it takes visible rows and removes them, as
// a pop; without, it reads rows visible or not. Its rows are then inserted
// into t as an INSERT giving their values would insert them (insert:
// conversions, DEFAULTs, NOT NULL, sizes, ids). The INSERT's columns (t's
// declared columns without a list) take the SELECT's, in order, and each
// pair must have the same type, pseudo-columns included (id and _attempts
// INT, _visible_at TIMESTAMP, _error TEXT): a mismatch is refused, naming
// the pair, before anything is read. What the list leaves out is what an
// INSERT leaves out: a new id, _attempts 0 (a redriven row starts its
// attempts again, and MAX_ATTEMPTS with them), visible at once, no _error.
//
// Exactly-once: in autocommit, where commits may be of unknown outcome,
// the statement's token records one receipt in t's queue, in the
// transaction that inserts (and pops): how many rows, and the last id. An
// attempt after commit_unknown_result looks it up first and reports what
// the committed attempt did, without selecting or inserting again. The pop
// records no receipt of its own: this one answers for both. An attempt
// that was not applied leaves nothing, and the next inserts with ids of
// its own, as a retried transaction does.
//
// LIMIT is required, at most parser.MaxInsertSelect: the rows are written
// in one transaction, which holds at most 10 MB and lasts at most 5
// seconds; past either, the error says to redrive in smaller batches.

// insertSelectLimit checks the LIMIT of an INSERT ... SELECT, bound.
func insertSelectLimit(b *bound, st *parser.InsertSelect) error {
	v, err := convert(&Column{Name: "LIMIT", Type: parser.TypeInt, NotNull: true}, b.value(*st.Source.Limit))
	if n, _ := v.(int64); err != nil || v == nil || n < 0 || n > parser.MaxInsertSelect {
		return fmt.Errorf("%w: LIMIT %v of an INSERT ... SELECT: it is a count from 0 to %d (the rows are written in one transaction: at most 10 MB of writes and 5 seconds)", ErrValue, short(b.value(*st.Source.Limit)), parser.MaxInsertSelect)
	}
	return nil
}

// insertSelect runs an INSERT ... SELECT in tr.
func (e *Executor) insertSelect(tr kv.Transaction, st *parser.InsertSelect, b *bound) (*Result, error) {
	src, dst, q, cols, err := e.planInsertSelect(tr, st, b)
	if err != nil {
		return nil, err
	}
	if ns, ok, err := dst.Queue.CountsReceipt(tr, b.token); err != nil || ok {
		if err != nil || len(ns) != 2 {
			return nil, fmt.Errorf("%w: INSERT ... SELECT's receipt holds %d numbers (%v)", ErrCatalog, len(ns), err)
		}
		return &Result{RowsAffected: ns[0], LastInsertID: ns[1]}, nil
	}
	rows, _, err := q.plan.run(src)
	if err != nil {
		return nil, err
	}
	if st.Source.ForPop {
		src.countPopped(rows)
	}
	res := &Result{RowsAffected: int64(len(rows))}
	if len(rows) > 0 {
		// The rows' values, as the arguments of an INSERT of them.
		ins := &parser.Insert{Table: st.Table, Columns: cols, Ignore: st.Ignore, Rows: make([][]parser.Value, len(rows))}
		args := make([]any, 0, len(rows)*len(cols))
		for r, row := range rows {
			vals := make([]parser.Value, len(q.proj))
			for k, i := range q.proj {
				args = append(args, row.value(i))
				vals[k] = parser.Value{Kind: parser.ValueArg, Ordinal: len(args)}
			}
			ins.Rows[r] = vals
		}
		// No token: this statement's receipt is below.
		ids, err := e.newIDs(tr.Context(), len(rows))
		if err != nil {
			return nil, err
		}
		ib := &bound{args: Args{Positional: args}, ids: ids, now: b.now}
		ires, err := e.insert(tr, ins, ib)
		if err != nil {
			var re *RowError
			if errors.As(err, &re) && re.Row >= 1 && re.Row <= len(rows) {
				err = &RowError{re.Row, &within{fmt.Sprintf("the SELECT's row with id %d of %s", rows[re.Row-1].item.ID, src.t.Name), re.Err}}
			}
			return nil, err
		}
		res.RowsAffected, res.LastInsertID = ires.RowsAffected, ires.LastInsertID // IGNORE: fewer
	}
	if err := dst.Queue.RecordCounts(tr, b.token, res.RowsAffected, res.LastInsertID); err != nil {
		return nil, err
	}
	return res, nil
}

// planInsertSelect binds the SELECT of an INSERT ... SELECT to its table,
// chooses its plan, and checks its columns against the INSERT's: it
// returns the SELECT's run, the table the rows go to, the SELECT's query,
// and the INSERT's column names.
func (e *Executor) planInsertSelect(tr kv.Transaction, st *parser.InsertSelect, b *bound) (src *stmtCtx, dst *Table, q *query, cols []string, err error) {
	if err := insertSelectLimit(b, st); err != nil {
		return nil, nil, nil, nil, err
	}
	if src, err = e.stmt(tr, st.Source.Table, b); err != nil {
		return nil, nil, nil, nil, err
	}
	if q, err = src.planSelect(st.Source); err != nil {
		return nil, nil, nil, nil, err
	}
	if dst, err = e.cat.table(tr, st.Table); err != nil {
		return nil, nil, nil, nil, err
	}
	cols = st.Columns
	if cols == nil {
		for _, c := range dst.Columns {
			cols = append(cols, c.Name)
		}
	}
	if len(cols) != len(q.proj) {
		return nil, nil, nil, nil, fmt.Errorf("%w: INSERT INTO %s names %d columns (%s), its SELECT %d (%s): each column takes the SELECT's column at its place", ErrStatement, dst.Name, len(cols), strings.Join(cols, ", "), len(q.proj), strings.Join(q.res.Columns, ", "))
	}
	for k, name := range cols {
		i, err := dst.column(name)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		to := dst.columnDef(i)
		if from := q.res.Types[k]; to.Type != from {
			return nil, nil, nil, nil, fmt.Errorf("%w: column %s of %s is %s; the SELECT gives it %s of %s, %s (INSERT ... SELECT copies between columns of the same type)", ErrStatement, to.Name, dst.Name, to.Type, q.res.Columns[k], src.t.Name, from)
		}
	}
	return src, dst, q, cols, nil
}

// insertSelectLimits adds to an INSERT ... SELECT's error past a
// transaction's limits what to do instead.
func insertSelectLimits(st *parser.InsertSelect, err error) error {
	switch kv.Code(err) {
	case kv.ErrTransactionTooLarge.Code, kv.CodeTransactionTooOld:
		return fmt.Errorf("%w; an INSERT ... SELECT copies its rows (and with FOR POP removes them) in one transaction, which writes at most 10 MB and lasts at most 5 seconds: redrive in smaller batches, INSERT INTO %s ... SELECT ... FROM %s ... LIMIT n with a smaller n, repeated until it inserts 0 rows", err, st.Table, st.Source.Table)
	}
	return err
}

// insertSelectPlan shows an INSERT ... SELECT's plan: where its rows go,
// and its SELECT's plan.
func insertSelectPlan(st *parser.InsertSelect, q *query) string {
	return fmt.Sprintf("insertSelect(into=%s, %v)", st.Table, q.plan)
}
