package shell

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"
)

// shell runs statements on one connection and prints their results.
type shell struct {
	ctx    context.Context
	conn   *sql.Conn
	out    io.Writer // results
	msg    io.Writer // messages and errors
	format printer
	opts   *options
	// echo prints each statement before its result (table format, for
	// people reading a script's output).
	echo bool
	// timing prints each statement's duration (\timing).
	timing bool
	// stdin is what \copy ... FROM PSTDIN reads, and FROM STDIN outside
	// scripts (which carry their data inline) and the prompt: nil when the
	// script itself comes from standard input.
	stdin io.Reader
	// promptData, at the prompt, reads the lines of a \copy ... FROM STDIN.
	promptData func() (string, error)
	// source names the script running, for the lines of inline \copy data.
	source string
	// depth is how deep \i includes are nested.
	depth int
	// interrupts delivers Ctrl-C at the interactive prompt.
	interrupts chan os.Signal
}

// runAll runs a script's statements; it returns the exit status.
func (sh *shell) runAll(source string, stmts []statement) (status int) {
	sh.source = source
	defer func() {
		if sh.rollBackOpen() {
			fmt.Fprintf(sh.msg, "fdbqueue: %s: the script ended inside a transaction (BEGIN without COMMIT); it was rolled back\n", source)
			status = 1
		}
	}()
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

// rollBackOpen rolls back a transaction a BEGIN left open on the
// connection, and reports whether there was one.
func (sh *shell) rollBackOpen() bool {
	_, err := sh.conn.ExecContext(context.Background(), "ROLLBACK")
	return err == nil
}

// runOne runs a statement or a meta-command; it reports whether to quit.
func (sh *shell) runOne(st statement) (bool, error) {
	if st.meta {
		return sh.runMeta(st)
	}
	start := time.Now()
	err := sh.exec(st.text)
	sh.printTiming(start)
	return false, err
}

// isQuery reports whether a statement returns rows: SELECT, and SHOW
// (SHOW SCHEDULES).
func isQuery(text string) bool {
	f := strings.Fields(strings.TrimLeft(stripLeadingComments(text), "("))
	return len(f) > 0 && (strings.EqualFold(f[0], "select") || strings.EqualFold(f[0], "show"))
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
	return sh.show(cols, data, popRE.MatchString(text))
}

// popRE finds FOR POP in a statement.
var popRE = regexp.MustCompile(`(?i)\bFOR\s+POP\b`)

// show prints a result set. It is rendered whole before it is written, so
// that a failed write (a full disk, a closed pipe) is the only way printing
// can fail; then the rows a FOR POP removed go to the messages instead, not
// lost unseen.
func (sh *shell) show(cols []string, rows [][]any, popped bool) error {
	b := sh.format.render(cols, rows)
	if _, err := sh.out.Write(b); err != nil {
		if popped && len(rows) > 0 {
			fmt.Fprintf(sh.msg, "fdbqueue: the result could not be written (%v); the rows FOR POP removed are:\n", err)
			_, _ = sh.msg.Write(b)
		}
		return fmt.Errorf("writing the result: %w", err)
	}
	return nil
}
