package shell

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMain lets the pseudo-terminal test run this binary as the shell.
func TestMain(m *testing.M) {
	if os.Getenv("FDBQUEUE_SHELL_MAIN") == "1" {
		os.Exit(Main(context.Background(), nil, os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func TestCopy(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("fdbqueue", "memory:")
	require.NoError(t, err)
	defer db.Close()
	conn, err := db.Conn(context.Background())
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(context.Background(), "CREATE TABLE tasks (priority INT NOT NULL, cpu INT NOT NULL, name TEXT NOT NULL, INDEX fit (cpu))")
	require.NoError(t, err)

	csvText := "priority,cpu,name\n" +
		"1,2,first\n" +
		"high,2,bad priority\n" + // line 3
		"2,,no cpu\n" + // line 4: empty is NULL
		"3,1,\"quoted, with comma\"\n" +
		"4,1\n" + // line 6: too few fields
		"5,8,last\n"
	path := filepath.Join(t.TempDir(), "tasks.csv")
	require.NoError(t, os.WriteFile(path, []byte(csvText), 0o600))

	var out, msg bytes.Buffer
	sh := &shell{ctx: context.Background(), conn: conn, out: &out, msg: &msg, format: printer{}, opts: &options{}}
	quit, err := sh.meta(`\copy tasks FROM '` + path + `'`)
	require.EqualError(t, err, `\copy: 3 rows rejected (reported above by line)`, "rejected rows fail the command")
	require.False(t, quit)
	report := msg.String()
	require.Contains(t, report, path+":3: ")
	require.Contains(t, report, "column priority is INT")
	require.Contains(t, report, path+":4: ")
	require.Contains(t, report, "cpu cannot be NULL")
	require.Contains(t, report, path+":6: 2 fields, the header names 3 columns")
	require.Contains(t, report, "COPY 3\n")

	var n int
	require.NoError(t, conn.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM tasks").Scan(&n))
	require.Equal(t, 3, n, "what was loaded is what was reported loaded")

	// From standard input.
	msg.Reset()
	sh.stdin = strings.NewReader("name,priority,cpu\nfrom stdin,9,1\n")
	_, err = sh.meta(`\copy tasks FROM STDIN`)
	require.NoError(t, err)
	require.Contains(t, msg.String(), "COPY 1")
	var name string
	require.NoError(t, conn.QueryRowContext(context.Background(), "SELECT name FROM tasks ORDER BY priority DESC LIMIT 1").Scan(&name))
	require.Equal(t, "from stdin", name)

	_, err = sh.meta(`\copy tasks`)
	require.ErrorContains(t, err, "usage")
	_, err = sh.meta(`\nope`)
	require.ErrorContains(t, err, "unknown meta-command")
}

// TestCopyUnderFaults loads through conflicts and commits of unknown outcome:
// what \copy reports loaded is exactly what the table holds.
func TestCopyUnderFaults(t *testing.T) {
	t.Parallel()
	for _, seed := range []int{1, 2} {
		db, err := sql.Open("fdbqueue", fmt.Sprintf("memory:?fault_conflict=0.2&fault_unknown=0.2&fault_seed=%d", seed))
		require.NoError(t, err)
		defer db.Close()
		conn, err := db.Conn(context.Background())
		require.NoError(t, err)
		defer conn.Close()
		_, err = conn.ExecContext(context.Background(), "CREATE TABLE q (n INT NOT NULL, pad TEXT)")
		require.NoError(t, err)

		// 4,500 rows, every 100th bad; a few 90 KB rows force batches cut by
		// size, not count.
		var csvText strings.Builder
		csvText.WriteString("n,pad\n")
		good := 0
		for i := range 4500 {
			switch {
			case i%100 == 7:
				csvText.WriteString("not a number,x\n")
			case i%1000 == 3:
				fmt.Fprintf(&csvText, "%d,%s\n", i, strings.Repeat("p", 90<<10))
				good++
			default:
				fmt.Fprintf(&csvText, "%d,\n", i)
				good++
			}
		}
		var msg bytes.Buffer
		sh := &shell{ctx: context.Background(), conn: conn, out: io.Discard, msg: &msg, format: printer{}, opts: &options{}}
		err = sh.copyFrom("q", "gen.csv", strings.NewReader(csvText.String()), 0)
		require.ErrorContains(t, err, "45 rows rejected")
		require.Contains(t, msg.String(), fmt.Sprintf("COPY %d\n", good))
		require.Contains(t, msg.String(), "gen.csv:9: fdbqueue: invalid value: column n is INT", "the first bad row, by its line")
		var n, distinct int
		require.NoError(t, conn.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM q").Scan(&n))
		require.Equal(t, good, n, "seed %d", seed)
		rows, err := conn.QueryContext(context.Background(), "SELECT n FROM q")
		require.NoError(t, err)
		seen := map[int]bool{}
		for rows.Next() {
			var v int
			require.NoError(t, rows.Scan(&v))
			require.False(t, seen[v], "row %d loaded twice", v)
			seen[v] = true
			distinct++
		}
		require.NoError(t, rows.Err())
		require.Equal(t, good, distinct)
	}
}

// TestIncludeAndFileNames: \i runs statements and meta-commands, file names
// may be quoted (with spaces inside), and a script including itself stops.
func TestIncludeAndFileNames(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("fdbqueue", "memory:")
	require.NoError(t, err)
	defer db.Close()
	conn, err := db.Conn(context.Background())
	require.NoError(t, err)
	defer conn.Close()
	var out, msg bytes.Buffer
	sh := &shell{ctx: context.Background(), conn: conn, out: &out, msg: &msg, format: printer{format: "csv"}, opts: &options{}}

	dir := filepath.Join(t.TempDir(), "a dir")
	require.NoError(t, os.Mkdir(dir, 0o700))
	csvPath := filepath.Join(dir, "it's.csv")
	require.NoError(t, os.WriteFile(csvPath, []byte("v\n1\n2\n"), 0o600))
	script := filepath.Join(dir, "load.sql")
	quoted := "'" + strings.ReplaceAll(csvPath, "'", "''") + "'"
	require.NoError(t, os.WriteFile(script, []byte("CREATE TABLE q (v INT);\n\\copy q FROM "+quoted+"\nSELECT COUNT(*) FROM q;\n"), 0o600))

	_, err = sh.meta(`\i "` + script + `"`)
	require.NoError(t, err, msg.String())
	require.Contains(t, msg.String(), "COPY 2")
	require.Equal(t, "COUNT(*)\n2\n", out.String())

	for cmd, want := range map[string]string{
		`\copy q FROM ` + csvPath:                "quote a name that holds spaces",
		`\copy q FROM 'unterminated`:             "unterminated ' quote",
		`\copy q FROM 'x.csv' trailing`:          `unexpected "trailing"`,
		`\copy q FROM`:                           "usage",
		`\i`:                                     "a file name is missing",
		"\\copy q\tFROM\t'" + dir + "/none.csv'": "no such file",
	} {
		_, err := sh.meta(cmd)
		require.ErrorContains(t, err, want, cmd)
	}

	self := filepath.Join(dir, "self.sql")
	require.NoError(t, os.WriteFile(self, []byte("\\i '"+self+"'\n"), 0o600))
	_, err = sh.meta(`\i '` + self + `'`)
	require.ErrorContains(t, err, "does a script include itself?")
}

// TestDescribeVisibility: \d counts the visible, leased and delayed rows,
// and over its cap says it did not rather than scan a big table.
func TestDescribeVisibility(t *testing.T) {
	t.Parallel()
	sh, out, _ := newTestShell(t, "table")
	ctx := context.Background()
	_, err := sh.conn.ExecContext(ctx, "CREATE TABLE q (priority INT NOT NULL, v TEXT)")
	require.NoError(t, err)
	_, err = sh.conn.ExecContext(ctx, "INSERT INTO q (priority, v) VALUES (1, 'a'), (2, 'b'), (3, 'c')")
	require.NoError(t, err)
	_, err = sh.conn.ExecContext(ctx, "INSERT INTO q (priority, v, _visible_at) VALUES (1, 'd', NOW() + INTERVAL 1 HOUR)")
	require.NoError(t, err)
	var ids, leases [2]int64
	for i := range ids {
		require.NoError(t, sh.conn.QueryRowContext(ctx, "SELECT id, _lease FROM q LIMIT 1 FOR LEASE 3600").Scan(&ids[i], &leases[i]))
	}
	summary := func() string {
		out.Reset()
		_, err := sh.meta(`\d q`)
		require.NoError(t, err)
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		return lines[len(lines)-1]
	}
	require.Equal(t, "priority queue, 4 rows (1 visible, 2 leased, 1 delayed)", summary())

	// A released lease is visible again, though the row keeps its _lease.
	_, err = sh.conn.ExecContext(ctx, "UPDATE q SET _visible_at = NOW() WHERE id = ? AND _lease = ?", ids[0], leases[0])
	require.NoError(t, err)
	require.Equal(t, "priority queue, 4 rows (2 visible, 1 leased, 1 delayed)", summary())

	// A table with dead letters counts them.
	_, err = sh.conn.ExecContext(ctx, "CREATE TABLE d (v TEXT) MAX_ATTEMPTS=1")
	require.NoError(t, err)
	_, err = sh.conn.ExecContext(ctx, "INSERT INTO d (id, v, _attempts) VALUES (1, 'x', 1), (2, 'y', 0)")
	require.NoError(t, err)
	var id int64
	require.NoError(t, sh.conn.QueryRowContext(ctx, "SELECT id FROM d LIMIT 1 FOR LEASE 3600").Scan(&id))
	require.Equal(t, int64(2), id, "1 died")
	out.Reset()
	_, err = sh.meta(`\d d`)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Equal(t, "fifo queue, 1 rows (0 visible, 1 leased, 0 delayed), 1 dead in d_dead, MAX_ATTEMPTS=1", lines[len(lines)-1])

	// The table options, as CREATE TABLE takes them.
	_, err = sh.conn.ExecContext(ctx, "CREATE TABLE jobs (v TEXT) BACKOFF=EXPONENTIAL(0.5 SECOND, 90 MINUTE), MAX_ATTEMPTS=5")
	require.NoError(t, err)
	out.Reset()
	_, err = sh.meta(`\d jobs`)
	require.NoError(t, err)
	require.Contains(t, out.String(), "fifo queue, 0 rows (0 visible, 0 leased, 0 delayed), 0 dead in jobs_dead, MAX_ATTEMPTS=5 BACKOFF=EXPONENTIAL(0.5 SECOND, 90 MINUTE)\n")
}

// TestDescribeUnique: \d lists a table's unique keys, with their windows.
func TestDescribeUnique(t *testing.T) {
	t.Parallel()
	sh, out, _ := newTestShell(t, "table")
	_, err := sh.conn.ExecContext(context.Background(), "CREATE TABLE u (kind TEXT NOT NULL, day INT, ref TEXT UNIQUE, UNIQUE KEY once (kind, day) FOR 1 HOUR)")
	require.NoError(t, err)
	_, err = sh.meta(`\d u`)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Equal(t, "fifo queue, 0 rows (0 visible, 0 leased, 0 delayed), unique key ref (ref), unique key once (kind, day) for 1h0m0s after a removal", lines[len(lines)-1])
}
