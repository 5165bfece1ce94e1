package parser

// The parse cache: statements parsed once, by their text.

import (
	"strings"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"
)

// CacheSize is how many parsed statements the cache keeps.
const CacheSize = 4096

// MaxCachedLen is the longest statement text the cache keeps. Longer
// statements (multi-row INSERTs with literal values, say, each one new)
// are parsed every time: caching them would fill memory for no hits, and
// their parse is small next to their execution. Prepare such a statement
// to parse it once.
const MaxCachedLen = 2048

var cache, _ = lru.New[string, *Parsed](CacheSize)

// parsed counts the statements Parse parsed: cache misses, and statements
// too long to cache. Only a miss pays for the count, and it is the
// cache's measure (BenchmarkParse reports it).
var parsed atomic.Int64

// Parse parses one statement, through a bounded cache keyed by the text: a
// statement seen before is not parsed again. The key leaves out the
// comments and blanks before the statement's first token and after its
// last, so that a statement that carries a comment new on each call (a
// trace context appended by sqlcommenter, as otelsql's WithSQLCommenter
// does) is parsed once too. The result is shared and must not be modified.
func Parse(sql string) (*Parsed, error) {
	key := cacheKey(sql)
	if len(key) > MaxCachedLen || len(sql) > MaxStatementSize {
		parsed.Add(1)
		p, err := parse(sql)
		if err == nil {
			p.Text = sql
		}
		return p, err
	}
	if p, ok := cache.Get(key); ok {
		return p, nil
	}
	parsed.Add(1)
	// The text as sent, comments included: an error's positions are
	// those of the caller's text. What it parses to is key's.
	p, err := parse(sql)
	if err != nil {
		return nil, err
	}
	p.Text = sql
	cache.Add(key, p)
	return p, nil
}

// cacheKey is sql from its first token to its last, leaving out the
// comments and blanks around them: -- # // to the end of the line, and
// /* */ (but not MySQL's /*! */, which holds code). Texts with the same key
// parse alike. It follows sqlparser's lexer (token.go) token by token, so
// that a comment marker inside a string, a quoted name or a number such as
// 1e-5 is not read as a comment; where that lexer would fail (an
// unterminated string or comment, a letter after a number) or follow rules
// this does not (@@ names, x” and b” literals), the key is sql itself,
// as it was before keys left comments out.
func cacheKey(sql string) string {
	if strings.IndexByte(sql, '-') < 0 && strings.IndexByte(sql, '/') < 0 && strings.IndexByte(sql, '#') < 0 {
		// No comment can start: most statements, keyed at the cost of
		// three vectorised byte searches.
		return trimBlanks(sql)
	}
	first, last := -1, 0 // the first token's start; the last one's end
	for i := 0; i < len(sql); {
		c := sql[i]
		if isBlank(c) {
			i++
			continue
		}
		next := func(k int) byte { // the byte k after c, or 0
			if i+k < len(sql) {
				return sql[i+k]
			}
			return 0
		}
		switch {
		case c == '#', c == '-' && next(1) == '-', c == '/' && next(1) == '/':
			nl := strings.IndexByte(sql[i:], '\n')
			if nl < 0 {
				i = len(sql)
			} else {
				i += nl + 1
			}
			continue
		case c == '/' && next(1) == '*' && next(2) != '!':
			end := strings.Index(sql[i+2:], "*/")
			if end < 0 {
				return sql
			}
			i += 2 + end + 2
			continue
		}
		end := tokenEnd(sql, i)
		if end < 0 {
			return sql
		}
		if first < 0 {
			first = i
		}
		i, last = end, end
	}
	if first < 0 {
		return sql
	}
	return sql[first:last]
}

// trimBlanks is sql without the blanks around it.
func trimBlanks(sql string) string {
	for len(sql) > 0 && isBlank(sql[0]) {
		sql = sql[1:]
	}
	for len(sql) > 0 && isBlank(sql[len(sql)-1]) {
		sql = sql[:len(sql)-1]
	}
	return sql
}

// isBlank reports the bytes the lexer skips between tokens.
func isBlank(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

// tokenEnd is the end of the token that starts at sql[i], not a blank nor
// a comment, as sqlparser's lexer reads it; -1 where cacheKey leaves the
// text as it is.
func tokenEnd(sql string, i int) int {
	at := func(k int) byte {
		if k < len(sql) {
			return sql[k]
		}
		return 0
	}
	c := sql[i]
	switch {
	case isLetter(c):
		if (c == 'x' || c == 'X' || c == 'b' || c == 'B') && at(i+1) == '\'' || c == '@' && at(i+1) == '@' {
			return -1
		}
		j := i + 1
		for isLetter(at(j)) || isDigit(at(j)) {
			j++
		}
		return j
	case isDigit(c), c == '.' && isDigit(at(i+1)):
		return numberEnd(sql, i)
	case c == ':':
		j := i + 1
		if at(j) == ':' {
			j++
		}
		if !isLetter(at(j)) {
			return -1
		}
		for isLetter(at(j)) || isDigit(at(j)) || at(j) == '.' {
			j++
		}
		return j
	case c == '\'' || c == '"':
		for j := i + 1; j < len(sql); j++ {
			switch sql[j] {
			case '\\':
				j++ // the escaped byte
			case c:
				if at(j+1) != c {
					return j + 1
				}
				j++ // a doubled quote
			}
		}
		return -1
	case c == '`':
		for j := i + 1; j < len(sql); j++ {
			if sql[j] == '`' {
				if at(j+1) != '`' {
					return j + 1
				}
				j++
			}
		}
		return -1
	case c == '/' && at(i+1) == '*': // /*! code */
		end := strings.Index(sql[i+3:], "*/")
		if end < 0 {
			return -1
		}
		return i + 3 + end + 2
	case c == '-' && at(i+1) == '>': // -> and ->>
		if at(i+2) == '>' {
			return i + 3
		}
		return i + 2
	}
	// One byte; the lexer's other two-byte operators (<= <> != && ...)
	// have no comment marker in them.
	return i + 1
}

// numberEnd is the end of the number at sql[i] (sqlparser's scanNumber):
// 0x hex digits, or digits, a fraction and an exponent whose sign is part
// of it (1e-5: not a comment). -1 for a letter right after it.
func numberEnd(sql string, i int) int {
	at := func(k int) byte {
		if k < len(sql) {
			return sql[k]
		}
		return 0
	}
	digits := func(j int, hex bool) int {
		for isDigit(at(j)) || hex && isHexLetter(at(j)) {
			j++
		}
		return j
	}
	j := i
	switch {
	case at(j) == '.':
		j = digits(j+1, false)
	case at(j) == '0' && (at(j+1) == 'x' || at(j+1) == 'X'):
		j = digits(j+2, true)
		if isLetter(at(j)) {
			return -1
		}
		return j
	default:
		j = digits(j, false)
		if at(j) == '.' {
			j = digits(j+1, false)
		}
	}
	if at(j) == 'e' || at(j) == 'E' {
		j++
		if at(j) == '+' || at(j) == '-' {
			j++
		}
		j = digits(j, false)
	}
	if isLetter(at(j)) {
		return -1
	}
	return j
}

func isLetter(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '@'
}

func isDigit(c byte) bool     { return '0' <= c && c <= '9' }
func isHexLetter(c byte) bool { return 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }
