package shell

import (
	"database/sql"
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// csvRows runs query in the shell on dsn and returns its rows, the header
// row first.
func csvRows(t *testing.T, dsn, query string) [][]string {
	t.Helper()
	out, errs, code := shellRun(t, "", "--format", "csv", "-c", query, dsn)
	require.Equal(t, 0, code, errs)
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	require.NoError(t, err, out)
	return rows
}

// column returns column name of rows (csvRows), the header row left out.
func column(rows [][]string, name string) []string {
	var out []string
	for _, r := range rows[1:] {
		for i, h := range rows[0] {
			if h == name {
				out = append(out, r[i])
			}
		}
	}
	return out
}

// TestCopyBackupRestore: \copy TO is a backup that \copy FROM restores into
// a table dropped and created again: the same ids, delayed and leased rows
// hidden until the same time and then served at their places, attempts
// counting on. The pops after the restore return what the pops of the
// original would have: the rows due, then, once the hidden ones are
// released, those, in the same order. Only the leases' tokens are lost.
func TestCopyBackupRestore(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{"memory", "file"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			dsn := "file:" + filepath.Join(dir, "db")
			if engine == "memory" {
				// A named in-memory database lives while a handle is open:
				// this one keeps it between the shell's runs.
				dsn = "memory:TestCopyBackupRestore"
				db, err := sql.Open("fdbqueue", dsn)
				require.NoError(t, err)
				require.NoError(t, db.Ping())
				t.Cleanup(func() { db.Close() })
			}
			jobsCSV, fifoCSV := filepath.Join(dir, "jobs.csv"), filepath.Join(dir, "fifo.csv")
			create := []string{
				"-c", "CREATE TABLE jobs (priority INT NOT NULL, name TEXT) MAX_ATTEMPTS=3",
				"-c", "CREATE TABLE fifo (v TEXT)",
			}
			args := append([]string{"--format", "csv"}, create...)
			args = append(args,
				"-c", "INSERT INTO jobs (priority, name, _error) VALUES (1, 'leased', NULL), (2, 'plain', 'timeout'), (1, 'a2', ''), (2, 'b2', NULL), (1, 'a3', 'a \"quoted\", multi-line\nerror')",
				"-c", "INSERT INTO jobs (priority, name, _visible_at) VALUES (0, 'delayed-1h', NOW() + INTERVAL 1 HOUR)",
				"-c", "INSERT INTO jobs (priority, name) VALUES (1, 'a4')",
				"-c", "SELECT name FROM jobs ORDER BY priority DESC LIMIT 1 FOR LEASE 3600",
				"-c", "SELECT name FROM jobs ORDER BY priority LIMIT 1 FOR LEASE 3600",
				"-c", "INSERT INTO fifo VALUES ('x1'), ('x2'), ('x3')",
				"-c", "SELECT v FROM fifo LIMIT 1 FOR LEASE 3600",
				"-c", `\copy jobs TO '`+jobsCSV+`'`,
				"-c", `\copy fifo TO '`+fifoCSV+`'`,
				dsn)
			out, errs, code := shellRun(t, "", args...)
			require.Equal(t, 0, code, errs)
			require.Equal(t, "name\nplain\nname\nleased\nv\nx1\n", out)
			require.Contains(t, errs, "COPY 7\nCOPY 3\n")
			file, err := os.ReadFile(jobsCSV)
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(string(file), "id,priority,name,_visible_at,_attempts,_error\n"), "%s", file)

			const jobsState = "SELECT id, priority, name, _error, _visible_at, _attempts, _lease FROM jobs"
			const fifoState = "SELECT id, v, _visible_at, _attempts, _lease FROM fifo"
			jobs, fifo := csvRows(t, dsn, jobsState), csvRows(t, dsn, fifoState)
			require.Equal(t, []string{"delayed-1h", "leased", "a2", "a3", "a4", "plain", "b2"}, column(jobs, "name"), "queue order")
			require.Equal(t, []string{"0", "1", "0", "0", "0", "1", "0"}, column(jobs, "_attempts"))
			require.Equal(t, []string{"1", "0", "0"}, column(fifo, "_attempts"))
			require.Equal(t, []string{"", "", "", "a \"quoted\", multi-line\nerror", "", "timeout", ""}, column(jobs, "_error"))

			// What the pops of the original return: the rows due, then,
			// once every hidden row is released, the rest.
			pops := func() []string {
				release := []string{"--format", "csv"}
				for table, rows := range map[string][][]string{"jobs": jobs, "fifo": fifo} {
					for _, r := range rows[1:] {
						if r[len(r)-3] != "0001-01-01T00:00:00Z" { // _visible_at: hidden
							release = append(release, "-c", "UPDATE "+table+" SET _visible_at = NOW() WHERE id = "+r[0])
						}
					}
				}
				got := append(column(csvRows(t, dsn, "SELECT name FROM jobs LIMIT 100 FOR POP"), "name"),
					column(csvRows(t, dsn, "SELECT v FROM fifo LIMIT 100 FOR POP"), "v")...)
				_, errs, code := shellRun(t, "", append(release, dsn)...)
				require.Equal(t, 0, code, errs)
				got = append(got, "released")
				got = append(got, column(csvRows(t, dsn, "SELECT name FROM jobs ORDER BY priority LIMIT 100 FOR POP"), "name")...)
				return append(got, column(csvRows(t, dsn, "SELECT v FROM fifo LIMIT 100 FOR POP"), "v")...)
			}
			want := pops()
			require.Equal(t, []string{"a2", "a3", "a4", "b2", "x2", "x3", "released", "delayed-1h", "leased", "plain", "x1"}, want)

			args = []string{"-c", "DROP TABLE jobs", "-c", "DROP TABLE fifo"}
			args = append(args, create...)
			args = append(args, "-c", `\copy jobs FROM '`+jobsCSV+`'`, "-c", `\copy fifo FROM '`+fifoCSV+`'`, dsn)
			_, errs, code = shellRun(t, "", args...)
			require.Equal(t, 0, code, errs)
			require.Contains(t, errs, "COPY 7\nCOPY 3\n")

			// Everything but the leases' tokens is back.
			restored, restoredFifo := csvRows(t, dsn, jobsState), csvRows(t, dsn, fifoState)
			dropLease := func(rows [][]string) [][]string {
				out := make([][]string, len(rows))
				for i, r := range rows {
					out[i] = r[:len(r)-1]
				}
				return out
			}
			require.Equal(t, dropLease(jobs), dropLease(restored))
			require.Equal(t, dropLease(fifo), dropLease(restoredFifo))
			require.NotEqual(t, []string{"0", "0", "0", "0", "0", "0", "0"}, column(jobs, "_lease"))
			require.Equal(t, []string{"0", "0", "0", "0", "0", "0", "0"}, column(restored, "_lease"), "a lease's token is not restored")
			require.Equal(t, want, pops(), "the restored queue serves what the original would have")
		})
	}
}

