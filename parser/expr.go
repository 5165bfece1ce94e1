package parser

// Values and conditions: WHERE comparisons, literals, placeholders and
// NOW() [+|- INTERVAL n unit].

import (
	"strconv"
	"strings"
	"time"

	"github.com/xwb1989/sqlparser"
)

func (c *converter) where(w *sqlparser.Where) ([]Cond, error) {
	if w == nil {
		return nil, nil
	}
	var conds []Cond
	var walk func(e sqlparser.Expr) error
	walk = func(e sqlparser.Expr) error {
		switch x := e.(type) {
		case *sqlparser.AndExpr:
			if err := walk(x.Left); err != nil {
				return err
			}
			return walk(x.Right)
		case *sqlparser.ParenExpr:
			return walk(x.Expr)
		case *sqlparser.ComparisonExpr:
			cond, err := c.comparison(x)
			if err != nil {
				return err
			}
			conds = append(conds, cond)
			return nil
		}
		return unsupported("WHERE %s (WHERE is an AND of comparisons column op value, op one of = != < <= > >=)", sqlparser.String(e))
	}
	return conds, walk(w.Expr)
}

var ops = map[string]Op{
	sqlparser.EqualStr: OpEq, sqlparser.NotEqualStr: OpNe,
	sqlparser.LessThanStr: OpLt, sqlparser.LessEqualStr: OpLe,
	sqlparser.GreaterThanStr: OpGt, sqlparser.GreaterEqualStr: OpGe,
}

// flipped is the operator with its operands swapped: 5 < x is x > 5.
var flipped = map[Op]Op{OpEq: OpEq, OpNe: OpNe, OpLt: OpGt, OpLe: OpGe, OpGt: OpLt, OpGe: OpLe}

func (c *converter) comparison(x *sqlparser.ComparisonExpr) (Cond, error) {
	op, ok := ops[x.Operator]
	if !ok || x.Escape != nil {
		return Cond{}, unsupported("operator %s (operators: = != < <= > >=)", strings.ToUpper(x.Operator))
	}
	left, right := x.Left, x.Right
	col, isCol := left.(*sqlparser.ColName)
	if !isCol {
		if col, isCol = right.(*sqlparser.ColName); !isCol {
			return Cond{}, unsupported("comparison %s (compare a column with a value)", sqlparser.String(x))
		}
		right, op = left, flipped[op]
	}
	if !col.Qualifier.IsEmpty() {
		return Cond{}, unsupported("qualified column %s", sqlparser.String(col))
	}
	v, err := c.expr(right)
	if err != nil {
		return Cond{}, err
	}
	return Cond{Column: col.Name.String(), Op: op, Value: v}, nil
}

// expr converts a value expression: a literal or a placeholder.
func (c *converter) expr(e sqlparser.Expr) (Value, error) {
	if v, ok, err := c.now(e); ok || err != nil {
		return v, err
	}
	switch x := e.(type) {
	case *sqlparser.SQLVal:
		return c.value(x)
	case *sqlparser.NullVal:
		return Value{Kind: ValueNull}, nil
	case sqlparser.BoolVal:
		return Value{Kind: ValueBool, Bool: bool(x)}, nil
	case *sqlparser.UnaryExpr:
		if x.Operator == sqlparser.UMinusStr {
			if v, ok := x.Expr.(*sqlparser.SQLVal); ok && (v.Type == sqlparser.IntVal || v.Type == sqlparser.FloatVal) {
				neg := *v
				neg.Val = append([]byte{'-'}, v.Val...)
				return c.value(&neg)
			}
		}
	case *sqlparser.ParenExpr:
		return c.expr(x.Expr)
	}
	return Value{}, unsupported("expression %s (values are literals or placeholders); a time may also be NOW() [+|- INTERVAL n SECOND|MINUTE|HOUR]", sqlparser.String(e))
}

