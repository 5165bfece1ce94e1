package exec

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/fdbqueue/fdbqueue/parser"
	"github.com/fdbqueue/fdbqueue/queues"
)

// cond is a bound WHERE comparison.
type cond struct {
	col  int    // -1: id
	name string // the column as declared, for plans
	op   parser.Op
	val  any // nil: compares with NULL, never true
}

// String renders c as a plan shows it: name, operator, value as SQL.
func (c cond) String() string {
	return c.name + c.op.String() + sqlLiteral(c.val)
}

// sqlLiteral shows a bound value as SQL writes it.
func sqlLiteral(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		return "'" + strings.ReplaceAll(x, "'", "''") + "'"
	case []byte:
		return fmt.Sprintf("x'%x'", x)
	case time.Time:
		return "'" + x.Format(time.RFC3339Nano) + "'"
	}
	return fmt.Sprint(v)
}

// match reports whether r satisfies c.
func (c cond) match(r row) bool {
	v := r.value(c.col)
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

// where binds a WHERE to the statement's table and arguments: each value
// converted to its column's type.
func (s *stmtCtx) where(where []parser.Cond) ([]cond, error) {
	t := s.t
	out := make([]cond, 0, len(where))
	for _, w := range where {
		i, err := t.column(w.Column)
		if err != nil {
			return nil, err
		}
		col := t.columnDef(i)
		if col.Type == parser.TypeInt && w.Value.Kind != parser.ValueNow {
			if f, ok := s.b.value(w.Value).(float64); ok && !isInt64(f) && !math.IsNaN(f) {
				op, n := intBound(w.Op, f)
				out = append(out, cond{col: i, name: col.Name, op: op, val: n})
				continue
			}
		}
		v, err := s.b.convert(col, w.Value)
		if err != nil {
			return nil, &within{fmt.Sprintf("WHERE %s %s", w.Column, w.Op), err}
		}
		out = append(out, cond{col: i, name: col.Name, op: w.Op, val: v})
	}
	return out, nil
}

// isInt64 reports whether f is an integer an int64 holds.
func isInt64(f float64) bool {
	return f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64
}

// intBound rewrites a comparison of an integer column with f, a number
// no int64 equals (a fraction, or beyond int64's range), as the
// comparison with an int64 that holds for the same integers: cpu <= 2.5
// is cpu <= 2, cpu > 2.5 is cpu >= 3, and a capacity past the range bounds
// nothing. No integer equals f, and every one differs from it.
func intBound(op parser.Op, f float64) (parser.Op, int64) {
	const top = float64(math.MaxInt64) // 2^63, the first float above the range
	switch op {
	case parser.OpLe, parser.OpLt:
		switch fl := math.Floor(f); {
		case fl >= top:
			return parser.OpLe, math.MaxInt64 // every integer
		case fl < math.MinInt64:
			return parser.OpLt, math.MinInt64 // none
		default:
			return parser.OpLe, int64(fl)
		}
	case parser.OpGe, parser.OpGt:
		switch c := math.Ceil(f); {
		case c >= top:
			return parser.OpGt, math.MaxInt64 // none
		case c < math.MinInt64:
			return parser.OpGe, math.MinInt64 // every integer
		default:
			return parser.OpGe, int64(c)
		}
	case parser.OpEq:
		return parser.OpLt, math.MinInt64 // none
	}
	return parser.OpGe, math.MinInt64 // !=: every integer
}

// orderLimit binds an ORDER BY and a LIMIT: the queue order (the lowest
// priority first without ORDER BY), and the row count (-1 without LIMIT).
func (s *stmtCtx) orderLimit(ob *parser.OrderBy, l *parser.Value) (queues.Order, int64, error) {
	order, err := s.order(ob)
	if err != nil {
		return 0, 0, err
	}
	n, err := s.limit(l)
	return order, n, err
}

func (s *stmtCtx) order(ob *parser.OrderBy) (queues.Order, error) {
	t := s.t
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

func (s *stmtCtx) limit(l *parser.Value) (int64, error) {
	if l == nil {
		return -1, nil
	}
	v, err := s.b.convert(&Column{Name: "LIMIT", Type: parser.TypeInt, NotNull: true}, *l)
	if err != nil {
		return 0, err
	}
	n, _ := v.(int64)
	if v == nil || n < 0 {
		return 0, fmt.Errorf("%w: LIMIT must be a count, 0 or more; got %v", ErrArgs, v)
	}
	return n, nil
}
