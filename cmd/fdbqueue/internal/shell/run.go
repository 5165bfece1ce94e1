package shell

// The shell's flags, and Main: a script (-f, -c, standard input) or the
// interactive prompt (interactive.go) on one connection.

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"golang.org/x/term"
)

const usage = `fdbqueue: the SQL shell for fdbqueue

usage: fdbqueue [flags] [DSN]
       fdbqueue bench [flags] DSN   (measure a database: fdbqueue bench --help)

The DSN defaults to $FDBQUEUE_DSN, else memory:. DSNs:
  memory:                 a private in-memory database
  memory:NAME             an in-memory database shared within the process
  file:DIR[?sync=full|none&mode=rwc|rw|ro]  a durable database in directory DIR
  fdb:[CLUSTER_FILE][?root=...&tenant=...]  a FoundationDB cluster (-tags fdb builds)

Without -f or -c, statements are read from standard input: an interactive
prompt on a terminal (\? there lists the meta-commands: \dt, \d TABLE,
\copy TABLE FROM 'file.csv', \copy TABLE TO 'file.csv', \timing, \format,
\i, \q). Scripts take the same meta-commands, one per line. In a script,
\copy TABLE FROM STDIN reads the lines after it, up to a line \. (with -c,
and FROM PSTDIN anywhere, it reads standard input).

How values print:
  NULL       table: NULL; csv: an empty field (the empty string is ""); json: null
  DOUBLE     NaN, Infinity and -Infinity; in json the strings "NaN", "Infinity", "-Infinity"
  BLOB       \x and hex digits (\x00ff41), in csv and json; the table shows
             printable text as text
  TIMESTAMP  RFC 3339 in UTC
  INT        exact digits; in json, a column holding an integer beyond +-2^53
             (ids, mostly), which JavaScript and jq would round, prints as
             strings (--json-ints)
CSV output is what \copy FROM loads back unchanged: into a BLOB column,
\copy FROM reads a field starting with \x as hex, and other text as its bytes.

\copy TABLE TO 'file.csv' is a backup: a header row, then every row in queue
order, read in one transaction (it removes nothing), with the columns id, the
table's columns, _visible_at and _attempts. \copy TABLE FROM 'file.csv'
restores it into the table created again as it was (CREATE TABLE):
  kept  each row's id and values, and the queue order; _visible_at: a delayed
        row stays hidden until then, and so does a row leased at the backup,
        until its lease would have ended, when it is due again; _attempts,
        which MAX_ATTEMPTS counts on from
  lost  the leases' tokens (_lease is 0): a worker holding a lease at the
        backup cannot ack or extend it in the restore, and its row is leased
        again once due; the table's definition (CREATE TABLE, MAX_ATTEMPTS,
        INDEX, UNIQUE) and its _dead table (back that up too, each table is
        its own transaction); the order against rows the table held before
        the restore, which come first; unique keys' windows
A row whose id (or unique key) the table holds is rejected, reported by its
line. \copy FROM
takes any of the table's columns and id, _visible_at, _attempts: a file of the
columns alone loads with new ids, all due at once. A _visible_at past, or the
zero time (a row never delayed), is due at once.

flags:
`

const examples = `
examples:
  fdbqueue -f examples/quickstart.sql
  fdbqueue -c "CREATE TABLE q (v TEXT)" -c "INSERT INTO q VALUES ('hi')" -c "SELECT v FROM q LIMIT 1 FOR POP"
  fdbqueue --format json -f report.sql file:/var/lib/app/queue
  echo "SELECT COUNT(*) FROM tasks;" | fdbqueue file:/var/lib/app/queue
  fdbqueue -c "\copy tasks FROM 'tasks.csv'" file:/var/lib/app/queue
  fdbqueue -c "\copy tasks TO 'backup.csv'" file:/var/lib/app/queue
`

// multi collects a repeatable string flag.
type multi []string