func (c *converter) value(v *sqlparser.SQLVal) (Value, error) {
	s := string(v.Val)
	switch v.Type {
	case sqlparser.StrVal:
		return Value{Kind: ValueString, Str: s}, nil
	case sqlparser.IntVal:
		n, err := strconv.ParseInt(s, 0, 64)
		if err != nil {
			return Value{}, unsupported("integer %s (integers are 64-bit)", s)
		}
		return Value{Kind: ValueInt, Int: n}, nil
	case sqlparser.FloatVal:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return Value{}, unsupported("number %s", s)
		}
		return Value{Kind: ValueFloat, Float: f}, nil
	case sqlparser.HexVal:
		b, err := v.HexDecode()
		if err != nil {
			return Value{}, unsupported("hex literal %s", s)
		}
		return Value{Kind: ValueBytes, Str: string(b)}, nil
	case sqlparser.HexNum:
		n, err := strconv.ParseUint(s[2:], 16, 64)
		if err != nil {
			return Value{}, unsupported("hex number %s", s)
		}
		return Value{Kind: ValueInt, Int: int64(n)}, nil
	case sqlparser.ValArg:
		if !strings.HasPrefix(s, ":") {
			// sqlparser spells CURRENT_TIMESTAMP (and DEFAULT NULL) this way.
			return Value{}, unsupported("%s (values are literals or placeholders)", strings.ToUpper(s))
		}
		name := strings.TrimPrefix(s, ":")
		if c.pp.positional > 0 {
			n, err := strconv.Atoi(strings.TrimPrefix(name, "v"))
			if err != nil {
				return Value{}, unsupported("placeholder %s", s)
			}
			return Value{Kind: ValueArg, Ordinal: n}, nil
		}
		c.addName(name)
		return Value{Kind: ValueArg, Name: name}, nil
	}
	return Value{}, unsupported("literal %s", s)
}

// intervalUnits are the units of NOW() +/- INTERVAL n UNIT.
var intervalUnits = map[string]time.Duration{"second": time.Second, "minute": time.Minute, "hour": time.Hour}

const nowHint = "a time is NOW(), NOW() + INTERVAL n SECOND|MINUTE|HOUR, NOW() - INTERVAL n ..., a time.Time argument or RFC 3339 text"

// now converts NOW() [+|- INTERVAL n UNIT], or says why it is not one.
func (c *converter) now(e sqlparser.Expr) (Value, bool, error) {
	isNow := func(e sqlparser.Expr) (bool, error) {
		f, ok := e.(*sqlparser.FuncExpr)
		if !ok || !f.Name.EqualString("now") || !f.Qualifier.IsEmpty() {
			return false, nil
		}
		if len(f.Exprs) > 0 || f.Distinct {
			return true, unsupported("%s (NOW() takes no arguments; %s)", sqlparser.String(f), nowHint)
		}
		return true, nil
	}
	if ok, err := isNow(e); ok || err != nil {
		return Value{Kind: ValueNow}, ok, err
	}
	b, ok := e.(*sqlparser.BinaryExpr)
	if !ok {
		return Value{}, false, nil
	}
	if ok, err := isNow(b.Left); !ok || err != nil {
		return Value{}, false, err
	}
	iv, isIv := b.Right.(*sqlparser.IntervalExpr)
	sign := map[string]time.Duration{sqlparser.PlusStr: 1, sqlparser.MinusStr: -1}[b.Operator]
	var unit time.Duration
	if isIv {
		unit = intervalUnits[strings.ToLower(iv.Unit)]
	}
	if sign == 0 || unit == 0 {
		return Value{}, true, unsupported("%s (%s)", sqlparser.String(e), nowHint)
	}
	n, err := c.expr(iv.Expr)
	if err != nil {
		return Value{}, true, err
	}
	if n.Kind != ValueInt && n.Kind != ValueFloat && n.Kind != ValueArg {
		return Value{}, true, unsupported("%s (the INTERVAL is a number; %s)", sqlparser.String(e), nowHint)
	}
	return Value{Kind: ValueNow, Interval: &n, Unit: sign * unit}, true, nil
}
