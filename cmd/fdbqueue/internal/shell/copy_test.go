package shell

import (
	"bytes"
	"context"
	"database/sql"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// newTestShell is a shell on a fresh in-memory database; out and msg
// collect what it prints.
func newTestShell(t *testing.T, format string) (*shell, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	db, err := sql.Open("fdbqueue", "memory:")
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	var out, msg bytes.Buffer
	return &shell{ctx: context.Background(), conn: conn, out: &out, msg: &msg, format: printer{format: format, jsonInts: "auto"}, opts: &options{}}, &out, &msg
}

// selectAll returns a table's rows, values as the driver gives them.
func selectAll(t *testing.T, sh *shell, query string) [][]any {
	t.Helper()
	rows, err := sh.conn.QueryContext(context.Background(), query)
	require.NoError(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	var all [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(t, rows.Scan(ptrs...))
		for i, v := range vals {
			// Compare floats by their bits: NaN equals NaN, -0 is not 0.
			if f, ok := v.(float64); ok {
				if math.IsNaN(f) {
					f = math.NaN()
				}
				vals[i] = math.Float64bits(f)
			}
		}
		all = append(all, vals)
	}
	require.NoError(t, rows.Err())
	return all
}

const everyType = "CREATE TABLE `all types` (i BIGINT, n INT NOT NULL, f DOUBLE, s TEXT, v VARCHAR(20), b BLOB, ok BOOLEAN, ts TIMESTAMP)"

// awkwardRows fills `all types` with the values CSV gets wrong: NULL against
// ” and empty blobs, separators and quotes and line breaks in text, bytes
// that are not text, text that looks like hex or like the end of inline
// data, infinities, -0, extreme integers and floats.
func awkwardRows(t *testing.T, sh *shell) {
	t.Helper()
	allBytes := make([]byte, 256)
	for i := range allBytes {
		allBytes[i] = byte(i)
	}
	ts := time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC)
	rows := [][]any{
		{int64(1), 1, 1.5, "plain", "v", []byte("blob"), true, ts},
		{nil, 2, nil, nil, nil, nil, nil, nil},
		{int64(0), 3, 0.0, "", "", []byte{}, false, time.Unix(0, 0)},
		{int64(math.MaxInt64), 4, math.SmallestNonzeroFloat64, `a,b "quoted", 'single'`, `"`, allBytes, nil, ts.Add(-100 * 365 * 24 * time.Hour)},
		{int64(math.MinInt64), 5, math.Inf(1), "two\nlines\r\nand CRLF", "\\.", []byte(`\x41`), nil, nil},
		{int64(1<<53 + 1), 6, math.Inf(-1), "\\.", " spaces ", []byte("\\."), nil, nil},
		{int64(-1), 7, math.Copysign(0, -1), "héllo wörld ✓ 日本", "NULL", []byte{0}, nil, nil},
		{nil, 8, math.SmallestNonzeroFloat64, `\x41`, "\t", []byte("\n"), nil, nil},
		{nil, 9, math.MaxFloat64, ",", "\"\"", []byte(","), nil, nil},
		{nil, 10, 1e21, "\ufeffbom inside", "\r", []byte("\xef\xbb\xbf"), nil, nil},
	}
	for _, r := range rows {
		_, err := sh.conn.ExecContext(context.Background(), "INSERT INTO `all types` (i, n, f, s, v, b, ok, ts) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", r...)
		require.NoError(t, err)
	}
}

// TestCopyRoundTrip: \copy TO writes a CSV that \copy FROM loads back into
// a fresh table exactly, every type and awkward value, and the ids; so does
// --format csv, which writes the same CSV; and TO removes nothing.
func TestCopyRoundTrip(t *testing.T) {
	t.Parallel()
	src, srcOut, srcMsg := newTestShell(t, "csv")
	require.NoError(t, src.exec(everyType))
	awkwardRows(t, src)
	const backup = "SELECT id, i, n, f, s, v, b, ok, ts, _visible_at, _attempts, _error FROM `all types`"
	want := selectAll(t, src, backup)
	require.Len(t, want, 10)

	path := filepath.Join(t.TempDir(), "all types.csv")
	_, err := src.meta("\\copy `all types` TO '" + path + "'")
	require.NoError(t, err, srcMsg.String())
	require.Contains(t, srcMsg.String(), "COPY 10\n")
	require.Len(t, selectAll(t, src, "SELECT * FROM `all types`"), 10, "\\copy TO is a peek")
	file, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(file), "id,i,n,f,s,v,b,ok,ts,_visible_at,_attempts,_error\n"), "a header row")

	// TO STDOUT, and the csv format, write the same bytes.
	srcOut.Reset()
	_, err = src.meta("\\copy `all types` TO STDOUT")
	require.NoError(t, err)
	require.Equal(t, string(file), srcOut.String())
	srcOut.Reset()
	require.NoError(t, src.exec(backup))
	require.Equal(t, string(file), srcOut.String())

	dst, _, dstMsg := newTestShell(t, "csv")
	require.NoError(t, dst.exec(everyType))
	_, err = dst.meta("\\copy `all types` FROM '" + path + "'")
	require.NoError(t, err, dstMsg.String())
	require.Equal(t, want, selectAll(t, dst, backup))

	// The same CSV pasted into a script as inline data, ended by \.
	inline, _, inlineMsg := newTestShell(t, "csv")
	sp := newScriptSplitter()
	stmts := sp.feed(everyType + ";\n\\copy `all types` FROM STDIN\n" + string(file) + "\\.\nSELECT COUNT(*) FROM `all types`;\n")
	last, err := sp.finish()
	require.NoError(t, err)
	require.Nil(t, last)
	require.Len(t, stmts, 3)
	require.Equal(t, 0, inline.runAll("script", stmts), inlineMsg.String())
	require.Equal(t, want, selectAll(t, inline, backup))

	// A priority queue reloads in queue order: oldest first within a
	// priority.
	pq, pqOut, _ := newTestShell(t, "csv")
	require.NoError(t, pq.exec("CREATE TABLE p (priority INT NOT NULL, v TEXT)"))
	require.NoError(t, pq.exec("INSERT INTO p VALUES (1, 'a'), (0, 'b'), (1, 'c'), (0, 'd')"))
	_, err = pq.meta(`\copy p TO STDOUT`)
	require.NoError(t, err)
	var order []string
	for _, l := range strings.SplitAfter(strings.TrimSuffix(pqOut.String(), "\n"), "\n") {
		f := strings.Split(l, ",")
		order = append(order, f[1]+","+f[2])
	}
	require.Equal(t, []string{"priority,v", "0,b", "0,d", "1,a", "1,c"}, order)
	require.NoError(t, pq.exec("DELETE FROM p"))
	pq.stdin = strings.NewReader(pqOut.String())
	_, err = pq.meta(`\copy p FROM STDIN`)
	require.NoError(t, err)
	require.Equal(t, [][]any{{"a"}, {"c"}, {"b"}, {"d"}}, selectAll(t, pq, "SELECT v FROM p ORDER BY priority DESC"))

	// A one-column CSV: a NULL is an empty line.
	one, _, _ := newTestShell(t, "csv")
	require.NoError(t, one.exec("CREATE TABLE o (s TEXT)"))
	one.stdin = strings.NewReader("s\n\n\"\"\nx\n\n")
	_, err = one.meta(`\copy o FROM STDIN`)
	require.NoError(t, err)
	require.Equal(t, [][]any{{nil}, {""}, {"x"}, {nil}}, selectAll(t, one, "SELECT s FROM o"))
}

