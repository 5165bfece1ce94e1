package parser

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/xwb1989/sqlparser"
)

// leaseHint says what FOR LEASE takes, for errors.
const leaseHint = "FOR LEASE takes how long the lease lasts, a positive number of seconds: FOR LEASE 30, FOR LEASE 0.5, or FOR LEASE ? bound to a time.Duration or a number of seconds; then optionally WAIT seconds"

// maxLeaseSeconds is the longest lease (and the largest INTERVAL) a
// time.Duration holds, about 292 years.
const maxLeaseSeconds = float64(math.MaxInt64) / float64(time.Second)

// LeaseDuration returns the lease of secs seconds, or why it is not one
// (an error without a sentinel: the caller says whose fault it is).
func LeaseDuration(secs float64) (time.Duration, error) {
	if math.IsNaN(secs) || secs <= 0 || secs >= maxLeaseSeconds {
		return 0, fmt.Errorf("FOR LEASE %v: a lease lasts a positive number of seconds, and ends by 2262-04-11; %s", secs, leaseHint)
	}
	d := time.Duration(math.Round(secs * float64(time.Second)))
	return max(d, 1), nil
}

// clauseValue reads the one number of seconds or placeholder at tokens
// [from, to) of a trailing clause (FOR LEASE d, WAIT n). ordinal is the
// placeholder's ordinal if it is a ?.
func clauseValue(sql string, tokAt func(int) token, from, to, ordinal int, clause, hint string) (*Value, error) {
	if from >= to {
		return nil, fmt.Errorf("%w: %s without its seconds; %s", ErrUnsupported, clause, hint)
	}
	text := strings.TrimSpace(sql[tokAt(from).start:tokAt(to-1).end])
	v := tokAt(from)
	if to-from != 1 {
		if v.typ == '-' {
			return nil, fmt.Errorf("%w: %s %s: seconds are not negative; %s", ErrValue, clause, text, hint)
		}
		return nil, fmt.Errorf("%w: %s %s: one number of seconds, and nothing after it; %s", ErrUnsupported, clause, text, hint)
	}
	switch v.typ {
	case sqlparser.INTEGRAL, sqlparser.FLOAT:
		secs, err := strconv.ParseFloat(v.val, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: %s %s: not a number of seconds; %s", ErrUnsupported, clause, text, hint)
		}
		if v.typ == sqlparser.INTEGRAL && secs == math.Trunc(secs) && math.Abs(secs) < 1<<53 {
			return &Value{Kind: ValueInt, Int: int64(secs)}, nil
		}
		return &Value{Kind: ValueFloat, Float: secs}, nil
	case sqlparser.VALUE_ARG:
		if strings.HasSuffix(text, "?") {
			return &Value{Kind: ValueArg, Ordinal: ordinal}, nil
		}
		return &Value{Kind: ValueArg, Name: strings.TrimPrefix(v.val, ":")}, nil
	}
	return nil, fmt.Errorf("%w: %s %s: seconds are a number, not %s; %s", ErrUnsupported, clause, text, describeToken(v), hint)
}

// leaseClause finds a trailing FOR LEASE d [WAIT n] among the first n
// code tokens, sets pp.lease (and pp.wait), and returns where the clause
// starts (n when there is none).
func (pp *prepass) leaseClause(sql string, tokAt func(int) token, n int) (int, error) {
	isWord := func(k int, w string) bool {
		t := tokAt(k)
		return t.typ == sqlparser.ID && strings.EqualFold(t.val, w)
	}
	for j := 0; j+1 < n; j++ {
		if tokAt(j).typ != sqlparser.FOR || !isWord(j+1, "lease") {
			continue
		}
		end, ord := n, pp.positional
		for k := j + 2; k < n; k++ {
			if !isWord(k, "wait") {
				continue
			}
			w, err := clauseValue(sql, tokAt, k+1, n, pp.positional, "FOR LEASE ... WAIT", waitHint)
			if err != nil {
				return 0, err
			}
			if w.Kind != ValueArg {
				secs := w.Float
				if w.Kind == ValueInt {
					secs = float64(w.Int)
				}
				if _, err := WaitDuration(secs); err != nil {
					return 0, fmt.Errorf("%w: FOR LEASE ... %v", ErrValue, err)
				}
			} else if w.Name == "" {
				ord--
			}
			pp.wait, end = w, k
			break
		}
		d, err := clauseValue(sql, tokAt, j+2, end, ord, "FOR LEASE", leaseHint)
		if err != nil {
			return 0, err
		}
		if d.Kind != ValueArg {
			secs := d.Float
			if d.Kind == ValueInt {
				secs = float64(d.Int)
			}
			if _, err := LeaseDuration(secs); err != nil {
				return 0, fmt.Errorf("%w: %v", ErrValue, err)
			}
		}
		pp.lease = d
		return j, nil
	}
	return n, nil
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

// maxAttemptsOption finds CREATE TABLE's MAX_ATTEMPTS[=]n option after the
// closing parenthesis of the columns, sets pp.maxAttempts, and drops it
// from the text sqlparser reads (which refuses some of the values it
// should explain).
func (pp *prepass) maxAttemptsOption(sql string, tokAt func(int) token, code []int, n int, drop map[int]bool) error {
	depth, k := 0, 0
	for ; k < n; k++ {
		switch tokAt(k).typ {
		case '(':
			depth++
		case ')':
			depth--
		}
		if t := tokAt(k); depth == 0 && t.typ == sqlparser.ID && strings.EqualFold(t.val, "max_attempts") && k > 0 && tokAt(k-1).typ == ')' {
			break
		}
	}
	if k >= n {
		return nil
	}
	from := k + 1
	if tokAt(from).typ == '=' {
		from++
	}
	if from >= n {
		return unsupported("MAX_ATTEMPTS without a value (how many times a row may be leased: MAX_ATTEMPTS=n, n an integer, 1 or more)")
	}
	text := strings.TrimSpace(sql[tokAt(from).start:tokAt(n-1).end])
	v, err := strconv.ParseInt(text, 10, 64)
	if err != nil || v <= 0 || from+1 != n || tokAt(from).typ != sqlparser.INTEGRAL {
		return unsupported("MAX_ATTEMPTS=%s (how many times a row may be leased: an integer, 1 or more)", text)
	}
	pp.maxAttempts = v
	for j := k; j < n; j++ {
		drop[code[j]] = true
	}
	return nil
}