func (m *multi) String() string     { return strings.Join(*m, "; ") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

// prefixed gives a message the "fdbqueue: " prefix, once: errors of the
// driver carry it already.
func prefixed(err error) string {
	msg := err.Error()
	if strings.HasPrefix(msg, "fdbqueue: ") {
		return msg
	}
	return "fdbqueue: " + msg
}

// isTerminal reports whether r is a terminal.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// options are the parsed flags.
type options struct {
	file            string
	commands        multi
	format          string
	jsonInts        string
	output          string
	continueOnError bool
	single          bool
	dsn             string
	printer         printer
}

func parseFlags(args []string, stderr io.Writer) (*options, int) {
	var o options
	fs := flag.NewFlagSet("fdbqueue", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.file, "f", "", "run the script `FILE` (- for standard input)")
	fs.Var(&o.commands, "c", "run the statements `SQL` (repeatable)")
	fs.StringVar(&o.format, "format", "table", "output format: table, csv, json or jsonl")
	fs.StringVar(&o.jsonInts, "json-ints", "auto", "how json and jsonl print integers: `MODE` auto (strings for a column holding an integer beyond +-2^53, else numbers), string (all strings) or number (all numbers)")
	fs.StringVar(&o.output, "o", "", "write results to `FILE` instead of standard output")
	fs.BoolVar(&o.continueOnError, "continue-on-error", false, "report a failed statement and go on (the exit status is still 1)")
	fs.BoolVar(&o.single, "1", false, "run everything in one transaction: all of it, or none")
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
		fmt.Fprint(stderr, examples)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, 0
		}
		return nil, 2
	}
	switch fs.NArg() {
	case 0:
		o.dsn = os.Getenv("FDBQUEUE_DSN")
		if o.dsn == "" {
			o.dsn = "memory:"
		}
	case 1:
		o.dsn = fs.Arg(0)
	default:
		fmt.Fprintf(stderr, "fdbqueue: one DSN at most; got %q\n", fs.Args())
		return nil, 2
	}
	p, err := newPrinter(o.format, o.jsonInts)
	if err != nil {
		fmt.Fprintln(stderr, prefixed(err))
		return nil, 2
	}
	o.printer = p
	if o.file != "" && len(o.commands) > 0 {
		fmt.Fprintln(stderr, "fdbqueue: give -f or -c, not both")
		return nil, 2
	}
	return &o, -1
}

// Main is the shell, fdbqueue without a subcommand; args are its flags
// and DSN. It returns the exit status.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, status := parseFlags(args, stderr)
	if o == nil {
		return status
	}
	// A closed pipe on standard output is a write error, reported (with
	// the rows a FOR POP removed, on standard error), not a silent death
	// by SIGPIPE.
	signal.Ignore(syscall.SIGPIPE)
	out := stdout
	if o.output != "" {
		f, err := os.OpenFile(o.output, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintln(stderr, prefixed(err))
			return 1
		}
		defer f.Close()
		out = f
	}
	db, err := sql.Open("fdbqueue", o.dsn)
	if err != nil {
		fmt.Fprintln(stderr, prefixed(err))
		return 1
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		fmt.Fprintln(stderr, prefixed(err))
		return 1
	}
	defer conn.Close()

	sh := &shell{ctx: ctx, conn: conn, out: out, msg: stderr, format: o.printer, opts: o, echo: o.format == "table"}
	if o.file == "" && len(o.commands) == 0 && isTerminal(stdin) {
		sh.echo = false
		sh.stdin = stdin
		return sh.interactive()
	}
	// A script: Ctrl-C cancels the running statement and stops the script.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	sh.ctx = ctx
	var stmts []statement
	var source string
	switch {
	case len(o.commands) > 0:
		source = "-c"
		sh.stdin = stdin
		for _, c := range o.commands {
			sp := newSplitter()
			got := sp.feed(c)
			last, err := sp.finish()
			if err != nil {
				fmt.Fprintf(stderr, "-c: %v\n", err)
				return 1
			}
			if last != nil {
				got = append(got, *last)
			}
			stmts = append(stmts, got...)
		}
	default:
		source = o.file
		var r io.Reader = stdin
		if o.file != "" && o.file != "-" {
			f, err := os.Open(o.file)
			if err != nil {
				fmt.Fprintln(stderr, prefixed(err))
				return 1
			}
			defer f.Close()
			r = f
			sh.stdin = stdin
		}
		if source == "" || source == "-" {
			source = "<stdin>"
		}
		text, err := io.ReadAll(r)
		if err != nil {
			fmt.Fprintln(stderr, prefixed(err))
			return 1
		}
		sp := newScriptSplitter()
		stmts = sp.feed(string(text))
		last, err := sp.finish()
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", source, err)
			return 1
		}
		if last != nil {
			stmts = append(stmts, *last)
		}
	}
	return sh.runAll(source, stmts)
}
