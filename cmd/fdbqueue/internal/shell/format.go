package shell

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"
)

// The output formats, and how --json-ints prints integers in JSON.
var (
	formats      = []string{"table", "csv", "json", "jsonl"}
	jsonIntModes = []string{"auto", "string", "number"}
)

// maxExactInt is the largest integer a float64 (a JavaScript number, jq
// before 1.7) holds exactly: past it, JSON readers that parse numbers as
// doubles round.
const maxExactInt = 1 << 53

// printer renders result sets in one output format. Rendering cannot fail:
// every value the driver returns has a form in every format, so a row that
// FOR POP removed is never lost to a value that cannot be printed. The zero
// printer prints tables, integers as --json-ints auto.
type printer struct {
	format   string // table, csv, json or jsonl
	jsonInts string // auto, string or number
}

// newPrinter checks a format and a --json-ints mode.
func newPrinter(format, jsonInts string) (printer, error) {
	if !slices.Contains(formats, format) {
		return printer{}, fmt.Errorf("unknown format %q (formats: %s)", format, strings.Join(formats, ", "))
	}
	if !slices.Contains(jsonIntModes, jsonInts) {
		return printer{}, fmt.Errorf("unknown --json-ints %q (modes: %s)", jsonInts, strings.Join(jsonIntModes, ", "))
	}
	return printer{format: format, jsonInts: jsonInts}, nil
}

// render returns a result set in the printer's format.
func (p printer) render(cols []string, rows [][]any) []byte {
	switch p.format {
	case "csv":
		return renderCSV(cols, rows)
	case "json":
		return p.renderJSON(cols, rows, true)
	case "jsonl":
		return p.renderJSON(cols, rows, false)
	}
	return renderTable(cols, rows)
}

// floatText spells a float as PostgreSQL does: NaN, Infinity, -Infinity,
// else the shortest decimal that reads back as the same float (-0 is -0).
func floatText(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// blobHex is PostgreSQL's bytea hex form: \x and two hex digits a byte.
func blobHex(b []byte) string { return `\x` + hex.EncodeToString(b) }

func timeText(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// csvValue renders a value for CSV, the form \copy FROM reads back: NULL is
// an unquoted empty field, blobs are \x hex, floats as floatText, times in
// RFC 3339 (UTC).
func csvValue(v any) csvCell {
	switch x := v.(type) {
	case nil:
		return csvCell{null: true}
	case string:
		return csvCell{value: x}
	case []byte:
		return csvCell{value: blobHex(x)}
	case int64:
		return csvCell{value: strconv.FormatInt(x, 10)}
	case float64:
		return csvCell{value: floatText(x)}
	case bool:
		return csvCell{value: strconv.FormatBool(x)}
	case time.Time:
		return csvCell{value: timeText(x)}
	}
	return csvCell{value: fmt.Sprint(v)}
}

func renderCSV(cols []string, rows [][]any) []byte {
	rec := make([]csvCell, len(cols))
	for i, c := range cols {
		rec[i] = csvCell{value: c}
	}
	b := appendCSV(nil, rec)
	for _, row := range rows {
		for i, v := range row {
			rec[i] = csvValue(v)
		}
		b = appendCSV(b, rec)
	}
	return b
}

// tableText renders a value for the table format, which is for people:
// NULL for nil, a blob as its text when that is printable UTF-8 not
// starting with \x, else as \x hex; line breaks in text as \n and \r.
func tableText(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		if utf8.Valid(x) && !bytes.HasPrefix(x, []byte(`\x`)) && printable(string(x)) {
			return string(x)
		}
		return blobHex(x)
	case string:
		return strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(x)
	}
	return csvValue(v).value
}

// printable reports whether s holds no control characters but tabs.
func printable(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return r != '\t' && unicode.IsControl(r) })
}

