package parser

// The text as tokens of sqlparser's lexer (MySQL's), which the pre-pass
// reads and rewrites.

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/xwb1989/sqlparser"
)

// token is one token of the text, with the segment of the text it came from
// (its leading blanks included).
type token struct {
	typ        int
	val        string
	start, end int
}

func tokenize(sql string) ([]token, error) {
	tz := sqlparser.NewStringTokenizer(sql)
	var toks []token
	for {
		before := tz.Position
		typ, val, err := scan(tz)
		if err != nil {
			return nil, err
		}
		if typ == 0 {
			break
		}
		if typ == sqlparser.LEX_ERROR {
			if len(val) > 0 && val[0] >= utf8.RuneSelf {
				return nil, fmt.Errorf("%w: syntax error at position %d near %q: a name without quotes is ASCII letters, digits, _ and $; quote others in backticks, as `%s`", ErrSyntax, tz.Position, val, nameAt(sql, before))
			}
			if word := numberWord(sql, tz.Position-1, val); word != "" {
				return nil, fmt.Errorf("%w: syntax error at position %d near %q: a number followed by letters; a name starting with a digit is quoted in backticks, and a duration is n SECOND, n MINUTE or n HOUR (1 SECOND, not 1s)", ErrSyntax, tz.Position, word)
			}
			return nil, fmt.Errorf("%w: syntax error at position %d: unterminated or invalid token near %q; %s", ErrSyntax, tz.Position, val, Supported)
		}
		if typ == sqlparser.ID {
			if err := checkName(val); err != nil {
				return nil, err
			}
		}
		start, end := max(before-1, 0), max(tz.Position-1, 0)
		if end > len(sql) {
			end = len(sql)
		}
		toks = append(toks, token{typ: typ, val: string(val), start: start, end: end})
	}
	return toks, nil
}

// scan is tz.Scan, with a panic of sqlparser's lexer made a syntax error:
// it panics on a MySQL comment whose version holds no code after it, as in
// /*!*/ or /*!123*/ (ExtractMysqlComment slices at -1).
func scan(tz *sqlparser.Tokenizer) (typ int, val []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: syntax error at position %d: the lexer failed; a /*! */ comment holds code after its version number", ErrSyntax, tz.Position)
		}
	}()
	typ, val = tz.Scan()
	return typ, val, nil
}

// nameAt returns the run of name characters (letters, digits, _ and $,
// of any script) at offset i of sql, for the error at an unquoted name
// outside ASCII.
func nameAt(sql string, i int) string {
	i = max(i, 0)
	for i < len(sql) && sql[i] == ' ' {
		i++
	}
	j := i
	for j < len(sql) {
		r, n := utf8.DecodeRuneInString(sql[j:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '$' && !unicode.Is(unicode.So, r) {
			break
		}
		j += n
	}
	return sql[i:j]
}

// numberWord returns the number val and the letters that follow it at
// offset i of sql (1s, 30sec), which the lexer refuses as one token, or ""
// when val is not a number followed by a letter.
func numberWord(sql string, i int, val []byte) string {
	if len(val) == 0 || val[0] < '0' || val[0] > '9' || i < 0 || i >= len(sql) {
		return ""
	}
	j := i
	for j < len(sql) && (sql[j] >= 'a' && sql[j] <= 'z' || sql[j] >= 'A' && sql[j] <= 'Z' || sql[j] >= '0' && sql[j] <= '9' || sql[j] == '_') {
		j++
	}
	if j == i || sql[i] >= '0' && sql[i] <= '9' {
		return ""
	}
	return string(val) + sql[i:j]
}
