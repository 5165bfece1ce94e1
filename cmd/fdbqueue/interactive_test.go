package main

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMain lets the pseudo-terminal test run this binary as the shell.
func TestMain(m *testing.M) {
	if os.Getenv("FDBQUEUE_SHELL_MAIN") == "1" {
		os.Exit(run(context.Background(), nil, os.Stdin, os.Stdout, os.Stderr))
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
	sh := &shell{ctx: context.Background(), conn: conn, out: &out, msg: &msg, format: formatTable, opts: &options{}}
	quit, err := sh.meta(`\copy tasks FROM '`+path+`'`, nil)
	require.NoError(t, err)
	require.False(t, quit)
	report := msg.String()
	require.Contains(t, report, path+":3: ")
	require.Contains(t, report, "column priority is INT")
	require.Contains(t, report, path+":4: ")
	require.Contains(t, report, "cpu cannot be NULL")
	require.Contains(t, report, path+":6: 2 fields, the header names 3 columns")
	require.Contains(t, report, "COPY 3 (3 rows rejected)")

	var n int
	require.NoError(t, conn.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM tasks").Scan(&n))
	require.Equal(t, 3, n, "what was loaded is what was reported loaded")

	// From standard input.
	msg.Reset()
	_, err = sh.meta(`\copy tasks FROM STDIN`, strings.NewReader("name,priority,cpu\nfrom stdin,9,1\n"))
	require.NoError(t, err)
	require.Contains(t, msg.String(), "COPY 1")
	var name string
	require.NoError(t, conn.QueryRowContext(context.Background(), "SELECT name FROM tasks ORDER BY priority DESC LIMIT 1").Scan(&name))
	require.Equal(t, "from stdin", name)

	_, err = sh.meta(`\copy tasks`, nil)
	require.ErrorContains(t, err, "usage")
	_, err = sh.meta(`\nope`, nil)
	require.ErrorContains(t, err, "unknown meta-command")
}
