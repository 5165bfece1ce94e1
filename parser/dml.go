package parser

// INSERT, SELECT, DELETE and UPDATE, and their ORDER BY and LIMIT.

import (
	"strconv"
	"strings"

	"github.com/xwb1989/sqlparser"
)

func (c *converter) insert(s *sqlparser.Insert) (Statement, error) {
	if s.Action != sqlparser.InsertStr {
		return nil, unsupported("REPLACE")
	}
	if len(s.OnDup) > 0 {
		return nil, unsupported("ON DUPLICATE KEY UPDATE (rows are not updated in place: INSERT IGNORE skips a row whose unique key is taken; or match driver.ErrDuplicateKey, whose error names the row holding the key, and UPDATE or DELETE that row)")
	}
	if len(s.Partitions) > 0 {
		return nil, unsupported("PARTITION")
	}
	name, err := tableName(s.Table)
	if err != nil {
		return nil, err
	}
	ins := &Insert{Table: name, Ignore: s.Ignore != ""}
	for _, col := range s.Columns {
		ins.Columns = append(ins.Columns, col.String())
	}
	rows, ok := s.Rows.(sqlparser.Values)
	if !ok {
		return c.insertSelect(s, ins) // redrive.go
	}
	for _, tuple := range rows {
		row := make([]Value, len(tuple))
		for i, e := range tuple {
			v, err := c.expr(e)
			if err != nil {
				return nil, err
			}
			row[i] = v
		}
		ins.Rows = append(ins.Rows, row)
	}
	return ins, nil
}

// selectValue recognises SELECT n (an integer literal, FROM DUAL or no
// FROM, nothing else).
func selectValue(s *sqlparser.Select) (*SelectValue, bool) {
	if len(s.SelectExprs) != 1 || s.Where != nil || s.OrderBy != nil || s.Limit != nil || s.Lock != "" {
		return nil, false
	}
	if len(s.From) != 1 || !strings.EqualFold(sqlparser.String(s.From), "dual") {
		return nil, false
	}
	ae, ok := s.SelectExprs[0].(*sqlparser.AliasedExpr)
	if !ok || !ae.As.IsEmpty() {
		return nil, false
	}
	lit, ok := ae.Expr.(*sqlparser.SQLVal)
	if !ok || lit.Type != sqlparser.IntVal {
		return nil, false
	}
	n, err := strconv.ParseInt(string(lit.Val), 10, 64)
	if err != nil {
		return nil, false
	}
	return &SelectValue{Value: n}, true
}

func (c *converter) selectStmt(s *sqlparser.Select) (Statement, error) {
	if s.Distinct != "" || s.Hints != "" || len(s.GroupBy) > 0 || s.Having != nil || s.Cache != "" {
		return nil, unsupported("DISTINCT, GROUP BY, HAVING and hints")
	}
	if s.Lock != "" {
		return nil, unsupported("%s: transactions are serializable already; FOR POP removes the rows a SELECT reads", strings.ToUpper(strings.TrimSpace(s.Lock)))
	}
	if v, ok := selectValue(s); ok {
		return v, nil
	}
	name, err := c.from(s.From)
	if err != nil {
		return nil, err
	}
	sel := &Select{Table: name}
	for _, se := range s.SelectExprs {
		switch e := se.(type) {
		case *sqlparser.StarExpr:
			if !e.TableName.IsEmpty() {
				return nil, unsupported("qualified *")
			}
			sel.Star = true
		case *sqlparser.AliasedExpr:
			if !e.As.IsEmpty() {
				return nil, unsupported("column aliases (AS)")
			}
			switch x := e.Expr.(type) {
			case *sqlparser.ColName:
				if !x.Qualifier.IsEmpty() {
					return nil, unsupported("qualified column %s", sqlparser.String(x))
				}
				sel.Columns = append(sel.Columns, x.Name.String())
			case *sqlparser.FuncExpr:
				if !x.Name.EqualString("count") || x.Distinct || len(x.Exprs) != 1 {
					return nil, unsupported("function %s (the only one is COUNT(*))", sqlparser.String(x))
				}
				if _, star := x.Exprs[0].(*sqlparser.StarExpr); !star {
					return nil, unsupported("%s (the only count is COUNT(*))", sqlparser.String(x))
				}
				sel.Count = true
			default:
				return nil, unsupported("select expression %s (select columns, * or COUNT(*))", sqlparser.String(e))
			}
		default:
			return nil, unsupported("select expression %s", sqlparser.String(se))
		}
	}
	if sel.Count && (sel.Star || len(sel.Columns) > 0 || len(s.SelectExprs) > 1) {
		return nil, unsupported("COUNT(*) with other columns")
	}
	if sel.Star && len(s.SelectExprs) > 1 {
		return nil, unsupported("* with other columns")
	}
	if sel.Where, err = c.where(s.Where); err != nil {
		return nil, err
	}
	if sel.OrderBy, err = c.orderBy(s.OrderBy); err != nil {
		return nil, err
	}
	if sel.Limit, err = c.limit(s.Limit); err != nil {
		return nil, err
	}
	if sel.Count && (sel.OrderBy != nil || sel.Limit != nil) {
		return nil, unsupported("COUNT(*) with ORDER BY or LIMIT")
	}
	return sel, nil
}