// TestCopyFromPseudoColumns: \copy FROM takes any of the table's columns
// and the pseudo-columns id, _visible_at and _attempts, in any order: a
// CSV of the columns alone (what \copy TO wrote before it wrote
// backups) loads with new ids, due at once. A _visible_at past, or the zero
// time, is due at once; a future one hidden until then. _attempts counts
// toward MAX_ATTEMPTS.
func TestCopyFromPseudoColumns(t *testing.T) {
	t.Parallel()
	sh, _, msg := newTestShell(t, "csv")
	require.NoError(t, sh.exec("CREATE TABLE jobs (priority INT NOT NULL, name TEXT) MAX_ATTEMPTS=3"))
	for _, text := range []string{
		"priority,name\n1,old\n",
		"name,_visible_at,priority\npast,2001-02-03T04:05:06.7Z,1\nzero,0001-01-01T00:00:00Z,1\nfuture,2200-01-01T00:00:00Z,1\n",
		"ID,name,priority\n42,withid,1\n",
		"_attempts,priority,name\n3,1,spent\n",
	} {
		sh.stdin = strings.NewReader(text)
		_, err := sh.meta(`\copy jobs FROM STDIN`)
		require.NoError(t, err, "%s: %s", text, msg.String())
	}
	rows := selectAll(t, sh, "SELECT name, _attempts FROM jobs WHERE id = 42")
	require.Equal(t, [][]any{{"withid", int64(0)}}, rows)
	never := time.Time{} // the _visible_at of a row never delayed or leased
	rows = selectAll(t, sh, "SELECT name, _visible_at FROM jobs WHERE _visible_at < '1970-01-01'")
	require.Equal(t, [][]any{{"old", never}, {"zero", never}, {"withid", never}, {"spent", never}}, rows)
	require.Equal(t, [][]any{{"past"}}, selectAll(t, sh, "SELECT name FROM jobs WHERE _visible_at = '2001-02-03T04:05:06.7Z'"))

	// One lease takes every row due, in load order; the row leased three
	// times already moves to the dead letters; the future one is hidden.
	rows = selectAll(t, sh, "SELECT name, _attempts FROM jobs LIMIT 10 FOR LEASE 3600")
	require.Equal(t, [][]any{{"old", int64(1)}, {"past", int64(1)}, {"zero", int64(1)}, {"withid", int64(1)}}, rows)
	require.Equal(t, [][]any{{"spent", int64(3)}}, selectAll(t, sh, "SELECT name, _attempts FROM jobs_dead"))
	require.Equal(t, [][]any{{"future"}}, selectAll(t, sh, "SELECT name FROM jobs WHERE _attempts = 0"))

	// The lease's token cannot be loaded; other names are not columns.
	for text, want := range map[string]string{
		"name,_lease\nx,1\n":  `the header names _lease: a lease's token cannot be restored (a row leased at the backup stays hidden until its _visible_at, and is then due); leave the column out`,
		"name,nope\nx,1\n":    `the header names column "nope"; table jobs has columns priority, name, and the pseudo-columns id, _visible_at, _attempts`,
		"id,name,Id\n1,x,1\n": "the header names column id twice",
	} {
		sh.stdin = strings.NewReader(text)
		_, err := sh.meta(`\copy jobs FROM STDIN`)
		require.ErrorContains(t, err, want, text)
	}
}

