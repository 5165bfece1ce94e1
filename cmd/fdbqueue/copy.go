package main

import (
	"database/sql"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	fdbqueue "github.com/fdbqueue/fdbqueue/driver"
	"github.com/fdbqueue/fdbqueue/exec"
)

// A \copy batch is at most copyBatch rows and copyBatchBytes bytes of
// fields, well inside a transaction's 10 MB.
const (
	copyBatch      = 1000
	copyBatchBytes = 1 << 20
)

// countingReader counts the bytes read through it, for the progress bar.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// copyCommand runs \copy TABLE FROM 'FILE' (or FROM STDIN): a CSV file whose
// header row names the columns; an empty field is NULL.
func (sh *shell) copyCommand(cmd string) error {
	const usage = `usage: \copy TABLE FROM 'file.csv' (or FROM STDIN)`
	f := strings.Fields(cmd)
	if len(f) < 4 || !strings.EqualFold(f[2], "from") {
		return errors.New(usage)
	}
	table := f[1]
	// The source is the rest of the line after FROM: a quoted name may
	// hold spaces.
	rest := afterFields(cmd, 3)
	src, err := metaArg(rest)
	if err != nil {
		return fmt.Errorf("%v; %s", err, usage)
	}
	name := "<stdin>"
	var r io.Reader = sh.stdin
	var size int64
	isStdin := strings.EqualFold(strings.TrimSpace(rest), "stdin")
	if isStdin && r == nil {
		return errors.New(`\copy ... FROM STDIN: the script itself is standard input; name a file`)
	}
	if !isStdin {
		name = src
		file, err := os.Open(name)
		if err != nil {
			return err
		}
		defer file.Close()
		if info, err := file.Stat(); err == nil {
			size = info.Size()
		}
		r = file
	}
	return sh.copyFrom(table, name, r, size)
}

// afterFields returns text after its first n space-separated fields.
func afterFields(text string, n int) string {
	for range n {
		text = strings.TrimLeft(text, " \t")
		i := strings.IndexAny(text, " \t")
		if i < 0 {
			return ""
		}
		text = text[i:]
	}
	return text
}

// metaArg reads a meta-command's file argument: one word, or a quoted
// string ('...' or "...", the quote doubled inside) that may hold spaces.
func metaArg(text string) (string, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return "", errors.New("a file name is missing")
	}
	q := text[0]
	if q != '\'' && q != '"' {
		if strings.ContainsAny(text, " \t") {
			return "", fmt.Errorf("%q: quote a name that holds spaces", text)
		}
		return text, nil
	}
	var b strings.Builder
	for i := 1; i < len(text); i++ {
		if text[i] != q {
			b.WriteByte(text[i])
			continue
		}
		if i+1 < len(text) && text[i+1] == q {
			b.WriteByte(q)
			i++
			continue
		}
		if extra := strings.TrimSpace(text[i+1:]); extra != "" {
			return "", fmt.Errorf("unexpected %q after the file name", extra)
		}
		return b.String(), nil
	}
	return "", fmt.Errorf("unterminated %c quote in %s", q, text)
}

// copyRow is a CSV record waiting in a batch.
type copyRow struct {
	line int
	args []any
}

// copier loads one \copy source. Each batch is loaded by multi-row INSERTs,
// each atomic and exactly-once through commit_unknown_result, as autocommit
// statements are. A bad row is reported by its line and the others still
// load.
type copier struct {
	sh               *shell
	name, table      string
	cols             []string
	tuple            string // "(?, ?, ...)"
	stmts            map[int]*sql.Stmt
	loaded, rejected int
}

func (sh *shell) copyFrom(table, name string, r io.Reader, size int64) error {
	cr := &countingReader{r: r}
	rd := csv.NewReader(cr)
	rd.FieldsPerRecord = -1
	header, err := rd.Read()
	if err != nil {
		return fmt.Errorf("%s: reading the header row: %w", name, err)
	}
	c := &copier{sh: sh, name: name, table: table}
	marks := make([]string, len(header))
	for i, h := range header {
		c.cols = append(c.cols, strings.TrimSpace(h))
		marks[i] = "?"
	}
	if err := sh.checkCopyTarget(table, name, c.cols); err != nil {
		return err
	}
	c.tuple = "(" + strings.Join(marks, ", ") + ")"

	var bar *progressbar.ProgressBar
	if out, ok := sh.msg.(*os.File); ok && size >= 4<<20 && term.IsTerminal(int(out.Fd())) {
		bar = progressbar.DefaultBytes(size, "loading "+name)
	}
	var batch []copyRow
	batchBytes := 0
	flush := func() error {
		err := c.load(batch)
		batch, batchBytes = batch[:0], 0
		if bar != nil {
			_ = bar.Set64(cr.n)
		}
		return err
	}
	for {
		rec, err := rd.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line, _ := rd.FieldPos(0)
		if err != nil {
			var pe *csv.ParseError
			if !errors.As(err, &pe) {
				return c.finish(errors.Join(err, flush()))
			}
			fmt.Fprintf(sh.msg, "%s:%d: %v\n", name, line, err)
			c.rejected++
			continue
		}
		if len(rec) != len(c.cols) {
			fmt.Fprintf(sh.msg, "%s:%d: %d fields, the header names %d columns\n", name, line, len(rec), len(c.cols))
			c.rejected++
			continue
		}
		args := make([]any, len(rec))
		for i, v := range rec {
			if v != "" { // an empty field is NULL
				args[i] = v
				batchBytes += len(v)
			}
		}
		batch = append(batch, copyRow{line: line, args: args})
		if len(batch) == copyBatch || batchBytes >= copyBatchBytes {
			if err := flush(); err != nil {
				return c.finish(err)
			}
		}
	}
	if err := flush(); err != nil {
		return c.finish(err)
	}
	if bar != nil {
		_ = bar.Finish()
	}
	return c.finish(nil)
}