func renderTable(cols []string, rows [][]any) []byte {
	widths := make([]int, len(cols))
	cells := make([][]string, len(rows))
	for i, c := range cols {
		widths[i] = runewidth.StringWidth(c)
	}
	for r, row := range rows {
		cells[r] = make([]string, len(row))
		for i, v := range row {
			s := tableText(v)
			cells[r][i] = s
			widths[i] = max(widths[i], runewidth.StringWidth(s))
		}
	}
	var b bytes.Buffer
	line := func(vals []string) {
		for i, v := range vals {
			if i > 0 {
				b.WriteString(" | ")
			}
			b.WriteString(v)
			if i < len(vals)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-runewidth.StringWidth(v)))
			}
		}
		b.WriteString("\n")
	}
	line(cols)
	sep := make([]string, len(cols))
	for i := range sep {
		sep[i] = strings.Repeat("-", widths[i])
	}
	b.WriteString(strings.Join(sep, "-+-") + "\n")
	for _, r := range cells {
		line(r)
	}
	if len(rows) == 1 {
		b.WriteString("(1 row)\n")
	} else {
		fmt.Fprintf(&b, "(%d rows)\n", len(rows))
	}
	b.WriteString("\n")
	return b.Bytes()
}

// appendJSONString appends s as a JSON string, without escaping <, > and &.
func appendJSONString(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}

// appendJSONValue appends a value as JSON: blobs as "\x..." hex strings (as
// PostgreSQL's row_to_json), times as RFC 3339 strings, NaN and infinities
// as the strings "NaN", "Infinity", "-Infinity", and integers as numbers,
// or strings as --json-ints says.
func (p printer) appendJSONValue(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case string:
		return appendJSONString(b, x)
	case []byte:
		return appendJSONString(b, blobHex(x))
	case int64:
		s := strconv.FormatInt(x, 10)
		switch p.jsonInts {
		case "string":
			return appendJSONString(b, s)
		case "number":
			return append(b, s...)
		}
		if x < -maxExactInt || x > maxExactInt {
			return appendJSONString(b, s)
		}
		return append(b, s...)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return appendJSONString(b, floatText(x))
		}
		return append(b, floatText(x)...)
	case bool:
		return strconv.AppendBool(b, x)
	case time.Time:
		return appendJSONString(b, timeText(x))
	}
	return appendJSONString(b, fmt.Sprint(v))
}

// renderJSON renders rows as JSON objects, keys in column order: an
// indented array (json), or one object a line (jsonl).
func (p printer) renderJSON(cols []string, rows [][]any, array bool) []byte {
	keys := make([][]byte, len(cols))
	for i, c := range cols {
		keys[i] = appendJSONString(nil, c)
	}
	// A column has one JSON type in a result: under auto, a column with
	// any integer beyond +-2^53 prints all of its integers as strings.
	colp := make([]printer, len(cols))
	for i := range colp {
		colp[i] = p
		if p.jsonInts != "auto" {
			continue
		}
		colp[i].jsonInts = "number"
		for _, row := range rows {
			if x, ok := row[i].(int64); ok && (x < -maxExactInt || x > maxExactInt) {
				colp[i].jsonInts = "string"
				break
			}
		}
	}
	var b []byte
	if array {
		if len(rows) == 0 {
			return []byte("[]\n")
		}
		b = append(b, "[\n"...)
	}
	for r, row := range rows {
		if array {
			b = append(b, "  {"...)
		} else {
			b = append(b, '{')
		}
		for i, v := range row {
			if i > 0 {
				b = append(b, ',')
			}
			if array {
				b = append(b, "\n    "...)
			}
			b = append(b, keys[i]...)
			b = append(b, ':')
			if array {
				b = append(b, ' ')
			}
			b = colp[i].appendJSONValue(b, v)
		}
		switch {
		case array && len(row) > 0:
			b = append(b, "\n  }"...)
		default:
			b = append(b, '}')
		}
		if array && r < len(rows)-1 {
			b = append(b, ',')
		}
		b = append(b, '\n')
	}
	if array {
		b = append(b, "]\n"...)
	}
	return b
}