// TestCopyFromCSV: what \copy FROM makes of the fields it reads.
func TestCopyFromCSV(t *testing.T) {
	t.Parallel()
	sh, _, msg := newTestShell(t, "csv")
	require.NoError(t, sh.exec("CREATE TABLE q (n INT, s TEXT, b BLOB)"))
	text := "\ufeffn,s,b\r\n" + // a byte order mark, CRLF lines
		"1,,\r\n" + // unquoted empty: NULL
		"2,\"\",\"\"\r\n" + // quoted empty: '' and an empty blob
		"3,\\x41,\\x41ff\r\n" + // \x is hex in a BLOB, text in TEXT
		"4,\"multi\r\nline\",plain text\r\n" +
		"\r\n" + // a blank line between rows is skipped
		"5,x,\\xabc\r\n" + // line 8: odd hex digits
		"6,x,\\xzz\r\n" + // line 9: not hex
		"7,a\"b,x\r\n" + // line 10: a bare quote
		"8,\"a\"b,x\r\n" + // line 11: text after a closing quote
		"9,last,\\X41\n" + // \X is not the hex prefix
		"10,\"unterminated\n"
	path := filepath.Join(t.TempDir(), "q.csv")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	_, err := sh.meta(`\copy q FROM '` + path + `'`)
	require.EqualError(t, err, `\copy: 5 rows rejected (reported above by line)`)
	report := msg.String()
	require.Contains(t, report, path+`:8: column b is BLOB: a field starting with \x is hex digits, two a byte (\x00ff41), and "\\xabc" is not; write text that starts with \x as hex too`)
	require.Contains(t, report, path+`:9: column b is BLOB`)
	require.Contains(t, report, path+`:10: a quote inside the unquoted field "a\"b"`)
	require.Contains(t, report, path+`:11: text "b,x" after a closing quote`)
	require.Contains(t, report, path+":13: a quoted field is not closed by the end of the file")
	require.Contains(t, report, "COPY 5\n")
	require.Equal(t, [][]any{
		{int64(1), nil, nil},
		{int64(2), "", []byte{}},
		{int64(3), `\x41`, []byte{0x41, 0xff}},
		{int64(4), "multi\r\nline", []byte("plain text")},
		{int64(9), "last", []byte(`\X41`)},
	}, selectAll(t, sh, "SELECT n, s, b FROM q"))

	// Header errors say what the table has.
	for csvText, want := range map[string]string{
		"":             "no data: the first line must be a header row naming the columns",
		"\n\n":         "no data",
		"n,nope\n":     `the header names column "nope"; table q has columns n, s, b`,
		"n,N\n":        "the header names column n twice",
		"\"n\nx\n":     "line 1: reading the header row: a quoted field is not closed",
		"\ufeffs\nx\n": "",
	} {
		sh.stdin = strings.NewReader(csvText)
		_, err := sh.meta(`\copy q FROM STDIN`)
		if want == "" {
			require.NoError(t, err, "%q", csvText)
			continue
		}
		require.ErrorContains(t, err, want, "%q", csvText)
	}
	dir := t.TempDir()
	_, err = sh.meta(`\copy q FROM '` + dir + `'`)
	require.EqualError(t, err, `\copy q FROM '`+dir+`': `+dir+` is a directory; \copy reads a CSV file`)
}