func (c *converter) delete(s *sqlparser.Delete) (Statement, error) {
	if len(s.Targets) > 0 || len(s.Partitions) > 0 {
		return nil, unsupported("multi-table DELETE and PARTITION")
	}
	name, err := c.from(s.TableExprs)
	if err != nil {
		return nil, err
	}
	del := &Delete{Table: name}
	if del.Where, err = c.where(s.Where); err != nil {
		return nil, err
	}
	if del.OrderBy, err = c.orderBy(s.OrderBy); err != nil {
		return nil, err
	}
	if del.Limit, err = c.limit(s.Limit); err != nil {
		return nil, err
	}
	return del, nil
}

func (c *converter) update(s *sqlparser.Update) (Statement, error) {
	if len(s.OrderBy) > 0 || s.Limit != nil {
		return nil, unsupported("UPDATE with ORDER BY or LIMIT")
	}
	name, err := c.from(s.TableExprs)
	if err != nil {
		return nil, err
	}
	up := &Update{Table: name}
	for _, ue := range s.Exprs {
		if !ue.Name.Qualifier.IsEmpty() {
			return nil, unsupported("qualified column %s", sqlparser.String(ue.Name))
		}
		v, err := c.expr(ue.Expr)
		if err != nil {
			return nil, err
		}
		up.Set = append(up.Set, Assignment{Column: ue.Name.Name.String(), Value: v})
	}
	if up.Where, err = c.where(s.Where); err != nil {
		return nil, err
	}
	return up, nil
}

func (c *converter) orderBy(ob sqlparser.OrderBy) (*OrderBy, error) {
	if len(ob) == 0 {
		return nil, nil
	}
	if len(ob) > 1 {
		return nil, unsupported("ORDER BY more than one column (queues are ordered by priority)")
	}
	col, ok := ob[0].Expr.(*sqlparser.ColName)
	if !ok || !col.Qualifier.IsEmpty() {
		return nil, unsupported("ORDER BY %s (queues are ordered by priority)", sqlparser.String(ob[0].Expr))
	}
	return &OrderBy{Column: col.Name.String(), Desc: ob[0].Direction == sqlparser.DescScr}, nil
}

func (c *converter) limit(l *sqlparser.Limit) (*Value, error) {
	if l == nil {
		return nil, nil
	}
	if l.Offset != nil {
		return nil, unsupported("OFFSET (a queue is read from its head)")
	}
	v, err := c.expr(l.Rowcount)
	if err != nil {
		return nil, err
	}
	switch v.Kind {
	case ValueInt:
		if v.Int < 0 {
			return nil, unsupported("LIMIT %d (a count, 0 or more)", v.Int)
		}
	case ValueArg:
	default:
		return nil, unsupported("LIMIT %s (a count, 0 or more)", sqlparser.String(l.Rowcount))
	}
	return &v, nil
}
