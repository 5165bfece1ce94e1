package shell

import (
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	fdbqueue "github.com/fdbqueue/fdbqueue/driver"
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

// copyUsage is the \copy syntax.
const copyUsage = `usage: \copy TABLE FROM 'file.csv' (or FROM STDIN, FROM PSTDIN); \copy TABLE TO 'file.csv' (or TO STDOUT)`

// copySpec is a parsed \copy command.
type copySpec struct {
	table string
	from  bool   // FROM (load), else TO (unload)
	file  string // the file, when stream is ""
	// stream is "stdin" (the script's inline data; at the prompt, lines
	// typed; with -c, standard input), "pstdin" (standard input), "stdout"
	// (the results' output), or "" for a file.
	stream string
}

func parseCopy(cmd string) (copySpec, error) {
	var c copySpec
	rest := strings.TrimSpace(strings.TrimPrefix(cmd, `\copy`))
	table, rest, err := parseIdent(rest)
	if err != nil {
		return c, fmt.Errorf("%v; %s", err, copyUsage)
	}
	c.table = table
	rest = strings.TrimLeft(rest, " \t")
	dir := rest
	if i := strings.IndexAny(rest, " \t"); i >= 0 {
		dir, rest = rest[:i], rest[i:]
	} else {
		rest = ""
	}
	switch {
	case strings.EqualFold(dir, "from"):
		c.from = true
	case strings.EqualFold(dir, "to"):
	default:
		return c, errors.New(copyUsage)
	}
	word := strings.TrimSpace(rest)
	switch {
	case c.from && (strings.EqualFold(word, "stdin") || strings.EqualFold(word, "pstdin")),
		!c.from && strings.EqualFold(word, "stdout"):
		c.stream = strings.ToLower(word)
		return c, nil
	}
	if c.file, err = metaArg(rest); err != nil {
		return c, fmt.Errorf("%v; %s", err, copyUsage)
	}
	return c, nil
}

// parseIdent reads a table name: one word, or a name in backticks (a
// backtick doubled inside), as SQL quotes it. It returns the text after it.
func parseIdent(text string) (name, rest string, err error) {
	text = strings.TrimLeft(text, " \t")
	if text == "" {
		return "", "", errors.New("a table name is missing")
	}
	if text[0] != '`' {
		i := strings.IndexAny(text, " \t")
		if i < 0 {
			return text, "", nil
		}
		return text[:i], text[i:], nil
	}
	var b strings.Builder
	for i := 1; i < len(text); i++ {
		if text[i] != '`' {
			b.WriteByte(text[i])
			continue
		}
		if i+1 < len(text) && text[i+1] == '`' {
			b.WriteByte('`')
			i++
			continue
		}
		if b.Len() == 0 {
			return "", "", errors.New("an empty table name ``")
		}
		return b.String(), text[i+1:], nil
	}
	return "", "", fmt.Errorf("unterminated ` quote in %s", text)
}

// quoteIdent quotes a name for SQL: in backticks, a backtick doubled, so
// that any name (a keyword such as order, spaces, any script) is one
// identifier.
func quoteIdent(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

// copyCommand runs \copy: FROM loads a CSV file whose header row names the
// columns, TO writes one (a peek: it removes nothing).
func (sh *shell) copyCommand(st statement) error {
	c, err := parseCopy(st.text)
	if err != nil {
		return err
	}
	if !c.from {
		return sh.copyToCommand(c)
	}
	name := "<stdin>"
	var r io.Reader = sh.stdin
	var size int64
	base := 0
	switch {
	case c.stream == "stdin" && st.inline:
		name, base = sh.source, st.line
		if name == "" {
			name = "<script>"
		}
		r = strings.NewReader(st.data)
	case c.stream == "stdin" && sh.promptData != nil:
		data, err := sh.promptData()
		if err != nil {
			return err
		}
		r = strings.NewReader(data)
	case c.stream != "" && r == nil:
		return fmt.Errorf(`\copy ... FROM %s: the script itself is standard input; name a file, or put the data after the \copy line, ended by a line \.`, strings.ToUpper(c.stream))
	case c.stream == "":
		name = c.file
		file, err := os.Open(name)
		if err != nil {
			return err
		}
		defer file.Close()
		if info, err := file.Stat(); err == nil {
			if info.IsDir() {
				return fmt.Errorf(`\copy %s FROM '%s': %s is a directory; \copy reads a CSV file`, c.table, name, name)
			}
			size = info.Size()
		}
		r = file
	}
	return sh.copyFromAt(c.table, copySource{name: name, base: base, inline: st.inline}, r, size)
}

// copySource names what \copy FROM reads, for its messages: a file, or
// data inline in a script, whose lines are counted from base, the \copy
// line.
type copySource struct {
	name   string
	base   int
	inline bool
}

// header is an error about the header row, with the file's name; inline
// data is named by the script's line already, and gets a reminder of where
// it comes from.
func (s copySource) header(format string, args ...any) error {
	if s.inline {
		return fmt.Errorf(format+" (in a script, \\copy ... FROM STDIN reads the lines after it, up to a line \\.; FROM PSTDIN reads standard input)", args...)
	}
	return fmt.Errorf(s.name+": "+format, args...)
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
	cols             []string // quoted for SQL
	tuple            string   // "(?, ?, ...)"
	stmts            map[int]*sql.Stmt
	loaded, rejected int
}

func (sh *shell) copyFrom(table, name string, r io.Reader, size int64) error {
	return sh.copyFromAt(table, copySource{name: name}, r, size)
}

// copyFromAt loads CSV text from r into table.
func (sh *shell) copyFromAt(table string, src copySource, r io.Reader, size int64) error {
	name, base := src.name, src.base
	t, err := sh.copyTable(table)
	if err != nil {
		return err
	}
	cr := &countingReader{r: r}
	rd := newCSVReader(cr)
	var header []csvField
	for header == nil {
		rec, line, err := rd.read()
		switch {
		case errors.Is(err, io.EOF):
			return src.header("no data: the first line must be a header row naming the columns")
		case err != nil:
			return src.header("line %d: reading the header row: %w", base+line, err)
		case len(rec) == 1 && rec[0].null():
			continue // blank lines before the header
		}
		header = rec
	}
	c := &copier{sh: sh, name: name, table: quoteIdent(t.Name)}
	marks := make([]string, len(header))
	blob := make([]bool, len(header))
	seen := map[string]bool{}
	for i, h := range header {
		name := strings.TrimSpace(h.value)
		col, ok := loadColumn(t, name)
		switch {
		case !ok && strings.EqualFold(name, "_lease"):
			return src.header("the header names _lease: a lease's token cannot be restored (a row leased at the backup stays hidden until its _visible_at, and is then due); leave the column out")
		case !ok:
			return src.header("the header names column %q; table %s has columns %s", h.value, t.Name, loadColumns(t))
		}
		if seen[strings.ToLower(col.Name)] {
			return src.header("the header names column %s twice", col.Name)
		}
		seen[strings.ToLower(col.Name)] = true
		c.cols = append(c.cols, quoteIdent(col.Name))
		blob[i] = col.Type == "BLOB"
		marks[i] = "?"
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
	reject := func(line int, format string, args ...any) {
		fmt.Fprintf(sh.msg, "%s:%d: %s\n", name, base+line, fmt.Sprintf(format, args...))
		c.rejected++
	}
records:
	for {
		rec, line, err := rd.read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var ce *csvError
			if !errors.As(err, &ce) {
				return c.finish(errors.Join(err, flush()))
			}
			reject(ce.line, "%v", err)
			continue
		}
		if len(rec) == 1 && rec[0].null() && len(c.cols) > 1 {
			continue // a blank line; with one column it is a NULL
		}
		if len(rec) != len(c.cols) {
			reject(line, "%d fields, the header names %d columns", len(rec), len(c.cols))
			continue
		}
		args := make([]any, len(rec))
		for i, f := range rec {
			switch {
			case f.null(): // NULL
			case blob[i] && strings.HasPrefix(f.value, `\x`):
				b, err := hex.DecodeString(f.value[2:])
				if err != nil {
					reject(line, "column %s is BLOB: a field starting with \\x is hex digits, two a byte (\\x00ff41), and %q is not; write text that starts with \\x as hex too", header[i].value, short(f.value))
					continue records
				}
				args[i] = b
			default:
				args[i] = f.value
			}
			batchBytes += len(f.value)
		}
		batch = append(batch, copyRow{line: base + line, args: args})
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

// copyTable finds a table by name, before any row is read or written.
func (sh *shell) copyTable(table string) (fdbqueue.TableInfo, error) {
	tables, err := fdbqueue.Tables(sh.ctx, sh.conn)
	if err != nil {
		return fdbqueue.TableInfo{}, err
	}
	for _, t := range tables {
		if strings.EqualFold(t.Name, table) {
			return t, nil
		}
	}
	return fdbqueue.TableInfo{}, fmt.Errorf("no table %s; \\dt lists them", table)
}

// load inserts a batch. Statements take ladder sizes of rows (copyBatch,
// then halves down to 1), so a load prepares at most a dozen statements
// however its rows split. A bad row fails its statement without writing
// anything and names itself (fdbqueue.RowError): it is reported by its line
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
		var re *fdbqueue.RowError
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