// checkCopyTarget fails early, before any row is read, when the table does
// not exist or the header names a column it does not have.
func (sh *shell) checkCopyTarget(table, name string, cols []string) error {
	tables, err := fdbqueue.Tables(sh.ctx, sh.conn)
	if err != nil {
		return err
	}
	for _, t := range tables {
		if !strings.EqualFold(t.Name, table) {
			continue
		}
		have := make([]string, 0, len(t.Columns))
		for _, col := range t.Columns {
			have = append(have, col.Name)
		}
		for _, col := range cols {
			if !slices.ContainsFunc(have, func(h string) bool { return strings.EqualFold(h, col) }) {
				return fmt.Errorf("%s: the header names column %q; table %s has columns %s", name, col, t.Name, strings.Join(have, ", "))
			}
		}
		return nil
	}
	return fmt.Errorf("no table %s; \\dt lists them", table)
}

// load inserts a batch. Statements take ladder sizes of rows (copyBatch,
// then halves down to 1), so a load prepares at most a dozen statements
// however its rows split. A bad row fails its statement without writing
// anything and names itself (exec.RowError): it is reported by its line
// and the rows are loaded again without it. load returns an error only
// when loading cannot go on.
func (c *copier) load(rows []copyRow) error {
	for len(rows) > 0 {
		n := copyBatch
		for n > len(rows) {
			n /= 2
		}
		chunk := rows[:n]
		args := make([]any, 0, n*len(c.cols))
		for _, r := range chunk {
			args = append(args, r.args...)
		}
		err := c.exec(n, args)
		var re *exec.RowError
		switch {
		case err == nil:
			c.loaded += n
			rows = rows[n:]
		case errors.As(err, &re) && re.Row >= 1 && re.Row <= n:
			bad := chunk[re.Row-1]
			fmt.Fprintf(c.sh.msg, "%s:%d: %v\n", c.name, bad.line, re.Err)
			c.rejected++
			rows = append(rows[:re.Row-1:re.Row-1], rows[re.Row:]...)
		default:
			return c.lost(rows, err)
		}
	}
	return nil
}

// exec runs the INSERT of n rows, through a statement prepared once per n.
func (c *copier) exec(n int, args []any) error {
	st, ok := c.stmts[n]
	if !ok {
		var b strings.Builder
		fmt.Fprintf(&b, "INSERT INTO %s (%s) VALUES %s", c.table, strings.Join(c.cols, ", "), c.tuple)
		for range n - 1 {
			b.WriteString(", ")
			b.WriteString(c.tuple)
		}
		var err error
		if st, err = c.sh.conn.PrepareContext(c.sh.ctx, b.String()); err != nil {
			return err
		}
		if c.stmts == nil {
			c.stmts = map[int]*sql.Stmt{}
		}
		c.stmts[n] = st
	}
	_, err := st.ExecContext(c.sh.ctx, args...)
	return err
}

// lost reports rows whose fate the loader cannot vouch for: cancelled (not
// written) or in doubt (the commit's outcome is unknown).
func (c *copier) lost(rows []copyRow, err error) error {
	span := fmt.Sprintf("%s:%d-%d", c.name, rows[0].line, rows[len(rows)-1].line)
	switch {
	case fdbqueue.IsMaybeCommitted(err):
		fmt.Fprintf(c.sh.msg, "%s: %d rows may or may not have been loaded: %v\n", span, len(rows), err)
	case c.sh.ctx.Err() != nil:
		fmt.Fprintf(c.sh.msg, "%s: cancelled; this batch and the rest of the file were not loaded\n", span)
		return c.sh.ctx.Err()
	default:
		fmt.Fprintf(c.sh.msg, "%s: %d rows not loaded: %v\n", span, len(rows), err)
	}
	return err
}

// finish prints how many rows were loaded and returns err, or an error
// if rows were rejected, so that a script stops there (the rows loaded
// stay loaded).
func (c *copier) finish(err error) error {
	for _, st := range c.stmts {
		st.Close()
	}
	fmt.Fprintf(c.sh.msg, "COPY %d\n", c.loaded)
	if err == nil && c.rejected > 0 {
		rows := "rows"
		if c.rejected == 1 {
			rows = "row"
		}
		err = fmt.Errorf("\\copy: %d %s rejected (reported above by line)", c.rejected, rows)
	}
	return err
}
