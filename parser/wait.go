package parser

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/xwb1989/sqlparser"
)

// MaxWait is the longest wait SELECT ... FOR POP WAIT accepts. A longer one
// is refused: five minutes is plenty for one statement (a worker waits
// again in a loop), and a wait longer than that is more likely milliseconds
// given as seconds than meant.
const MaxWait = 300 * time.Second

// waitHint says what FOR POP WAIT takes, for errors.
const waitHint = "FOR POP WAIT takes the seconds to wait, from 0 (do not wait) to 300: WAIT 5, WAIT 0.5, or WAIT ? bound to a time.Duration or a number of seconds"

// WaitDuration returns the wait of secs seconds, or why it is not one (an
// error without a sentinel: the caller says whose fault it is).
func WaitDuration(secs float64) (time.Duration, error) {
	switch {
	case math.IsNaN(secs) || secs < 0:
		return 0, fmt.Errorf("WAIT %v: a wait is 0 or more seconds; %s", secs, waitHint)
	case secs > MaxWait.Seconds():
		return 0, fmt.Errorf("WAIT %v: at most %v seconds (wait again in a loop for longer); %s", secs, MaxWait.Seconds(), waitHint)
	}
	d := time.Duration(math.Round(secs * float64(time.Second)))
	if d == 0 && secs > 0 {
		d = 1 // under a nanosecond: still a wait, not none
	}
	return d, nil
}

// waitClause finds a trailing FOR POP WAIT n among the first n code tokens,
// sets pp.wait, and returns where the WAIT clause starts (n when there is
// none), so that the caller treats what comes before as ending in FOR POP.
// It refuses a WAIT without FOR POP, and a WAIT without one number of
// seconds or a placeholder after it.
func (pp *prepass) waitClause(sql string, tokAt func(int) token, n int) (int, error) {
	isWait := func(k int) bool {
		t := tokAt(k)
		return t.typ == sqlparser.ID && strings.EqualFold(t.val, "wait")
	}
	for j := 0; j+2 < n; j++ {
		if tokAt(j).typ != sqlparser.FOR || tokAt(j+1).typ != sqlparser.ID || !strings.EqualFold(tokAt(j+1).val, "pop") || !isWait(j+2) {
			continue
		}
		rest := n - (j + 3)
		if rest == 0 {
			return 0, fmt.Errorf("%w: FOR POP WAIT without the seconds to wait; %s", ErrUnsupported, waitHint)
		}
		text := strings.TrimSpace(sql[tokAt(j+3).start:tokAt(n-1).end])
		v := tokAt(j + 3)
		if rest != 1 {
			if v.typ == '-' {
				return 0, fmt.Errorf("%w: FOR POP WAIT %s: a wait is 0 or more seconds; %s", ErrValue, text, waitHint)
			}
			return 0, fmt.Errorf("%w: FOR POP WAIT %s: one number of seconds, and nothing after it; %s", ErrUnsupported, text, waitHint)
		}
		switch v.typ {
		case sqlparser.INTEGRAL, sqlparser.FLOAT:
			secs, err := strconv.ParseFloat(v.val, 64)
			if err != nil {
				return 0, fmt.Errorf("%w: FOR POP WAIT %s: not a number of seconds; %s", ErrUnsupported, text, waitHint)
			}
			if _, err := WaitDuration(secs); err != nil {
				return 0, fmt.Errorf("%w: FOR POP %v", ErrValue, err)
			}
			w := Value{Kind: ValueFloat, Float: secs}
			if v.typ == sqlparser.INTEGRAL {
				w = Value{Kind: ValueInt, Int: int64(secs)}
			}
			pp.wait = &w
		case sqlparser.VALUE_ARG:
			if strings.HasSuffix(text, "?") {
				pp.wait = &Value{Kind: ValueArg, Ordinal: pp.positional} // the last ?
			} else {
				pp.wait = &Value{Kind: ValueArg, Name: strings.TrimPrefix(v.val, ":")}
			}
		default:
			return 0, fmt.Errorf("%w: FOR POP WAIT %s: seconds are a number, not %s; %s", ErrUnsupported, text, describeToken(v), waitHint)
		}
		return j + 2, nil
	}
	// WAIT n elsewhere in a SELECT: not after FOR POP.
	if tokAt(0).typ == sqlparser.SELECT {
		for k := 1; k+1 < n; k++ {
			switch tokAt(k + 1).typ {
			case sqlparser.INTEGRAL, sqlparser.FLOAT, sqlparser.VALUE_ARG:
				if isWait(k) {
					return 0, fmt.Errorf("%w: WAIT without FOR POP before it; only a pop waits for rows: SELECT ... LIMIT n FOR POP WAIT seconds", ErrUnsupported)
				}
			}
		}
	}
	return n, nil
}

// describeToken names a token that is not a number, for errors.
func describeToken(t token) string {
	switch t.typ {
	case sqlparser.STRING:
		return "a string"
	case sqlparser.HEXNUM, sqlparser.HEX:
		return "a hex literal (write the seconds in decimal)"
	case sqlparser.NULL:
		return "NULL"
	}
	return fmt.Sprintf("%q", t.val)
}
