package shell

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden files")

// shellRun runs the shell in-process and returns its stdout, stderr and exit
// status.
func shellRun(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), code
}

// golden compares got with testdata/name, or rewrites it with -rewrite.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *rewrite {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run with -rewrite to create %s", path)
	require.Equal(t, string(want), got, "%s (run with -rewrite after checking the diff)", path)
}

func TestScriptFormats(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"table", "csv", "json", "jsonl"} {
		out, errs, code := shellRun(t, "", "--format", format, "-f", "testdata/basic.sql")
		require.Equal(t, 0, code, errs)
		golden(t, fmt.Sprintf("basic.%s.out", format), out)
		require.Equal(t, "CREATE\nINSERT 2\n", errs, "messages go to stderr")
	}
}

func TestScriptErrors(t *testing.T) {
	t.Parallel()
	out, errs, code := shellRun(t, "", "-f", "testdata/errors.sql")
	require.Equal(t, 1, code)
	require.Contains(t, errs, "testdata/errors.sql:4: fdbqueue: unknown column: table q has no column nope")
	require.NotContains(t, out, "after the error", "the script stops at the error")

	out, errs, code = shellRun(t, "", "--continue-on-error", "-f", "testdata/errors.sql")
	require.Equal(t, 1, code, "an error still fails the run")
	require.Contains(t, errs, "errors.sql:4:")
	require.Contains(t, out, "after the error")
	golden(t, "errors.continue.out", out)

	// -1: one transaction, all or nothing.
	dsn := "file:" + t.TempDir()
	_, errs, code = shellRun(t, "", "-1", "-f", "testdata/errors.sql", dsn)
	require.Equal(t, 1, code)
	require.Contains(t, errs, "rolled back")
	_, errs, code = shellRun(t, "", "-c", "SELECT v FROM q", dsn)
	require.Equal(t, 1, code)
	require.Contains(t, errs, "no such table: q", "not even the CREATE TABLE was written")
}

func TestSingleTransactionCommits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dsn := "file:" + dir
	_, errs, code := shellRun(t, "", "-1", "-c", "CREATE TABLE q (v TEXT)", "-c", "INSERT INTO q VALUES ('a'), ('b')", dsn)
	require.Equal(t, 0, code, errs)
	out, errs, code := shellRun(t, "", "--format", "csv", "-c", "SELECT v FROM q", dsn)
	require.Equal(t, 0, code, errs)
	require.Equal(t, "v\na\nb\n", out)
}

func TestStdinAndCommands(t *testing.T) {
	t.Parallel()
	out, errs, code := shellRun(t, "CREATE TABLE q (v INT);\nINSERT INTO q VALUES (1);\nSELECT v FROM q LIMIT 1 FOR POP;\n", "--format", "jsonl")
	require.Equal(t, 0, code, errs)
	require.Equal(t, "{\"v\":1}\n", out)

	out, _, code = shellRun(t, "", "--format", "csv", "-c", "CREATE TABLE q (v TEXT); INSERT INTO q VALUES ('x')", "-c", "SELECT v FROM q")
	require.Equal(t, 0, code)
	require.Equal(t, "v\nx\n", out)
}

func TestOutputFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "out.csv")
	out, _, code := shellRun(t, "", "--format", "csv", "-o", path, "-c", "CREATE TABLE q (v TEXT)", "-c", "INSERT INTO q VALUES ('x')", "-c", "SELECT v FROM q")
	require.Equal(t, 0, code)
	require.Empty(t, out)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "v\nx\n", string(b))
}

