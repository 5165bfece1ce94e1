package parser

// The pre-pass: what the dialect adds to MySQL, recognised in the tokens
// and rewritten or removed before sqlparser reads the text.

import (
	"fmt"
	"strings"
	"time"

	"github.com/xwb1989/sqlparser"
)

// prepass recognises what sqlparser does not: a trailing FOR POP [WAIT n],
// CREATE TABLE IF NOT EXISTS and its table options (options.go),
// BOOL/BOOLEAN column types, negative and boolean DEFAULTs, unnamed
// indexes and unique keys, and unique keys' windows. It returns the text
// for sqlparser.
type prepass struct {
	forPop      bool
	lease       *Value // FOR LEASE's seconds or placeholder
	wait        *Value // FOR POP WAIT's (or FOR LEASE's WAIT's) seconds or placeholder
	ifNotExists bool
	maxAttempts int64    // MAX_ATTEMPTS=n
	backoff     *Backoff // BACKOFF=...
	boolCols    map[string]bool
	positional  int // ? placeholders
	named       bool

	// uniqueWindows are the windows of CREATE TABLE's table-level unique
	// keys, in order (0: none; see unique.go).
	uniqueWindows []time.Duration
}

func (pp *prepass) run(sql string, toks []token) (string, error) {
	var code []int // indexes of non-comment tokens
	for i, t := range toks {
		if t.typ != sqlparser.COMMENT {
			code = append(code, i)
		}
	}
	tokAt := func(k int) token {
		if k < 0 || k >= len(code) {
			return token{}
		}
		return toks[code[k]]
	}
	n := len(code)
	if n > 0 && tokAt(n-1).typ == ';' {
		n--
	}
	replace := map[int]string{} // token index -> replacement text
	drop := map[int]bool{}

	// Placeholders: ? becomes :vN in sqlparser; :name stays.
	for _, i := range code[:n] {
		t := toks[i]
		if t.typ == sqlparser.VALUE_ARG {
			if strings.HasSuffix(strings.TrimSpace(sql[t.start:t.end]), "?") {
				pp.positional++
			} else {
				pp.named = true
			}
		}
		if t.typ == sqlparser.LIST_ARG {
			return "", fmt.Errorf("%w: list placeholders (::name); %s", ErrUnsupported, Supported)
		}
	}
	if pp.positional > 0 && pp.named {
		return "", fmt.Errorf("%w: a statement uses either ? or :name placeholders, not both", ErrUnsupported)
	}

	// FOR LEASE d [WAIT n], or FOR POP [WAIT n], at the end of a SELECT.
	end, err := pp.leaseClause(sql, tokAt, n)
	if err != nil {
		return "", err
	}
	if pp.lease == nil {
		if end, err = pp.waitClause(sql, tokAt, n); err != nil {
			return "", err
		}
	}
	for k := end; k < n; k++ {
		drop[code[k]] = true
	}
	if pp.lease == nil && end >= 2 && tokAt(end-2).typ == sqlparser.FOR && tokAt(0).typ != sqlparser.CREATE {
		last := tokAt(end - 1)
		if last.typ == sqlparser.ID && strings.EqualFold(last.val, "pop") {
			pp.forPop = true
			drop[code[end-2]], drop[code[end-1]] = true, true
		} else if last.typ != sqlparser.UPDATE {
			return "", fmt.Errorf("%w: trailing clause FOR %s; the trailing clauses are FOR POP [WAIT seconds] and FOR LEASE seconds [WAIT seconds]", ErrUnsupported, strings.ToUpper(last.val))
		}
	}

	if n >= 2 && tokAt(0).typ == sqlparser.CREATE && tokAt(1).typ == sqlparser.TABLE {
		k := 2
		if tokAt(2).typ == sqlparser.IF && tokAt(3).typ == sqlparser.NOT && tokAt(4).typ == sqlparser.EXISTS {
			pp.ifNotExists = true
			drop[code[2]], drop[code[3]], drop[code[4]] = true, true, true
			k = 5
		}
		pp.boolCols = map[string]bool{}
		if err := pp.tableOptions(sql, tokAt, code, n, drop); err != nil {
			return "", err
		}
		if err := pp.uniqueClauses(sql, tokAt, code, n, replace, drop); err != nil {
			return "", err
		}
		for ; k < n; k++ {
			t, prev := tokAt(k), tokAt(k-1)
			switch {
			case (t.typ == sqlparser.BOOL || t.typ == sqlparser.BOOLEAN) && prev.typ == sqlparser.ID:
				// A column type: sqlparser knows BIT, which we read back as BOOLEAN.
				replace[code[k]] = " bit"
				pp.boolCols[strings.ToLower(prev.val)] = true
			case t.typ == sqlparser.DEFAULT:
				v := tokAt(k + 1)
				switch {
				case v.typ == '-' && (tokAt(k+2).typ == sqlparser.INTEGRAL || tokAt(k+2).typ == sqlparser.FLOAT):
					replace[code[k+1]] = " '-" + tokAt(k+2).val + "'"
					drop[code[k+2]] = true
					k += 2
				case v.typ == sqlparser.TRUE || v.typ == sqlparser.FALSE:
					replace[code[k+1]] = " '" + strings.ToLower(v.val) + "'"
					k++
				}
			case (t.typ == sqlparser.INDEX || t.typ == sqlparser.KEY) && tokAt(k+1).typ == '(' &&
				prev.typ != sqlparser.PRIMARY && prev.typ != sqlparser.UNIQUE && prev.typ != sqlparser.SPATIAL && prev.typ != sqlparser.FULLTEXT:
				replace[code[k]] = " INDEX fit"
			}
		}
	}

	if len(replace) == 0 && len(drop) == 0 {
		return sql, nil
	}
	var b strings.Builder
	for i, t := range toks {
		switch {
		case drop[i]:
		case replace[i] != "":
			b.WriteString(replace[i])
		default:
			b.WriteString(sql[t.start:t.end])
		}
	}
	return b.String(), nil
}
