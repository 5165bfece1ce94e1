package parser

// Errors, and the limits on a statement's text.

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/xwb1989/sqlparser"
)

// ErrSyntax is returned (wrapped, with the position and what is supported)
// for text the dialect does not accept.
var ErrSyntax = errors.New("fdbqueue: SQL not understood")

// ErrUnsupported is returned (wrapped) for valid SQL outside the dialect.
var ErrUnsupported = errors.New("fdbqueue: not supported")

// ErrValue is returned when a value in the statement's text is out of
// its range (a lease of 0 seconds, a wait of an hour); exec returns the
// same value for arguments out of range, and for values that do not fit
// their column.
var ErrValue = errors.New("fdbqueue: invalid value")

// Supported summarises the dialect for error messages.
const Supported = "supported: CREATE TABLE [IF NOT EXISTS], DROP TABLE [IF EXISTS], " +
	"INSERT [IGNORE] INTO t [(cols)] VALUES (...), SELECT cols|*|COUNT(*) FROM t [WHERE] [ORDER BY priority [ASC|DESC]] [LIMIT n] [FOR POP [WAIT seconds] | FOR LEASE seconds [WAIT seconds]], " +
	"DELETE FROM t [WHERE] [ORDER BY priority] [LIMIT n], UPDATE t SET priority = v WHERE id = v, UPDATE t SET _visible_at = v WHERE id = v [AND _lease = v], BEGIN, COMMIT, ROLLBACK"

// unsupported is the error for one part of a statement outside the
// dialect: it says what, and what to write instead where there is a
// choice, without the whole grammar (Supported), which only a statement
// not understood at all needs.
func unsupported(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnsupported, fmt.Sprintf(format, args...))
}

// syntaxPosition finds the position in sqlparser's syntax errors: "syntax
// error at position 25 near 'status'".
var syntaxPosition = regexp.MustCompile(`at position (\d+)`)

// syntaxError explains a syntax error of sqlparser's. The lexer is MySQL's,
// so a name that is a keyword there (status, key, order, timestamp) is a
// syntax error: when the error is at such a word, say so, and how to quote it.
func syntaxError(text string, err error) error {
	m := syntaxPosition.FindStringSubmatch(err.Error())
	if m == nil {
		return fmt.Errorf("%w: %v; %s", ErrSyntax, err, Supported)
	}
	pos, _ := strconv.Atoi(m[1])
	toks, _ := tokenize(text)
	first := true
	for _, t := range toks {
		if t.typ == sqlparser.COMMENT {
			continue
		}
		// The parser fails at the token it has just read: the one ending
		// where the tokenizer stopped. The first word starts a statement
		// (LOCK, say) rather than naming something.
		word := strings.TrimSpace(text[t.start:t.end])
		if t.end == pos-1 && sqlparser.KeywordString(t.typ) != "" && isWord(word) {
			if first {
				return fmt.Errorf("%w: statement %s (%v); %s", ErrUnsupported, strings.ToUpper(word), err, Supported)
			}
			return fmt.Errorf("%w: %q is a reserved word; to use it as a name, quote it as `%s` (%v); %s", ErrSyntax, word, word, err, Supported)
		}
		first = false
	}
	return fmt.Errorf("%w: %v; %s", ErrSyntax, err, Supported)
}

func isWord(s string) bool {
	for i, r := range s {
		if !(r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || i > 0 && '0' <= r && r <= '9') {
			return false
		}
	}
	return s != ""
}

// MaxStatementSize bounds the text Parse accepts.
const MaxStatementSize = 1 << 20

// MaxNameSize is the longest table or column name, in bytes (MySQL's is
// 64 characters): names are parts of keys, which hold at most 10,000
// bytes.
const MaxNameSize = 255

// checkName reports a name that no table or column may have.
func checkName(name []byte) error {
	switch {
	case !utf8.Valid(name):
		// Names are stored as text: one that is not UTF-8 could not be
		// read back.
		return fmt.Errorf("%w: name %q is not valid UTF-8", ErrSyntax, name)
	case len(name) > MaxNameSize:
		return fmt.Errorf("%w: name %.20q... is %d bytes; a name is at most %d", ErrSyntax, name, len(name), MaxNameSize)
	case len(bytes.TrimSpace(name)) == 0:
		return fmt.Errorf("%w: name %q is blank; a name has a character other than spaces", ErrSyntax, name)
	}
	return nil
}