// TestCopyFromBadPseudoValues: bad ids, _visible_at and _attempts are
// reported by their line, as other bad rows are, and the other rows load;
// an id the table holds already is one of them.
func TestCopyFromBadPseudoValues(t *testing.T) {
	t.Parallel()
	sh, _, msg := newTestShell(t, "csv")
	require.NoError(t, sh.exec("CREATE TABLE jobs (priority INT NOT NULL, name TEXT)"))
	text := "id,priority,name,_visible_at,_attempts\n" +
		"1,1,ok1,0001-01-01T00:00:00Z,0\n" +
		"0,1,zero-id,0001-01-01T00:00:00Z,0\n" + // line 3
		"x,1,text-id,0001-01-01T00:00:00Z,0\n" +
		",1,null-id,0001-01-01T00:00:00Z,0\n" + // line 5
		"5,1,ok5,0001-01-01T00:00:00Z,0\n" +
		"5,1,dup5,0001-01-01T00:00:00Z,0\n" + // line 7
		"6,1,neg,0001-01-01T00:00:00Z,-1\n" +
		"7,1,text-att,0001-01-01T00:00:00Z,x\n" + // line 9
		"8,1,null-att,0001-01-01T00:00:00Z,\n" +
		"9,1,text-vis,yesterday,0\n" + // line 11
		"10,1,null-vis,,0\n" +
		"11,1,pre-1970,1969-12-31T23:59:59Z,0\n" // line 13
	path := filepath.Join(t.TempDir(), "bad.csv")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	_, err := sh.meta(`\copy jobs FROM '` + path + `'`)
	require.EqualError(t, err, `\copy: 10 rows rejected (reported above by line)`)
	report := msg.String()
	for line, want := range map[int]string{
		3:  "fdbqueue: invalid value: id 0: ids are positive (leave id out, and one is assigned)",
		4:  "fdbqueue: invalid value: column id is INT; got string x",
		5:  "fdbqueue: invalid value: id cannot be NULL",
		7:  "fdbqueue: an item with this id is already queued: ",
		8:  "fdbqueue: invalid value: _attempts -1: attempts are 0 or more",
		9:  "fdbqueue: invalid value: column _attempts is INT; got string x",
		10: "fdbqueue: invalid value: _attempts cannot be NULL",
		11: "fdbqueue: invalid value: column _visible_at is TIMESTAMP; got string yesterday",
		12: "fdbqueue: invalid value: _visible_at cannot be NULL",
		13: "fdbqueue: invalid value: _visible_at ",
	} {
		require.Contains(t, report, path+":"+strconv.Itoa(line)+": "+want, report)
	}
	require.Contains(t, report, "COPY 2\n")
	require.Equal(t, [][]any{{int64(1), "ok1"}, {int64(5), "ok5"}}, selectAll(t, sh, "SELECT id, name FROM jobs"))

	// A restore into a table that holds the ids already: each such row is
	// rejected by its line, and the others load.
	msg.Reset()
	sh.stdin = strings.NewReader("id,priority,name\n5,1,again\n12,1,new\n")
	_, err = sh.meta(`\copy jobs FROM STDIN`)
	require.EqualError(t, err, `\copy: 1 row rejected (reported above by line)`)
	require.Contains(t, msg.String(), "<stdin>:2: fdbqueue: an item with this id is already queued: table jobs holds a row with id 5 (leave id out, and one is assigned)\nCOPY 1\n")
}
