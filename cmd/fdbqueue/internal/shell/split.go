package shell

import (
	"fmt"
	"strings"
)

// statement is one statement of a script, with the line it starts on.
type statement struct {
	text string
	line int
	meta bool // a meta-command such as \copy: one line, no semicolon
	// inline marks a \copy ... FROM STDIN of a script, and data is what
	// follows it in the script, up to a line \. (not kept in data).
	inline bool
	data   string
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
	// inline makes a \copy ... FROM STDIN take the lines after it as its
	// data, up to a line \. outside a quoted CSV field: in scripts, not in
	// -c commands.
	inline bool
	// copying is the \copy taking data; partial is its unfinished last
	// line; dataQuote is whether its data ends inside a quoted field.
	copying   *statement
	partial   strings.Builder
	dataQuote bool
}

func newSplitter() *splitter { return &splitter{line: 1} }

// newScriptSplitter is a splitter for a script: \copy ... FROM STDIN takes
// its data inline.
func newScriptSplitter() *splitter { return &splitter{line: 1, inline: true} }

// copyFromStdin reports whether a meta-command is a \copy ... FROM STDIN.
func copyFromStdin(meta string) bool {
	f := strings.Fields(meta)
	return len(f) >= 4 && f[0] == `\copy` && strings.EqualFold(f[len(f)-1], "stdin") && strings.EqualFold(f[len(f)-2], "from")
}

// feedData adds text to the data of a \copy ... FROM STDIN. It returns how
// many bytes it took: all of text, or up to the end of the line \. that
// ends the data.
func (s *splitter) feedData(text string) (int, bool) {
	taken := 0
	for taken < len(text) {
		nl := strings.IndexByte(text[taken:], '\n')
		if nl < 0 {
			s.partial.WriteString(text[taken:])
			return len(text), false
		}
		s.partial.WriteString(text[taken : taken+nl+1])
		taken += nl + 1
		s.line++
		if s.endData() {
			return taken, true
		}
	}
	return taken, false
}

// endData takes the complete line in s.partial: it reports whether the
// line is the \. that ends the data, else adds it to the data.
func (s *splitter) endData() bool {
	line := s.partial.String()
	s.partial.Reset()
	if !s.dataQuote && trimEOL(line) == `\.` {
		return true
	}
	s.copying.data += line
	s.dataQuote = csvEndsQuoted(line, s.dataQuote)
	return false
}

// feed adds text and returns the statements it completed.
func (s *splitter) feed(text string) []statement {
	var out []statement
	for i := 0; i < len(text); i++ {
		if s.copying != nil {
			n, done := s.feedData(text[i:])
			if done {
				out = append(out, *s.copying)
				s.copying = nil
			}
			i += n - 1
			continue
		}
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
			st := statement{text: strings.TrimSpace(text[i : i+end]), line: s.line, meta: true}
			s.buf.Reset()
			i += end - 1
			s.prev = 0
			if s.inline && copyFromStdin(st.text) {
				// The data starts on the next line.
				st.inline = true
				s.copying, s.dataQuote = &st, false
				if i+1 < len(text) {
					i++ // the newline
					s.line++
				}
				continue
			}
			out = append(out, st)
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
	return t != "" && !onlyComments(t) || s.quote != 0 || s.block || s.copying != nil
}

// finish returns the last statement, which may lack its semicolon, or an
// error for an unterminated quote or comment. A \copy ... FROM STDIN whose
// data has no \. ends with the script, as in psql.
func (s *splitter) finish() (*statement, error) {
	if st := s.copying; st != nil {
		if s.partial.Len() > 0 {
			s.endData()
		}
		s.copying = nil
		return st, nil
	}
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
