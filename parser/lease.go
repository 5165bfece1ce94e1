package parser

// FOR LEASE seconds [WAIT seconds], the trailing clause of a lease, read
// by the pre-pass; and the longest lease.

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
