package shell

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// The shell's CSV is PostgreSQL's COPY ... CSV: RFC 4180 quoting, and a
// field is quoted or not, which encoding/csv cannot tell apart. An unquoted
// empty field is NULL and a quoted one ("") is the empty string, so NULL and
// '' both survive a round trip. Inside quotes every byte is kept as it is
// (a CRLF stays a CRLF); outside, a line ends at LF or CRLF.

// csvField is one field of a record.
type csvField struct {
	value  string
	quoted bool
}

// null reports whether the field is NULL: unquoted and empty.
func (f csvField) null() bool { return !f.quoted && f.value == "" }

// csvError is a record that is not valid CSV, with the line it starts on.
type csvError struct {
	line int
	msg  string
}

func (e *csvError) Error() string { return e.msg }

// csvReader reads records. A UTF-8 byte order mark at the start is skipped.
type csvReader struct {
	r    *bufio.Reader
	line int // lines read so far
}

func newCSVReader(r io.Reader) *csvReader {
	return &csvReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// readLine returns the next line with its line ending, "" at the end.
func (cr *csvReader) readLine() (string, error) {
	s, err := cr.r.ReadString('\n')
	if err == io.EOF {
		err = nil
	}
	if err != nil {
		return "", err
	}
	if s != "" {
		cr.line++
		if cr.line == 1 {
			s = strings.TrimPrefix(s, "\ufeff")
		}
	}
	return s, nil
}

// trimEOL removes a line's LF or CRLF.
func trimEOL(s string) string {
	s = strings.TrimSuffix(s, "\n")
	return strings.TrimSuffix(s, "\r")
}

// read returns the next record and the line it starts on, or io.EOF. An
// empty line is a record of one NULL field. A *csvError is a bad record,
// consumed: the next read goes on after it.
func (cr *csvReader) read() ([]csvField, int, error) {
	text, err := cr.readLine()
	if err != nil {
		return nil, 0, err
	}
	if text == "" {
		return nil, 0, io.EOF
	}
	start := cr.line
	var rec []csvField
	pos := 0
	for {
		if pos < len(text) && text[pos] == '"' {
			pos++
			var b strings.Builder
			for {
				i := strings.IndexByte(text[pos:], '"')
				if i < 0 { // the field goes on on the next line
					b.WriteString(text[pos:])
					if text, err = cr.readLine(); err != nil {
						return nil, start, err
					}
					if text == "" {
						return nil, start, &csvError{start, "a quoted field is not closed by the end of the file"}
					}
					pos = 0
					continue
				}
				b.WriteString(text[pos : pos+i])
				pos += i + 1
				if pos < len(text) && text[pos] == '"' { // "" is a quote
					b.WriteByte('"')
					pos++
					continue
				}
				break
			}
			rec = append(rec, csvField{value: b.String(), quoted: true})
			rest := text[pos:]
			switch {
			case strings.HasPrefix(rest, ","):
				pos++
				continue
			case trimEOL(rest) == "":
				return rec, start, nil
			}
			return nil, start, &csvError{start, fmt.Sprintf("text %q after a closing quote; a field is either all quoted, with \"\" for a quote inside, or not quoted", short(trimEOL(rest)))}
		}
		end := strings.IndexByte(text[pos:], ',')
		last := end < 0
		if last {
			end = len(text) - pos
		}
		v := text[pos : pos+end]
		if last {
			v = trimEOL(v)
		}
		if strings.IndexByte(v, '"') >= 0 {
			return nil, start, &csvError{start, fmt.Sprintf("a quote inside the unquoted field %q; quote the whole field and double the quotes inside (\"a \"\"b\"\"\")", short(v))}
		}
		rec = append(rec, csvField{value: v})
		if last {
			return rec, start, nil
		}
		pos += end + 1
	}
}

// short cuts a value for an error message.
func short(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// csvCell is a value to write: NULL, or text.
type csvCell struct {
	value string
	null  bool
}

// appendCSV appends a record and its LF. NULL is an empty field; the empty
// string, and text that needs it, are quoted. So is \. alone, which ends
// inline \copy data in a script.
func appendCSV(b []byte, rec []csvCell) []byte {
	for i, c := range rec {
		if i > 0 {
			b = append(b, ',')
		}
		if c.null {
			continue
		}
		if !needsQuotes(c.value) {
			b = append(b, c.value...)
			continue
		}
		b = append(b, '"')
		b = append(b, strings.ReplaceAll(c.value, `"`, `""`)...)
		b = append(b, '"')
	}
	return append(b, '\n')
}

// needsQuotes: the empty string (else NULL), separators, quotes and line
// breaks, \. (else the end of inline data), a leading byte order mark
// (else skipped at the start of a file), and spaces at either end (kept
// as they are either way, but not by every other reader).
func needsQuotes(s string) bool {
	return s == "" || s == `\.` || strings.ContainsAny(s, ",\"\r\n") || strings.HasPrefix(s, "\ufeff") ||
		s[0] == ' ' || s[0] == '\t' || s[len(s)-1] == ' ' || s[len(s)-1] == '\t'
}

// csvEndsQuoted reports whether a line of CSV, begun inside a quoted field
// or not, ends inside one, as csvReader reads it: a quote opens a field
// only at its start, and "" inside a quoted field is a quote. A line \.
// inside a quoted field is data, not the end of inline data.
func csvEndsQuoted(line string, quoted bool) bool {
	fieldStart := !quoted
	for i := 0; i < len(line); i++ {
		c := line[i]
		if quoted {
			if c == '"' {
				if i+1 < len(line) && line[i+1] == '"' {
					i++
				} else {
					quoted = false
				}
			}
			continue
		}
		switch {
		case c == '"' && fieldStart:
			quoted = true
		case c == ',':
			fieldStart = true
			continue
		}
		fieldStart = false
	}
	return quoted
}
