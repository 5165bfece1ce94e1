package parser

// Unique keys of CREATE TABLE: UNIQUE [KEY|INDEX] [name] (cols) [FOR n
// SECOND|MINUTE|HOUR|DAY], and a column's UNIQUE [KEY]. The pre-pass
// names the unnamed keys for sqlparser (which wants a name) and reads and
// drops their windows (FOR n unit, which sqlparser does not know); the
// conversion reads the keys sqlparser parsed. What a key may cover (which
// columns, how many keys) is package exec's to say.

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/xwb1989/sqlparser"
)

// uniqueUnnamed is the name the pre-pass gives an unnamed unique key, for
// sqlparser; the conversion turns it back into "" (exec names the key).
const uniqueUnnamed = "fdbqueue_unnamed_unique_key"

// windowUnits are the units of a unique key's window.
var windowUnits = map[string]time.Duration{"second": time.Second, "minute": time.Minute, "hour": time.Hour, "day": 24 * time.Hour}

// MaxUniqueWindow is the longest window a unique key may have: a key
// stays taken at most this long after its row is removed.
const MaxUniqueWindow = 366 * 24 * time.Hour

// windowHint says what a unique key's window is, for errors.
const windowHint = "a unique key's window is FOR n SECOND|MINUTE|HOUR|DAY after its columns, n a positive number, at most 366 DAY: how long the key stays taken after its row is removed"

// uniqueClauses finds the table-level unique keys of a CREATE TABLE's
// column list (UNIQUE at the start of an element): it names each unnamed
// one, as sqlparser wants a name, and reads and drops its window (FOR n
// unit after its columns), recording one window a key, in order, in
// pp.uniqueWindows.
func (pp *prepass) uniqueClauses(sql string, tokAt func(int) token, code []int, n int, replace map[int]string, drop map[int]bool) error {
	depth := 0
	for k := 0; k < n; k++ {
		t := tokAt(k)
		switch t.typ {
		case '(':
			depth++
			continue
		case ')':
			depth--
			continue
		}
		if t.typ != sqlparser.UNIQUE || depth != 1 {
			continue
		}
		if prev := tokAt(k - 1).typ; prev != '(' && prev != ',' {
			// A column's UNIQUE [KEY]: no window there.
			if tokAt(k+1).typ == sqlparser.FOR || tokAt(k+1).typ == sqlparser.KEY && tokAt(k+2).typ == sqlparser.FOR {
				return unsupported("a window on a column's UNIQUE (declare the key among the table's elements: UNIQUE (col) FOR n unit; %s)", windowHint)
			}
			continue
		}
		// UNIQUE [KEY|INDEX] [name] (
		at := k // the token the name goes after, when there is none
		if next := tokAt(k + 1).typ; next == sqlparser.KEY || next == sqlparser.INDEX {
			at = k + 1
		}
		open := at + 1
		if tokAt(open).typ != '(' {
			open++ // the name
		} else {
			a := tokAt(at)
			replace[code[at]] = sql[a.start:a.end] + " " + uniqueUnnamed
		}
		if tokAt(open).typ != '(' {
			continue // sqlparser's to refuse
		}
		// The key's closing parenthesis, then its window, if any.
		d, end := 0, open
		for ; end < n; end++ {
			if typ := tokAt(end).typ; typ == '(' {
				d++
			} else if typ == ')' {
				if d--; d == 0 {
					break
				}
			}
		}
		w, size, err := windowClause(sql, tokAt, end+1, n)
		if err != nil {
			return err
		}
		for j := end + 1; j < end+1+size; j++ {
			drop[code[j]] = true
		}
		pp.uniqueWindows = append(pp.uniqueWindows, w)
		k = end + size // the loop's k++ reads what follows
	}
	return nil
}

// windowClause reads FOR n unit at token from (its end: the element's ','
// or the list's ')'); it returns the window and how many tokens it takes
// (0 without FOR).
func windowClause(sql string, tokAt func(int) token, from, n int) (time.Duration, int, error) {
	if tokAt(from).typ != sqlparser.FOR {
		return 0, 0, nil
	}
	to := from + 1
	for to < n && tokAt(to).typ != ',' && tokAt(to).typ != ')' {
		to++
	}
	text := "FOR"
	if to > from+1 {
		text = strings.TrimSpace(sql[tokAt(from).start:tokAt(to-1).end])
	}
	num, unit := tokAt(from+1), tokAt(from+2)
	if to-from != 3 || (num.typ != sqlparser.INTEGRAL && num.typ != sqlparser.FLOAT) {
		if num.typ == '-' {
			return 0, 0, fmt.Errorf("%w: UNIQUE ... %s: a window is positive; %s", ErrValue, text, windowHint)
		}
		return 0, 0, unsupported("UNIQUE ... %s (%s)", text, windowHint)
	}
	per, ok := windowUnits[strings.ToLower(unit.val)]
	if !ok {
		return 0, 0, unsupported("UNIQUE ... %s: unit %s (%s)", text, strings.ToUpper(unit.val), windowHint)
	}
	v, err := strconv.ParseFloat(num.val, 64)
	if err != nil || math.IsNaN(v) {
		return 0, 0, unsupported("UNIQUE ... %s (%s)", text, windowHint)
	}
	w := v * float64(per)
	if w < 1 || w > float64(MaxUniqueWindow) {
		return 0, 0, fmt.Errorf("%w: UNIQUE ... %s: out of range; %s", ErrValue, text, windowHint)
	}
	return time.Duration(math.Round(w)), to - from, nil
}

// uniqueKey converts a table-level unique key that sqlparser parsed; i is
// its place among the statement's unique keys, for its window.
func (c *converter) uniqueKey(ix *sqlparser.IndexDefinition, i int) (UniqueKey, error) {
	u := UniqueKey{Name: ix.Info.Name.String()}
	if u.Name == uniqueUnnamed {
		u.Name = ""
	}
	if len(ix.Options) > 0 {
		o := ix.Options[0]
		return u, unsupported("index option %s on a unique key (a unique key has no options; %s)", strings.ToUpper(strings.TrimSpace(o.Name+" "+o.Using)), windowHint)
	}
	for _, ic := range ix.Columns {
		if ic.Length != nil {
			return u, unsupported("index prefix lengths (a unique key covers whole values)")
		}
		u.Columns = append(u.Columns, ic.Column.String())
	}
	if i < len(c.pp.uniqueWindows) {
		u.Window = c.pp.uniqueWindows[i]
	}
	return u, nil
}