func TestBadInvocations(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--format", "xml", "-c", "SELECT 1"}, 2, "unknown format"},
		{[]string{"-f", "a.sql", "-c", "SELECT 1"}, 2, "not both"},
		{[]string{"memory:", "file:/x"}, 2, "one DSN at most"},
		{[]string{"--nope"}, 2, "flag provided but not defined"},
		{[]string{"-c", "SELECT 1", "bogus:"}, 1, "fdbqueue: bad DSN: unknown engine"},
		{[]string{"-c", "SELECT 1", "memory:?fault_conflict=x"}, 1, "fdbqueue: bad DSN: fault_conflict=x"},
		{[]string{"--format", "csv", "--json-ints", "x", "-c", "SELECT 1"}, 2, "fdbqueue: unknown --json-ints"},
		{[]string{"-f", "testdata/does-not-exist.sql"}, 1, "no such file"},
		{[]string{"-c", "SELECT 'unterminated"}, 1, "unterminated ' quote"},
	} {
		_, errs, code := shellRun(t, "", tc.args...)
		require.Equal(t, tc.code, code, "%v: %s", tc.args, errs)
		require.Contains(t, errs, tc.want, "%v", tc.args)
		require.NotContains(t, errs, "fdbqueue: fdbqueue:", "one prefix: %v", tc.args)
	}
	_, errs, code := shellRun(t, "", "--help")
	require.Equal(t, 0, code)
	for _, want := range []string{"usage: fdbqueue", "memory:NAME", "file:DIR", "fdb:", "-continue-on-error", "examples:",
		"-json-ints MODE", `"NaN", "Infinity", "-Infinity"`, `\copy TABLE TO`, "up to a line \\.",
		`\copy TABLE TO 'file.csv' is a backup`, "kept  each row's id", "lost  the leases' tokens"} {
		require.Contains(t, errs, want)
	}
}

// TestDescribeMachineReadable: in csv and json, \d's summary line (kind,
// rows, index) goes to the messages, so that the results stay one
// machine-readable stream; the table format keeps it under the table.
func TestDescribeMachineReadable(t *testing.T) {
	t.Parallel()
	const create = "CREATE TABLE q (priority INT NOT NULL, cpu INT NOT NULL, INDEX fit (cpu)); INSERT INTO q VALUES (1, 2)"
	const summary = "priority queue, 1 rows (1 visible, 0 leased, 0 delayed), fit index fit (cpu)\n"
	for _, format := range []string{"csv", "json", "jsonl"} {
		out, errs, code := shellRun(t, "", "--format", format, "-c", create, "-c", `\d q`)
		require.Equal(t, 0, code, errs)
		require.NotContains(t, out, "queue,", format)
		require.Contains(t, errs, summary, format)
		if format == "csv" {
			recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
			require.NoError(t, err)
			require.Equal(t, []string{"column", "type", "null", "role"}, recs[0])
			require.Len(t, recs, 4, "a header and three columns, nothing else")
			continue
		}
		dec := json.NewDecoder(strings.NewReader(out))
		n := 0
		for {
			var v any
			err := dec.Decode(&v)
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err, "%s output:\n%s", format, out)
			n++
		}
		require.NotZero(t, n)
	}
	out, errs, code := shellRun(t, "", "-c", create, "-c", `\d q`)
	require.Equal(t, 0, code, errs)
	require.True(t, strings.HasSuffix(out, "(3 rows)\n\n"+summary), "the table format prints it after the table:\n%s", out)
}

