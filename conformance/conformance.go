// Package conformance holds the dialect's scenarios as data files and runs
// them against any DSN: conformance.Run(t, "memory:").
//
// A scenario file (testdata/*.test) is a list of records separated by blank
// lines, in the style of sqllogictest:
//
//	# a comment
//	statement ok
//	CREATE TABLE t (priority INT NOT NULL, v TEXT)
//
//	statement ok 2
//	INSERT INTO t VALUES (1, 'a'), (2, 'b')
//
//	statement error no such table
//	SELECT * FROM nope
//
//	query
//	SELECT priority, v FROM t ORDER BY priority DESC LIMIT 1 FOR POP
//	----
//	2 b
//
// "statement ok N" also checks the rows affected. A query's expected rows
// follow "----", one per line, values separated by a space: NULL, integers,
// floats, true/false, text (quoted when empty or holding spaces), blobs as
// x'hex', times in RFC 3339. All records of a file run in order on one
// connection, so BEGIN and COMMIT span records. Run the tests with -rewrite
// to regenerate the expected rows (and review the diff).
package conformance

import (
	"bufio"
	"context"
	"database/sql"
	"embed"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	_ "github.com/fdbqueue/fdbqueue/driver" // registers "fdbqueue"
)

//go:embed testdata/*.test
var files embed.FS

var rewrite = flag.Bool("rewrite", false, "rewrite the conformance files' expected rows with the actual ones")

type record struct {
	line     int
	kind     string // statement, query
	expectOK bool
	affected int64 // -1: not checked
	errSub   string
	sql      string
	want     []string
	comments []string // lines before the record
}

func parseFile(text string) ([]*record, error) {
	var recs []*record
	var comments []string
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	line := 0
	var cur *record
	inRows := false
	flush := func() {
		if cur != nil {
			recs = append(recs, cur)
			cur, inRows = nil, false
		}
	}
	for sc.Scan() {
		line++
		l := sc.Text()
		switch {
		case strings.TrimSpace(l) == "":
			flush()
		case cur == nil && strings.HasPrefix(l, "#"):
			comments = append(comments, l)
		case cur == nil:
			f := strings.Fields(l)
			cur = &record{line: line, affected: -1, comments: comments}
			comments = nil
			switch {
			case f[0] == "statement" && len(f) >= 2 && f[1] == "ok":
				cur.kind, cur.expectOK = "statement", true
				if len(f) == 3 {
					n, err := strconv.ParseInt(f[2], 10, 64)
					if err != nil {
						return nil, fmt.Errorf("line %d: statement ok takes a row count: %q", line, l)
					}
					cur.affected = n
				}
			case f[0] == "statement" && len(f) >= 2 && f[1] == "error":
				cur.kind = "statement"
				cur.errSub = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l[len("statement"):]), "error"))
			case f[0] == "query":
				cur.kind = "query"
			default:
				return nil, fmt.Errorf("line %d: expected statement ok|error or query, got %q", line, l)
			}
		case l == "----" && cur.kind == "query":
			inRows = true
		case inRows:
			cur.want = append(cur.want, l)
		default:
			if cur.sql != "" {
				cur.sql += "\n"
			}
			cur.sql += l
		}
	}
	flush()
	return recs, sc.Err()
}

// Format renders a value as the scenario files write it.
func Format(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		return "x'" + hex.EncodeToString(x) + "'"
	case string:
		if x == "" || strings.ContainsAny(x, " \t\n'") || !utf8.ValidString(x) {
			return strconv.Quote(x)
		}
		return x
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}

// Run runs every scenario file against dsn. With memory: each file gets its
// own private database and the files run in parallel; with any other DSN
// they share the database, so they run one after the other and each first
// drops the tables it creates.
func Run(t *testing.T, dsn string) {
	entries, err := files.ReadDir("testdata")
	require.NoError(t, err)
	private := dsn == "memory:"
	for _, e := range entries {
		name := e.Name()
		t.Run(strings.TrimSuffix(name, ".test"), func(t *testing.T) {
			if private {
				t.Parallel()
			}
			text, err := files.ReadFile("testdata/" + name)
			require.NoError(t, err)
			recs, err := parseFile(string(text))
			require.NoError(t, err)
			runFile(t, dsn, name, recs)
			if *rewrite {
				require.NoError(t, os.WriteFile(filepath.Join("testdata", name), []byte(render(recs)), 0o644))
			}
		})
	}
}

func runFile(t *testing.T, dsn, name string, recs []*record) {
	db, err := sql.Open("fdbqueue", dsn)
	require.NoError(t, err)
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	for _, name := range createdTables(recs) {
		_, err := conn.ExecContext(ctx, "DROP TABLE IF EXISTS "+name)
		require.NoError(t, err)
	}
	for _, r := range recs {
		where := fmt.Sprintf("%s:%d: %s", name, r.line, r.sql)
		switch r.kind {
		case "statement":
			res, err := conn.ExecContext(ctx, r.sql)
			if r.expectOK {
				require.NoError(t, err, where)
				if r.affected >= 0 {
					n, err := res.RowsAffected()
					require.NoError(t, err)
					require.Equal(t, r.affected, n, where)
				}
				continue
			}
			require.Error(t, err, where)
			require.Contains(t, err.Error(), r.errSub, where)
		case "query":
			got, err := query(ctx, conn, r.sql)
			require.NoError(t, err, where)
			if *rewrite {
				r.want = got
				continue
			}
			require.Equal(t, r.want, got, where)
		}
	}
}

// createdTables lists the tables the file's CREATE TABLE statements name.
func createdTables(recs []*record) []string {
	var out []string
	for _, r := range recs {
		f := strings.Fields(strings.ToUpper(r.sql))
		if len(f) < 3 || f[0] != "CREATE" || f[1] != "TABLE" {
			continue
		}
		i := 2
		if len(f) > 5 && f[2] == "IF" && f[3] == "NOT" && f[4] == "EXISTS" {
			i = 5
		}
		name := strings.Fields(r.sql)[i]
		if j := strings.IndexByte(name, '('); j >= 0 {
			name = name[:j]
		}
		if name != "" {
			out = append(out, name)
		}
	}
	return out
}

func query(ctx context.Context, conn *sql.Conn, q string) ([]string, error) {
	rows, err := conn.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = Format(v)
		}
		out = append(out, strings.Join(parts, " "))
	}
	return out, rows.Err()
}

func render(recs []*record) string {
	var b strings.Builder
	for i, r := range recs {
		if i > 0 {
			b.WriteString("\n")
		}
		for _, c := range r.comments {
			b.WriteString(c + "\n")
		}
		switch {
		case r.kind == "query":
			b.WriteString("query\n" + r.sql + "\n----\n")
			for _, w := range r.want {
				b.WriteString(w + "\n")
			}
		case r.expectOK && r.affected >= 0:
			fmt.Fprintf(&b, "statement ok %d\n%s\n", r.affected, r.sql)
		case r.expectOK:
			b.WriteString("statement ok\n" + r.sql + "\n")
		default:
			b.WriteString("statement error " + r.errSub + "\n" + r.sql + "\n")
		}
	}
	return b.String()
}
