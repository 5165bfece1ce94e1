package shell

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/peterh/liner"

	fdbqueue "github.com/fdbqueue/fdbqueue/driver"
)

const metaHelp = `meta-commands:
  \dt                         list tables
  \d TABLE                    describe a table: columns, queue kind, index, row count, options
  \timing [on|off]            print how long each statement took
  \format table|csv|json|jsonl  set the output format
  \i FILE                     run a script
  \copy TABLE FROM 'FILE'     load a CSV file (header row: column names); FROM STDIN: lines typed, up to \.
  \copy TABLE TO 'FILE'       back a table up as CSV (id, columns, _visible_at, _attempts), which \copy FROM restores; TO STDOUT prints it
  \q                          quit (so does Ctrl-D)
  \?                          this help
Statements end with ';' and may span lines. Ctrl-C cancels the running
statement, or clears the statement being typed.
`

// historyPath is where the prompt keeps its history.
func historyPath() string {
	if p := os.Getenv("FDBQUEUE_HISTORY"); p != "" {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".fdbqueue_history")
}

// interactive runs the prompt until \q or end of input.
func (sh *shell) interactive() int {
	line := liner.NewLiner()
	defer line.Close()
	line.SetCtrlCAborts(true)
	line.SetMultiLineMode(true)
	hist := historyPath()
	if hist != "" {
		if f, err := os.Open(hist); err == nil {
			_, _ = line.ReadHistory(f)
			f.Close()
		}
	}
	saveHistory := func() {
		if hist == "" {
			return
		}
		if f, err := os.OpenFile(hist, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600); err == nil {
			_, _ = line.WriteHistory(f)
			f.Close()
		}
	}
	defer saveHistory()

	// SIGINT is caught for the whole session, so that a Ctrl-C landing
	// between two statements (when the line editor is not reading the
	// terminal) cannot kill the shell either.
	sh.interrupts = make(chan os.Signal, 1)
	signal.Notify(sh.interrupts, os.Interrupt)
	defer signal.Stop(sh.interrupts)

	fmt.Fprintf(sh.msg, "fdbqueue shell on %s. \\? for help, \\q to quit.\n", sh.opts.dsn)
	sh.promptData = func() (string, error) { return sh.readData(line) }
	defer func() {
		if sh.rollBackOpen() {
			fmt.Fprintln(sh.msg, "fdbqueue: the session ended inside a transaction (BEGIN without COMMIT); it was rolled back")
		}
	}()
	sp := newSplitter()
	status := 0
	for {
		prompt := "fdbqueue> "
		if sp.pending() {
			prompt = "      ...> "
		}
		input, err := line.Prompt(prompt)
		if errors.Is(err, liner.ErrPromptAborted) {
			sp = newSplitter() // Ctrl-C: drop what was being typed
			continue
		}
		if err != nil { // io.EOF: Ctrl-D
			fmt.Fprintln(sh.msg)
			return status
		}
		if !sp.pending() && strings.HasPrefix(strings.TrimSpace(input), `\`) {
			line.AppendHistory(strings.TrimSpace(input))
			var quit bool
			err := sh.interruptible(strings.Fields(input)[0], func() (err error) {
				quit, err = sh.meta(strings.TrimSpace(input))
				return err
			})
			if err != nil {
				fmt.Fprintln(sh.msg, "error:", err)
			}
			if quit {
				return status
			}
			continue
		}
		for _, st := range sp.feed(input + "\n") {
			line.AppendHistory(strings.Join(strings.Fields(st.text), " ") + ";")
			if err := sh.execCancellable(st.text); err != nil {
				fmt.Fprintln(sh.msg, "error:", err)
			}
		}
	}
}

// readData reads the lines of a \copy ... FROM STDIN at the prompt, up to a
// line \. outside a quoted field, or Ctrl-D; Ctrl-C cancels the \copy.
func (sh *shell) readData(line *liner.State) (string, error) {
	fmt.Fprintln(sh.msg, "Enter the CSV data, a header row first, and end with a line \\. (or Ctrl-D).")
	defer keepCtrlCAsKey(int(os.Stdin.Fd()))()
	var data strings.Builder
	quoted := false
	for {
		text, err := line.Prompt(">> ")
		switch {
		case errors.Is(err, liner.ErrPromptAborted):
			return "", errors.New(`\copy cancelled: nothing was loaded`)
		case err != nil: // io.EOF: Ctrl-D
			return data.String(), nil
		case !quoted && strings.TrimSpace(text) == `\.`:
			return data.String(), nil
		}
		data.WriteString(text + "\n")
		quoted = csvEndsQuoted(text, quoted)
	}
}

// interruptible runs fn with sh.ctx cancelled by Ctrl-C: the interrupt
// stops what fn is doing, not the shell.
func (sh *shell) interruptible(what string, fn func() error) error {
	ctx, cancel := context.WithCancel(sh.ctx)
	defer cancel()
	sig := sh.interrupts
	if sig == nil {
		sig = make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt)
		defer signal.Stop(sig)
	}
	select {
	case <-sig: // a Ctrl-C from before this started is not for it
	default:
	}
	go func() {
		select {
		case <-sig:
			cancel()
		case <-ctx.Done():
		}
	}()
	saved := sh.ctx
	sh.ctx = ctx
	defer func() { sh.ctx = saved }()
	err := fn()
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s cancelled", what)
	}
	return err
}

// execCancellable runs one statement; Ctrl-C cancels it, not the shell.
func (sh *shell) execCancellable(text string) error {
	start := time.Now()
	err := sh.interruptible("statement", func() error { return sh.exec(text) })
	sh.printTiming(start)
	return err
}

// maxIncludeDepth bounds \i inside \i.
const maxIncludeDepth = 16

// printTiming prints the time since start under \timing.
func (sh *shell) printTiming(start time.Time) {
	if sh.timing {
		fmt.Fprintf(sh.msg, "Time: %.3f ms\n", float64(time.Since(start).Microseconds())/1000)
	}
}

// meta runs a meta-command; it reports whether to quit.
func (sh *shell) meta(cmd string) (bool, error) {
	return sh.runMeta(statement{text: cmd, meta: true})
}

// runMeta runs a meta-command of a script, which may carry inline \copy
// data; it reports whether to quit.
func (sh *shell) runMeta(st statement) (bool, error) {
	cmd := st.text
	f := strings.Fields(cmd)
	switch f[0] {
	case `\q`, `\quit`:
		return true, nil
	case `\?`, `\h`, `\help`:
		fmt.Fprint(sh.msg, metaHelp)
	case `\timing`:
		switch {
		case len(f) == 1:
			sh.timing = !sh.timing
		case f[1] == "on":
			sh.timing = true
		case f[1] == "off":
			sh.timing = false
		default:
			return false, fmt.Errorf(`\timing takes on or off, not %q`, f[1])
		}
		fmt.Fprintf(sh.msg, "Timing is %s.\n", map[bool]string{true: "on", false: "off"}[sh.timing])
	case `\format`:
		if len(f) != 2 {
			return false, errors.New(`\format takes one of table, csv, json, jsonl`)
		}
		p, err := newPrinter(f[1], cmp.Or(sh.format.jsonInts, "auto"))
		if err != nil {
			return false, err
		}
		sh.format, sh.echo = p, false
	case `\i`, `\include`:
		if sh.depth >= maxIncludeDepth {
			return false, fmt.Errorf(`\i nested %d deep: does a script include itself?`, sh.depth)
		}
		name, err := metaArg(afterFields(cmd, 1))
		if err != nil {
			return false, fmt.Errorf(`\i FILE: %v`, err)
		}
		text, err := os.ReadFile(name)
		if err != nil {
			return false, err
		}
		sp := newScriptSplitter()
		stmts := sp.feed(string(text))
		last, err := sp.finish()
		if err != nil {
			return false, fmt.Errorf("%s: %v", name, err)
		}
		if last != nil {
			stmts = append(stmts, *last)
		}
		sh.depth++
		saved := sh.source
		sh.source = name
		defer func() { sh.depth--; sh.source = saved }()
		for _, st := range stmts {
			quit, err := sh.runOne(st)
			if err != nil {
				return false, fmt.Errorf("%s:%d: %v", name, st.line, err)
			}
			if quit {
				return true, nil
			}
		}
	case `\dt`:
		return false, sh.listTables()
	case `\d`:
		if len(f) == 1 {
			return false, sh.listTables()
		}
		name, rest, err := parseIdent(afterFields(cmd, 1))
		if err == nil && strings.TrimSpace(rest) != "" {
			err = fmt.Errorf("unexpected %q after the table name", strings.TrimSpace(rest))
		}
		if err != nil {
			return false, fmt.Errorf("\\d TABLE: %v (a name with spaces goes in backticks: \\d `my table`)", err)
		}
		return false, sh.describe(name)
	case `\copy`:
		return false, sh.copyCommand(st)
	default:
		return false, fmt.Errorf(`unknown meta-command %s; \? lists them`, f[0])
	}
	return false, nil
}

func (sh *shell) listTables() error {
	tables, err := fdbqueue.Tables(sh.ctx, sh.conn)
	if err != nil {
		return err
	}
	rows := make([][]any, 0, len(tables))
	for _, t := range tables {
		idx := ""
		if len(t.Index) > 0 {
			idx = t.IndexName + " (" + strings.Join(t.Index, ", ") + ")"
		}
		rows = append(rows, []any{t.Name, t.Kind, int64(len(t.Columns)), idx})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i][0].(string) < rows[j][0].(string) })
	return sh.show([]string{"table", "kind", "columns", "index"}, rows, false)
}

func (sh *shell) describe(name string) error {
	tables, err := fdbqueue.Tables(sh.ctx, sh.conn)
	if err != nil {
		return err
	}
	for _, t := range tables {
		if !strings.EqualFold(t.Name, name) {
			continue
		}
		rows := [][]any{{"id", "INT", "not null", "implicit: assigned at insert unless given"}}
		for _, c := range t.Columns {
			ty := c.Type
			if c.Length > 0 {
				// As declared: a TEXT or BLOB with a length.
				ty = fmt.Sprintf("%s(%d)", map[string]string{"TEXT": "VARCHAR", "BLOB": "VARBINARY"}[ty], c.Length)
			}
			null, note := "", ""
			if c.NotNull {
				null = "not null"
			}
			if strings.EqualFold(c.Name, "priority") && t.Kind != "fifo" {
				note = "orders the queue"
			}
			for _, r := range t.Index {
				if strings.EqualFold(r, c.Name) {
					note = "resource (fit index)"
				}
			}
			rows = append(rows, []any{c.Name, ty, null, note})
		}
		if err := sh.show([]string{"column", "type", "null", "role"}, rows, false); err != nil {
			return err
		}
		// The summary is prose: it follows the table on the results, but
		// goes with the messages in csv and json, whose output must stay
		// one machine-readable document.
		w := sh.out
		if sh.format.format != "table" && sh.format.format != "" {
			w = sh.msg
		}
		if err := sh.describeRows(w, t.Kind, t.Name); err != nil {
			return err
		}
		if len(t.Index) > 0 {
			fmt.Fprintf(w, ", fit index %s (%s)", t.IndexName, strings.Join(t.Index, ", "))
		}
		for _, u := range t.Unique {
			fmt.Fprintf(w, ", unique key %s (%s)", u.Name, strings.Join(u.Columns, ", "))
			if u.Window > 0 {
				fmt.Fprintf(w, " for %v after a removal", u.Window)
			}
		}
		if t.Options != "" {
			fmt.Fprintf(w, ", %s", t.Options)
		}
		fmt.Fprintln(w)
		return nil
	}
	return fmt.Errorf("no table %s; \\dt lists them", name)
}

// describeRows prints \d's summary of a table's rows: how many, how many
// of them are visible, leased and delayed, and how many dead letters the
// table has: fdbqueue_queues's counts, O(1) whatever the table holds (see
// docs/sql.md). A table from before statistics has no such counts until
// fdbqueue_queues is read outside a transaction, on a handle that may
// write: then it says so.
func (sh *shell) describeRows(w io.Writer, kind, table string) error {
	var rows int64
	var visible, leased, delayed, dead sql.NullInt64
	err := sh.conn.QueryRowContext(sh.ctx, "SELECT rows, visible, leased, delayed, dead FROM fdbqueue_queues WHERE name = ?", table).
		Scan(&rows, &visible, &leased, &delayed, &dead)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s queue, %d rows", kind, rows)
	if visible.Valid {
		_, err = fmt.Fprintf(w, " (%d visible, %d leased, %d delayed)", visible.Int64, leased.Int64, delayed.Int64)
	} else {
		_, err = fmt.Fprintf(w, " (visible, leased and delayed not counted yet: the table is from before statistics, which SELECT * FROM fdbqueue_queues counts once, outside a transaction)")
	}
	if err == nil && dead.Valid {
		_, err = fmt.Fprintf(w, ", %d dead in %s", dead.Int64, table+"_dead")
	}
	return err
}
