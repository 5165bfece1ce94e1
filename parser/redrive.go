package parser

// INSERT INTO t [(cols)] SELECT ... FROM source ... LIMIT n [FOR POP]: rows
// copied, or moved, from one table into another in one statement (a
// redrive of dead letters, say).

import (
	"fmt"
	"strings"

	"github.com/xwb1989/sqlparser"
)

// InsertSelect is INSERT INTO table [(columns)] SELECT ... FROM source
// [WHERE] [ORDER BY] LIMIT n [FOR POP]: the rows the SELECT returns (and,
// with FOR POP, removes), inserted in the same transaction. Source's
// Lease and Wait are nil; its Limit is set.
type InsertSelect struct {
	Table   string
	Columns []string // nil: all columns, in table order
	// Ignore is INSERT IGNORE's: a row whose unique key is taken is
	// skipped. Refused with FOR POP, which would remove it.
	Ignore bool
	Source *Select
}

func (*InsertSelect) statement() {}

// MaxInsertSelect is the largest LIMIT of an INSERT ... SELECT: the rows
// it copies are written in one transaction, which holds at most 10 MB of
// writes and lasts at most 5 seconds.
const MaxInsertSelect = 10_000

// insertSelectHint says what INSERT ... SELECT takes, for errors.
const insertSelectHint = "INSERT INTO t [(columns)] SELECT columns|* FROM source [WHERE ...] [ORDER BY priority] LIMIT n [FOR POP], n at most 10,000 (one transaction: at most 10 MB of writes and 5 seconds)"

// insertSelect converts an INSERT whose rows come from a SELECT: the SELECT
// as any other (selectStmt), which must read a table.
func (c *converter) insertSelect(s *sqlparser.Insert, ins *Insert) (Statement, error) {
	sel, ok := s.Rows.(*sqlparser.Select)
	if !ok {
		return nil, unsupported("INSERT ... %s (the rows of an INSERT come from VALUES or one SELECT: %s)", strings.ToUpper(strings.Fields(sqlparser.String(s.Rows))[0]), insertSelectHint)
	}
	st, err := c.selectStmt(sel)
	if err != nil {
		return nil, err
	}
	src, ok := st.(*Select)
	if !ok || src.Count {
		return nil, unsupported("INSERT ... %s (the SELECT reads rows of a table: %s)", sqlparser.String(sel), insertSelectHint)
	}
	return &InsertSelect{Table: ins.Table, Columns: ins.Columns, Ignore: ins.Ignore, Source: src}, nil
}

// trailing takes the pre-pass's trailing clause into an INSERT ... SELECT:
// FOR POP moves the rows; FOR LEASE and WAIT are refused. The SELECT needs
// its LIMIT, at most MaxInsertSelect when it is a literal (exec checks a
// placeholder's).
func (is *InsertSelect) trailing(pp *prepass) error {
	switch {
	case pp.lease != nil:
		return unsupported("INSERT ... SELECT ... FOR LEASE: the rows are copied, or moved with FOR POP; lease them from %s afterwards", is.Table)
	case pp.wait != nil:
		return unsupported("INSERT ... SELECT ... WAIT: an INSERT ... SELECT takes the rows there are; %s", insertSelectHint)
	}
	is.Source.ForPop = pp.forPop
	if is.Ignore && is.Source.ForPop {
		return unsupported("INSERT IGNORE ... SELECT ... FOR POP: a row skipped for its unique key would be removed from %s and lost; move the rows whose keys are free (a WHERE that leaves the others), or copy with INSERT IGNORE ... SELECT without FOR POP and delete what was copied", is.Source.Table)
	}
	l := is.Source.Limit
	switch {
	case l == nil:
		return unsupported("INSERT ... SELECT without LIMIT: %s", insertSelectHint)
	case l.Kind == ValueInt && l.Int > MaxInsertSelect:
		return fmt.Errorf("%w: LIMIT %d of an INSERT ... SELECT: %s", ErrValue, l.Int, insertSelectHint)
	}
	return nil
}
