package main

import (
	"fmt"
	"strings"
)

// statement is one statement of a script, with the line it starts on.
type statement struct {
	text string
	line int
	meta bool // a meta-command such as \copy: one line, no semicolon
}

// splitter cuts SQL text into statements at semicolons outside quotes and
// comments, and meta-commands (a backslash where a statement would start)
// at the end of their line. It is fed text in pieces (lines from a prompt, or a whole file)
// and keeps what is unfinished.
type splitter struct {
	buf       strings.Builder
	line      int // the line the next character is on
	startLine int // the line the pending statement starts on (0: none yet)
	quote     byte
	block     bool // inside /* */
	lineCmt   bool // inside -- ...
	prev      byte
}

func newSplitter() *splitter { return &splitter{line: 1} }

// feed adds text and returns the statements it completed.
func (s *splitter) feed(text string) []statement {
	var out []statement
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case s.lineCmt:
			if c == '\n' {
				s.lineCmt = false
			}
		case s.block:
			if s.prev == '*' && c == '/' {
				s.block = false
				s.buf.WriteByte(c)
				s.prev = 0 // so that "*/*" does not open another comment
				continue
			}
		case s.quote != 0:
			if c == s.quote {
				s.quote = 0
			} else if c == '\\' && s.quote != '`' && i+1 < len(text) {
				// A backslash escape: keep the next character as is.
				s.buf.WriteByte(c)
				i++
				c = text[i]
				if c == '\n' {
					s.line++
				}
			}
		case c == '\'' || c == '"' || c == '`':
			s.quote = c
		case c == '-' && i+1 < len(text) && text[i+1] == '-':
			s.lineCmt = true
		case c == '/' && i+1 < len(text) && text[i+1] == '*':
			s.block = true
			s.buf.WriteByte(c)
			i++
			c = text[i]
		case c == '\\' && s.startLine == 0 && onlyComments(s.buf.String()):
			// A meta-command at the start of a statement runs to the end of
			// its line.
			end := strings.IndexByte(text[i:], '\n')
			if end < 0 {
				end = len(text) - i
			}
			out = append(out, statement{text: strings.TrimSpace(text[i : i+end]), line: s.line, meta: true})
			s.buf.Reset()
			i += end - 1
			s.prev = 0
			continue
		case c == ';':
			if stmt := strings.TrimSpace(s.buf.String()); stmt != "" && !onlyComments(stmt) {
				out = append(out, statement{text: stmt, line: s.startLine})
			}
			s.buf.Reset()
			s.startLine = 0
			s.prev = c
			continue
		}
		if !s.lineCmt || c == '\n' {
			if s.startLine == 0 && !isSpace(c) && !s.lineCmt && !s.block {
				s.startLine = s.line
			}
			s.buf.WriteByte(c)
		}
		if c == '\n' {
			s.line++
		}
		s.prev = c
	}
	return out
}

// pending reports whether an unfinished statement is buffered.
func (s *splitter) pending() bool {
	t := strings.TrimSpace(s.buf.String())
	return t != "" && !onlyComments(t) || s.quote != 0 || s.block
}

// finish returns the last statement, which may lack its semicolon, or an
// error for an unterminated quote or comment.
func (s *splitter) finish() (*statement, error) {
	if s.quote != 0 {
		return nil, fmt.Errorf("line %d: unterminated %c quote", s.startLine, s.quote)
	}
	if s.block {
		return nil, fmt.Errorf("line %d: unterminated /* comment", s.startLine)
	}
	t := strings.TrimSpace(s.buf.String())
	s.buf.Reset()
	if t == "" || onlyComments(t) {
		return nil, nil
	}
	st := &statement{text: t, line: s.startLine}
	s.startLine = 0
	return st, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// onlyComments reports whether text holds nothing but block comments.
func onlyComments(text string) bool {
	for {
		text = strings.TrimSpace(text)
		if !strings.HasPrefix(text, "/*") {
			return text == ""
		}
		end := strings.Index(text, "*/")
		if end < 0 {
			return false
		}
		text = text[end+2:]
	}
}