// TestQuotedIdentifiers: tables and columns whose names are keywords, hold
// spaces, backticks or other scripts work with \d, \dt and \copy.
func TestQuotedIdentifiers(t *testing.T) {
	t.Parallel()
	sh, out, msg := newTestShell(t, "csv")
	require.NoError(t, sh.exec("CREATE TABLE `my order` (`key` TEXT, `order` INT, `from` BLOB, `naïve` DOUBLE, `b``q` BOOLEAN)"))
	csvPath := filepath.Join(t.TempDir(), "in.csv")
	backup := "id,key,order,from,naïve,b`q,_visible_at,_attempts,_error\n" +
		"7,k,1,\\x00,0.5,true,0001-01-01T00:00:00Z,0,\n" +
		"3,,2,,,,0001-01-01T00:00:00Z,0,\n"
	require.NoError(t, os.WriteFile(csvPath, []byte(backup), 0o600))
	for _, cmd := range []string{
		"\\copy `my order` FROM '" + csvPath + "'",
		"\\copy `my order` TO STDOUT",
		"\\d `my order`",
		"\\dt",
	} {
		_, err := sh.meta(cmd)
		require.NoError(t, err, "%s: %s", cmd, msg.String())
	}
	require.Equal(t, backup+
		"column,type,null,role\n"+
		"id,INT,not null,implicit: assigned at insert unless given\n"+
		"key,TEXT,\"\",\"\"\n"+
		"order,INT,\"\",\"\"\n"+
		"from,BLOB,\"\",\"\"\n"+
		"naïve,DOUBLE,\"\",\"\"\n"+
		"b`q,BOOLEAN,\"\",\"\"\n"+
		"table,kind,columns,index\n"+
		"my order,fifo,5,\"\"\n", out.String())
	require.Contains(t, msg.String(), "fifo queue, 2 rows (2 visible, 0 leased, 0 delayed)\n", "in csv, \\d's summary goes with the messages")

	for cmd, want := range map[string]string{
		"\\d `my order":                "unterminated ` quote",
		"\\d my order":                 `unexpected "order" after the table name`,
		"\\d ``":                       "an empty table name",
		"\\copy `my order` TO":         "a file name is missing",
		"\\copy `nope` TO STDOUT":      "no table nope",
		"\\copy `my order`x TO STDOUT": "usage",
		"\\copy":                       "a table name is missing",
	} {
		_, err := sh.meta(cmd)
		require.ErrorContains(t, err, want, cmd)
	}
}

