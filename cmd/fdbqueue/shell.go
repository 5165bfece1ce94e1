package main

import (
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// shell runs statements on one connection and prints their results.
type shell struct {
	ctx    context.Context
	conn   *sql.Conn
	out    io.Writer // results
	msg    io.Writer // messages and errors
	format formatter
	opts   *options
	// echo prints each statement before its result (table format, for
	// people reading a script's output).
	echo bool
	// timing prints each statement's duration (\timing).
	timing bool
	// stdin is what \copy ... FROM STDIN reads: nil when the script itself
	// comes from standard input.
	stdin io.Reader
	// depth is how deep \i includes are nested.
	depth int
	// interrupts delivers Ctrl-C at the interactive prompt.
	interrupts chan os.Signal
}

// runAll runs a script's statements; it returns the exit status.
func (sh *shell) runAll(source string, stmts []statement) int {
	status := 0
	if sh.opts.single {
		if _, err := sh.conn.ExecContext(sh.ctx, "BEGIN"); err != nil {
			fmt.Fprintf(sh.msg, "%s: %v\n", source, err)
			return 1
		}
	}
	for _, st := range stmts {
		if sh.echo {
			fmt.Fprintf(sh.out, "=> %s\n", strings.Join(strings.Fields(st.text), " "))
		}
		quit, err := sh.runOne(st)
		if quit {
			break
		}
		if err != nil {
			fmt.Fprintf(sh.msg, "%s:%d: %v\n", source, st.line, err)
			status = 1
			if sh.opts.single {
				_, _ = sh.conn.ExecContext(context.Background(), "ROLLBACK")
				fmt.Fprintln(sh.msg, "fdbqueue: rolled back: nothing of the script was written")
				return 1
			}
			if !sh.opts.continueOnError {
				return 1
			}
		}
	}
	if sh.opts.single {
		if _, err := sh.conn.ExecContext(sh.ctx, "COMMIT"); err != nil {
			fmt.Fprintf(sh.msg, "%s: commit: %v\n", source, err)
			return 1
		}
	}
	return status
}

// runOne runs a statement or a meta-command; it reports whether to quit.
func (sh *shell) runOne(st statement) (bool, error) {
	if st.meta {
		return sh.meta(st.text)
	}
	start := time.Now()
	err := sh.exec(st.text)
	sh.printTiming(start)
	return false, err
}

// isQuery reports whether a statement returns rows.
func isQuery(text string) bool {
	f := strings.Fields(strings.TrimLeft(stripLeadingComments(text), "("))
	return len(f) > 0 && strings.EqualFold(f[0], "select")
}

func stripLeadingComments(text string) string {
	for {
		text = strings.TrimSpace(text)
		if !strings.HasPrefix(text, "/*") {
			return text
		}
		end := strings.Index(text, "*/")
		if end < 0 {
			return text
		}
		text = text[end+2:]
	}
}

// exec runs one statement and prints its result.
func (sh *shell) exec(text string) error {
	if !isQuery(text) {
		res, err := sh.conn.ExecContext(sh.ctx, text)
		if err != nil {
			return err
		}
		verb := strings.ToUpper(strings.Fields(stripLeadingComments(text))[0])
		if n, err := res.RowsAffected(); err == nil && (verb == "INSERT" || verb == "DELETE" || verb == "UPDATE") {
			fmt.Fprintf(sh.msg, "%s %d\n", verb, n)
		} else {
			fmt.Fprintln(sh.msg, verb)
		}
		return nil
	}
	rows, err := sh.conn.QueryContext(sh.ctx, text)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	var data [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		data = append(data, vals)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return sh.format(sh.out, cols, data)
}

// formatter prints a result set.
type formatter func(w io.Writer, cols []string, rows [][]any) error

var formatters = map[string]formatter{
	"table": formatTable,
	"csv":   formatCSV,
	"json":  formatJSON,
	"jsonl": formatJSONL,
}

// text renders a value for table and CSV output: NULL (table) or empty
// (CSV) for nil, blobs as text when valid UTF-8 and as \x-hex otherwise,
// times in RFC 3339.
func text(v any, null string) string {
	switch x := v.(type) {
	case nil:
		return null
	case []byte:
		if utf8.Valid(x) {
			return string(x)
		}
		return `\x` + hex.EncodeToString(x)
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}

func formatTable(w io.Writer, cols []string, rows [][]any) error {
	widths := make([]int, len(cols))
	cells := make([][]string, len(rows))
	for i, c := range cols {
		widths[i] = utf8.RuneCountInString(c)
	}
	for r, row := range rows {
		cells[r] = make([]string, len(row))
		for i, v := range row {
			s := strings.ReplaceAll(text(v, "NULL"), "\n", `\n`)
			cells[r][i] = s
			widths[i] = max(widths[i], utf8.RuneCountInString(s))
		}
	}
	var b strings.Builder
	line := func(vals []string) {
		for i, v := range vals {
			if i > 0 {
				b.WriteString(" | ")
			}
			b.WriteString(v)
			if i < len(vals)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(v)))
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
	_, err := io.WriteString(w, b.String()+"\n")
	return err
}

func formatCSV(w io.Writer, cols []string, rows [][]any) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(cols); err != nil {
		return err
	}
	for _, row := range rows {
		rec := make([]string, len(row))
		for i, v := range row {
			rec[i] = text(v, "")
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// jsonValue renders a value for JSON: blobs as text when valid UTF-8,
// else as {"hex": "..."}.
func jsonValue(v any) any {
	switch x := v.(type) {
	case []byte:
		if utf8.Valid(x) {
			return string(x)
		}
		return map[string]string{"hex": hex.EncodeToString(x)}
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	}
	return v
}

// object is a row as a JSON object, keys in column order.
type object struct {
	cols []string
	vals []any
}

func (o object) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, c := range o.cols {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(c)
		v, err := json.Marshal(jsonValue(o.vals[i]))
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

func formatJSON(w io.Writer, cols []string, rows [][]any) error {
	objs := make([]object, len(rows))
	for i, r := range rows {
		objs[i] = object{cols, r}
	}
	b, err := json.MarshalIndent(objs, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

func formatJSONL(w io.Writer, cols []string, rows [][]any) error {
	for _, r := range rows {
		b, err := json.Marshal(object{cols, r})
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "%s\n", b); err != nil {
			return err
		}
	}
	return nil
}