func TestScriptMetaCommands(t *testing.T) {
	t.Parallel()
	out, errs, code := shellRun(t, "", "-f", "testdata/meta.sql")
	require.Equal(t, 1, code, "a rejected \\copy row fails the script")
	require.Contains(t, errs, "testdata/tasks.csv:5: fdbqueue: invalid value: column priority is INT")
	require.Contains(t, errs, "COPY 3\ntestdata/meta.sql:9: \\copy: 1 row rejected")
	require.NotContains(t, out, "=> \\dt", "the script stopped at the failed \\copy")

	out, errs, code = shellRun(t, "", "--continue-on-error", "-f", "testdata/meta.sql")
	require.Equal(t, 1, code, errs)
	golden(t, "meta.table.out", out)
	require.NotContains(t, out, "never reached", "\\q ends the script")

	// -c takes meta-commands; FROM STDIN reads standard input, unless the
	// script is standard input.
	out, errs, code = shellRun(t, "v\nx\ny\n", "--format", "csv", "-c", "CREATE TABLE q (v TEXT)", "-c", `\copy q FROM STDIN`, "-c", "SELECT v FROM q")
	require.Equal(t, 0, code, errs)
	require.Equal(t, "v\nx\ny\n", out)
	require.Contains(t, errs, "COPY 2\n")
	// With -1, \copy loads inside the script's transaction: all or nothing.
	dsn := "file:" + t.TempDir()
	_, errs, code = shellRun(t, "v\n1\n2\n", "-1", "-c", "CREATE TABLE n (v INT)", "-c", `\copy n FROM STDIN`, dsn)
	require.Equal(t, 0, code, errs)
	_, errs, code = shellRun(t, "v\n3\nbad\n", "-1", "-c", `\copy n FROM STDIN`, dsn)
	require.Equal(t, 1, code)
	require.Contains(t, errs, "rolled back")
	out, errs, code = shellRun(t, "", "--format", "csv", "-c", "SELECT v FROM n", dsn)
	require.Equal(t, 0, code, errs)
	require.Equal(t, "v\n1\n2\n", out, "the failed -1 script loaded nothing")

	// A script read from standard input has no other standard input: FROM
	// STDIN takes the lines after it, and FROM PSTDIN cannot be.
	_, errs, code = shellRun(t, "CREATE TABLE q (v TEXT);\n\\copy q FROM PSTDIN\n")
	require.Equal(t, 1, code)
	require.Contains(t, errs, "<stdin>:2: \\copy ... FROM PSTDIN: the script itself is standard input; name a file, or put the data after the \\copy line, ended by a line \\.")
	_, errs, code = shellRun(t, "CREATE TABLE q (v TEXT);\n\\copy q FROM STDIN\n")
	require.Equal(t, 1, code)
	require.Contains(t, errs, "<stdin>:2: no data: the first line must be a header row naming the columns (in a script, \\copy ... FROM STDIN reads the lines after it")
}

func TestSplitter(t *testing.T) {
	t.Parallel()
	sp := newSplitter()
	got := sp.feed("SELECT 'a;b';\n-- x; y\nSELECT \"c;\" /* ; */ FROM t;\n\n  SELECT 1")
	last, err := sp.finish()
	require.NoError(t, err)
	got = append(got, *last)
	require.Len(t, got, 3)
	require.Equal(t, statement{text: "SELECT 'a;b'", line: 1}, got[0])
	require.Equal(t, "SELECT \"c;\" /* ; */ FROM t", got[1].text)
	require.Equal(t, 3, got[1].line)
	require.Equal(t, statement{text: "SELECT 1", line: 5}, got[2])

	// A backslash where a statement would start is a meta-command, to the
	// end of its line; elsewhere it is part of the statement.
	sp = newSplitter()
	got = sp.feed("/* c */ \\dt\nSELECT 'a\\'';\n  \\d q  \nSELECT 2\n;\\q")
	require.Equal(t, []statement{
		{text: `\dt`, line: 1, meta: true},
		{text: `SELECT 'a\''`, line: 2},
		{text: `\d q`, line: 3, meta: true},
		{text: "SELECT 2", line: 4},
		{text: `\q`, line: 5, meta: true},
	}, got)
}

// TestScriptWait: FOR POP WAIT in a script takes a row that is there at
// once, and returns no rows once its wait is over; in a script run as one
// transaction (-1) it is refused, saying why.
func TestScriptWait(t *testing.T) {
	t.Parallel()
	script := "CREATE TABLE q (v INT);\nINSERT INTO q VALUES (7);\n" +
		"SELECT v FROM q LIMIT 1 FOR POP WAIT 5;\nSELECT v FROM q LIMIT 1 FOR POP WAIT 0.05;\n"
	out, errs, code := shellRun(t, script, "--format", "csv")
	require.Equal(t, 0, code, errs)
	require.Equal(t, "v\n7\nv\n", out)

	_, errs, code = shellRun(t, script, "-1")
	require.Equal(t, 1, code)
	require.Contains(t, errs, "WAIT inside a transaction")
}