// TestInlineCopy: in a script, \copy ... FROM STDIN loads the lines after
// it, up to a line \. outside a quoted field, and the script goes on; bad
// rows are reported by their line in the script.
func TestInlineCopy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "load.sql")
	require.NoError(t, os.WriteFile(script, []byte("CREATE TABLE q (n INT, s TEXT);\n"+
		"\\copy q FROM STDIN\n"+
		"n,s\n"+
		"1,one\n"+
		"2,\"a field with\n\\.\ninside\"\n"+ // the \. inside quotes is data
		"bad,row\n"+ // line 8
		"3,a\"b\n"+ // line 9: a bare quote opens no quoted field
		"\\.\n"+
		"SELECT n, s FROM q;\n"+
		"\\copy q FROM STDIN\n"+ // line 12; its data runs to the end
		"n,s\n"+
		"3,three"), 0o600))
	out, errs, code := shellRun(t, "", "--format", "csv", "--continue-on-error", "-f", script)
	require.Equal(t, 1, code, "a rejected row fails the script")
	require.Contains(t, errs, script+":8: fdbqueue: invalid value: column n is INT")
	require.Contains(t, errs, script+`:9: a quote inside the unquoted field "a\"b"`)
	require.Contains(t, errs, "COPY 2\n"+script+":2: \\copy: 2 rows rejected")
	require.Contains(t, errs, "COPY 1\n")
	require.Equal(t, "n,s\n1,one\n2,\"a field with\n\\.\ninside\"\n", out)

	// \i takes inline data too, and a script piped in on standard input;
	// FROM PSTDIN reads standard input when the script is a file.
	sh, out2, msg := newTestShell(t, "csv")
	sh.stdin = strings.NewReader("n,s\n4,from stdin\n")
	inc := filepath.Join(dir, "inc.sql")
	require.NoError(t, os.WriteFile(inc, []byte("CREATE TABLE q (n INT, s TEXT);\n\\copy q FROM STDIN\nn,s\n1,x\n\\.\n\\copy q FROM PSTDIN\nSELECT COUNT(*) FROM q;\n"), 0o600))
	_, err := sh.meta(`\i ` + inc)
	require.NoError(t, err, msg.String())
	require.Equal(t, "COUNT(*)\n2\n", out2.String())

	out, errs, code = shellRun(t, "CREATE TABLE q (n INT);\n\\copy q FROM STDIN\nn\n5\n\\.\nSELECT n FROM q;\n", "--format", "csv")
	require.Equal(t, 0, code, errs)
	require.Equal(t, "n\n5\n", out)
}

// TestSplitterInlineData: the data of a \copy ... FROM STDIN is kept whole,
// the same fed at once or line by line, and line numbers go on after it.
func TestSplitterInlineData(t *testing.T) {
	t.Parallel()
	text := "\\copy q FROM stdin\nn\n\"\n\\.\n\"\r\n\\.\r\nSELECT 1;\n\\copy q FROM STDIN"
	want := []statement{
		{text: `\copy q FROM stdin`, line: 1, meta: true, inline: true, data: "n\n\"\n\\.\n\"\r\n"},
		{text: "SELECT 1", line: 7},
		{text: `\copy q FROM STDIN`, line: 8, meta: true, inline: true},
	}
	whole := newScriptSplitter()
	got := whole.feed(text)
	last, err := whole.finish()
	require.NoError(t, err)
	require.Equal(t, want, append(got, *last))
	byLine := newScriptSplitter()
	got = nil
	for _, l := range strings.SplitAfter(text, "\n") {
		got = append(got, byLine.feed(l)...)
	}
	last, err = byLine.finish()
	require.NoError(t, err)
	require.Equal(t, want, append(got, *last))

	// -c commands have no inline data.
	sp := newSplitter()
	require.Equal(t, []statement{{text: `\copy q FROM STDIN`, line: 1, meta: true}, {text: "n", line: 2}}, sp.feed("\\copy q FROM STDIN\nn;"))
}

// TestScriptEndsInTransaction: a script that ends inside BEGIN fails with a
// warning; its writes were rolled back.
func TestScriptEndsInTransaction(t *testing.T) {
	t.Parallel()
	dsn := "file:" + t.TempDir()
	_, errs, code := shellRun(t, "", "-c", "CREATE TABLE q (v TEXT)", dsn)
	require.Equal(t, 0, code, errs)
	for _, script := range []string{
		"BEGIN;\nINSERT INTO q VALUES ('lost');\n",
		"BEGIN;\nINSERT INTO q VALUES ('lost');\n\\q\n",
		"BEGIN;\nINSERT INTO q VALUES ('lost');\nSELECT nope FROM q;\n",
	} {
		_, errs, code = shellRun(t, script, dsn)
		require.Equal(t, 1, code, script)
		require.Contains(t, errs, "fdbqueue: <stdin>: the script ended inside a transaction (BEGIN without COMMIT); it was rolled back\n", script)
	}
	out, errs, code := shellRun(t, "BEGIN;\nINSERT INTO q VALUES ('kept');\nCOMMIT;\nSELECT v FROM q;\n", "--format", "csv", dsn)
	require.Equal(t, 0, code, errs)
	require.NotContains(t, errs, "transaction")
	require.Equal(t, "v\nkept\n", out, "only the committed script wrote")
}
