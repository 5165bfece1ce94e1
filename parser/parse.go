package parser

// parse: a statement's text through the pre-pass, sqlparser and the
// conversion, to a Parsed.

import (
	"fmt"
	"strings"

	"github.com/xwb1989/sqlparser"
)

// Parsed is a parsed statement with what its placeholders need.
type Parsed struct {
	Stmt Statement
	// NumInput is the number of ? placeholders, or -1 when the statement
	// uses :name placeholders (their names are in Names).
	NumInput int
	Names    []string
	// Text is the statement's text as Parse was given it (or another text
	// that parses alike: Parse's cache shares one Parsed among them), for
	// running it in another process; "" when not parsed by Parse.
	Text string
}

func parse(sql string) (*Parsed, error) {
	if len(sql) > MaxStatementSize {
		return nil, fmt.Errorf("%w: statement of %d bytes (at most %d): bind large values to placeholders, or insert in several statements", ErrUnsupported, len(sql), MaxStatementSize)
	}
	if strings.TrimSpace(strings.TrimRight(strings.TrimSpace(sql), ";")) == "" {
		return nil, fmt.Errorf("%w: empty statement; %s", ErrSyntax, Supported)
	}
	toks, err := tokenize(sql)
	if err != nil {
		return nil, err
	}
	if p, ok, err := scheduleStatement(sql, toks); ok {
		return p, err
	}
	var pp prepass
	text, err := pp.run(sql, toks)
	if err != nil {
		return nil, err
	}
	if semis := countStatements(toks); semis > 1 {
		return nil, fmt.Errorf("%w: %d statements in one call; send one statement at a time", ErrUnsupported, semis)
	}
	tree, err := sqlparser.ParseStrictDDL(text)
	if err != nil {
		return nil, syntaxError(text, err)
	}
	c := converter{pp: &pp, lead: leadingWords(toks)}
	st, err := c.statement(tree)
	if err != nil {
		return nil, err
	}
	if sel, ok := st.(*Select); ok {
		sel.ForPop, sel.Lease, sel.Wait = pp.forPop, pp.lease, pp.wait
		for _, w := range []*Value{pp.lease, pp.wait} {
			if w != nil && w.Kind == ValueArg && w.Name != "" {
				c.addName(w.Name)
			}
		}
		clause, verb := "FOR POP", "pop"
		if sel.Lease != nil {
			clause, verb = "FOR LEASE", "lease"
		}
		if sel.Takes() && sel.Limit == nil {
			return nil, fmt.Errorf("%w: %s needs a LIMIT (how many rows to %s)", ErrUnsupported, clause, verb)
		}
		if sel.Takes() && sel.Count {
			return nil, fmt.Errorf("%w: SELECT COUNT(*) ... %s; %s rows, then count them", ErrUnsupported, clause, verb)
		}
	} else if is, ok := st.(*InsertSelect); ok {
		if err := is.trailing(&pp); err != nil {
			return nil, err
		}
	} else if pp.forPop {
		return nil, fmt.Errorf("%w: FOR POP ends a SELECT", ErrUnsupported)
	} else if pp.lease != nil {
		return nil, fmt.Errorf("%w: FOR LEASE ends a SELECT", ErrUnsupported)
	}
	p := &Parsed{Stmt: st, NumInput: pp.positional}
	if pp.named {
		p.NumInput = -1
		p.Names = c.names
	}
	return p, nil
}

// countStatements counts the statements in the token stream: text after a
// semicolon is a second statement.
func countStatements(toks []token) int {
	n, pending := 0, false
	for _, t := range toks {
		switch t.typ {
		case sqlparser.COMMENT:
		case ';':
			if pending {
				n++
			}
			pending = false
		default:
			pending = true
		}
	}
	if pending {
		n++
	}
	return n
}
