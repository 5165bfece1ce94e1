package driver_test

import (
	"bytes"
	"database/sql"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fdbqueue "github.com/fdbqueue/fdbqueue/driver"
	"github.com/fdbqueue/fdbqueue/kv"
)

// Values that a table could store but never find again, or never read
// back, are refused where they come in: the error names the column and
// what to use instead, and nothing of the statement is written.
func TestBadInputIntegrity(t *testing.T) {
	t.Parallel()
	db := open(t)
	for _, q := range []string{
		createTasks,
		"CREATE TABLE fl (v TEXT, f DOUBLE)",
		"CREATE TABLE u (v TEXT, b BLOB)",
	} {
		_, err := db.Exec(q)
		require.NoError(t, err)
	}
	_, err := db.Exec("INSERT INTO fl VALUES ('zero', 0), ('inf', 'Inf'), ('minf', ?)", math.Inf(-1))
	require.NoError(t, err, "±Inf are ordered numbers, and are stored")

	cases := []struct {
		sql  string
		args []any
		want string
	}{
		// NaN equals nothing, itself included: a DOUBLE column refuses it.
		{"INSERT INTO fl VALUES ('nan', ?)", []any{math.NaN()}, "column f is DOUBLE; got float NaN (NaN is not stored: it equals nothing; use NULL"},
		{"INSERT INTO fl VALUES ('nan', 'NaN')", nil, "got string NaN (NaN is not stored"},
		{"INSERT INTO fl VALUES ('ok', 1), ('nan', ?)", []any{math.NaN()}, "row 2: column f is DOUBLE"},
		{"SELECT v FROM fl WHERE f = ?", []any{math.NaN()}, "fdbqueue: invalid value: WHERE f =: column f is DOUBLE; got float NaN"},
		{"DELETE FROM fl WHERE f < 'nan'", nil, "NaN is not stored"},
		// Priorities and fit-index columns are integers: NaN is not one.
		{"INSERT INTO tasks VALUES (?, 1, 1, 'x')", []any{math.NaN()}, "column priority is INT; got float NaN (not an integer)"},
		{"INSERT INTO tasks VALUES (1, ?, 1, 'x')", []any{math.NaN()}, "column cpu is INT; got float NaN (not an integer)"},
		{"SELECT id FROM tasks WHERE cpu <= ? AND mem <= 1 LIMIT 1 FOR POP", []any{math.NaN()}, "WHERE cpu <="},
		{"UPDATE tasks SET priority = ? WHERE id = 1", []any{math.NaN()}, "not an integer"},

		// TEXT is UTF-8: other bytes could be stored but not read back.
		{"INSERT INTO u (v) VALUES (?)", []any{"a\xffb"}, `column v is TEXT; got string "a\xffb" (not valid UTF-8; bytes go in a BLOB column)`},
		{"INSERT INTO u (v) VALUES ('a\xffb')", nil, "not valid UTF-8; bytes go in a BLOB column"},
		{"INSERT INTO u (v) VALUES ('ok'), (?)", []any{"\xc3"}, "row 2: column v is TEXT"},
		{"INSERT INTO u (v) VALUES (?)", []any{[]byte{0xff}}, "not valid UTF-8"},
		{"SELECT * FROM u WHERE v = ?", []any{"\xff"}, "fdbqueue: invalid value: WHERE v =: column v is TEXT"},
		{"DELETE FROM u WHERE v = '\xfe'", nil, "not valid UTF-8"},
		{"CREATE TABLE d (v TEXT DEFAULT '\xff')", nil, "DEFAULT of column v"},
		{"CREATE TABLE d (`\xff` TEXT)", nil, "is not valid UTF-8"},
		{"CREATE TABLE `\xff` (v TEXT)", nil, "is not valid UTF-8"},
	}
	for _, tc := range cases {
		_, err := db.Exec(tc.sql, tc.args...)
		require.ErrorContains(t, err, tc.want, tc.sql)
		require.Equal(t, int64(3), count(t, db, "fl"), "nothing written by %q", tc.sql)
		require.Zero(t, count(t, db, "tasks"), "nothing written by %q", tc.sql)
		require.Zero(t, count(t, db, "u"), "nothing written by %q", tc.sql)
	}

	// The same bytes go in a BLOB, and every row of the table reads back.
	_, err = db.Exec("INSERT INTO u VALUES ('text', ?), ('lit', '\xff\xfe')", []byte("a\xffb"))
	require.NoError(t, err)
	rows, err := db.Query("SELECT v, b FROM u")
	require.NoError(t, err)
	var got [][]any
	for rows.Next() {
		var v string
		var b []byte
		require.NoError(t, rows.Scan(&v, &b))
		got = append(got, []any{v, b})
	}
	require.NoError(t, rows.Err())
	require.Equal(t, [][]any{{"text", []byte("a\xffb")}, {"lit", []byte{0xff, 0xfe}}}, got)
	conn, err := db.Conn(bg)
	require.NoError(t, err)
	defer conn.Close()
	tables, err := fdbqueue.Tables(bg, conn)
	require.NoError(t, err, "the catalog reads back")
	require.Len(t, tables, 3)
}

// Comparisons with a DOUBLE follow IEEE 754 for every operator: with NaN
// refused, a row only matches the comparisons that hold for its value.
func TestDoubleComparisons(t *testing.T) {
	t.Parallel()
	db := open(t)
	_, err := db.Exec("CREATE TABLE fl (v TEXT, f DOUBLE)")
	require.NoError(t, err)
	_, err = db.Exec("INSERT INTO fl VALUES ('minf', '-Inf'), ('zero', 0), ('half', 0.5), ('inf', 'Inf'), ('null', NULL)")
	require.NoError(t, err)
	for q, want := range map[string][]string{
		"f = 0":       {"zero"},
		"f != 0":      {"minf", "half", "inf"},
		"f < 0.5":     {"minf", "zero"},
		"f <= 0.5":    {"minf", "zero", "half"},
		"f > 0":       {"half", "inf"},
		"f >= 'Inf'":  {"inf"},
		"f < '-Inf'":  nil,
		"f = '-inf'":  {"minf"},
		"f != '-inf'": {"zero", "half", "inf"},
	} {
		rows, err := db.Query("SELECT v FROM fl WHERE " + q)
		require.Equal(t, want, column[string](t, rows, err), q)
	}
	res, err := db.Exec("DELETE FROM fl WHERE f = 0")
	require.NoError(t, err)
	n, err := res.RowsAffected()
	require.NoError(t, err)
	require.Equal(t, int64(1), n, "DELETE WHERE f = 0 removes the zero only")
}

// A table holding more than a transaction may write (10 MB) is still
// emptied by one DELETE FROM t, in autocommit or in a transaction: it clears
// the table's key range. A statement that is too large says what to do.
func TestDeleteAllOfALargeTable(t *testing.T) {
	t.Parallel()
	db := open(t)
	_, err := db.Exec("CREATE TABLE big (v TEXT)")
	require.NoError(t, err)
	row := strings.Repeat("x", 90_000)
	const n = 120 // 10.8 MB
	fill := func() {
		for range n {
			_, err := db.Exec("INSERT INTO big VALUES (?)", row)
			require.NoError(t, err)
		}
	}
	args := make([]any, n)
	for i := range args {
		args[i] = row
	}
	_, err = db.Exec("INSERT INTO big VALUES (?)"+strings.Repeat(", (?)", n-1), args...)
	require.ErrorIs(t, err, kv.ErrTransactionTooLarge)
	require.ErrorContains(t, err, "insert fewer rows per statement")
	require.Zero(t, count(t, db, "big"))

	fill()
	res, err := db.Exec("DELETE FROM big")
	require.NoError(t, err)
	deleted, err := res.RowsAffected()
	require.NoError(t, err)
	require.Equal(t, int64(n), deleted)

	fill()
	tx, err := db.Begin()
	require.NoError(t, err)
	res, err = tx.Exec("DELETE FROM big")
	require.NoError(t, err)
	deleted, err = res.RowsAffected()
	require.NoError(t, err)
	require.Equal(t, int64(n), deleted)
	require.NoError(t, tx.Commit())
	require.Zero(t, count(t, db, "big"))
}

// A row's limit is one: whatever INSERT accepts can be leased (which adds
// the lease's fields to the record), leased again and moved to the
// dead-letter table; whatever it refuses is refused with ErrValue naming
// the column and its bytes, never with the engine's value_too_large.
func TestRowSizeLimit(t *testing.T) {
	t.Parallel()
	db := open(t)
	_, err := db.Exec("CREATE TABLE m (priority INT NOT NULL, b BLOB) MAX_ATTEMPTS=1")
	require.NoError(t, err)

	_, err = db.Exec("INSERT INTO m (priority, b) VALUES (1, ?)", make([]byte, 50_000))
	require.ErrorIs(t, err, fdbqueue.ErrValue)
	require.ErrorContains(t, err, "a row holds at most 100000: column b holds 50000 bytes, 50000 of them zero bytes, which take 2 bytes each stored")
	_, err = db.Exec("INSERT INTO m (priority, b) VALUES (1, ?)", make([]byte, 49_990))
	require.ErrorIs(t, err, fdbqueue.ErrValue, "refused by the row check, not by the engine")
	require.NotContains(t, err.Error(), "value_too_large")
	// Escaped once (in the row's tuple), not twice: 45,000 zero bytes
	// take 90,000 stored, where they took 135,000.
	_, err = db.Exec("INSERT INTO m (priority, b) VALUES (1, ?)", make([]byte, 45_000))
	require.NoError(t, err)

	accepted := 1
	for n := 99_900; n <= 100_000; n += 4 {
		_, err := db.Exec("INSERT INTO m (priority, b) VALUES (1, ?)", bytes.Repeat([]byte("a"), n))
		if err != nil {
			require.ErrorIs(t, err, fdbqueue.ErrValue, "%d bytes", n)
			require.ErrorContains(t, err, fmt.Sprintf("column b holds %d bytes", n))
			continue
		}
		accepted++
	}
	require.Greater(t, accepted, 1, "a row of almost 100,000 ordinary bytes fits")
	for range accepted {
		var id int64
		require.NoError(t, db.QueryRow("SELECT id FROM m LIMIT 1 FOR LEASE 0.001").Scan(&id))
	}
	time.Sleep(5 * time.Millisecond) // the leases end
	var id int64
	require.ErrorIs(t, db.QueryRow("SELECT id FROM m LIMIT 1 FOR LEASE 30").Scan(&id), sql.ErrNoRows, "every row moved to m_dead")
	require.EqualValues(t, accepted, count(t, db, "m_dead"))
}

// A capacity is often a float: WHERE cpu <= 2.5 on an INT column takes
// the integers at most 2.5, through the fit index as cpu <= 2; every
// comparison with a number no int64 equals holds for the integers it
// holds for in arithmetic.
func TestIntColumnComparedWithFraction(t *testing.T) {
	t.Parallel()
	db := open(t)
	_, err := db.Exec("CREATE TABLE f (priority INT NOT NULL, cpu INT NOT NULL, INDEX (cpu))")
	require.NoError(t, err)
	cpus := []int64{math.MinInt64, -3, 1, 2, 3, 4, math.MaxInt64}
	for _, c := range cpus {
		_, err := db.Exec("INSERT INTO f (priority, cpu) VALUES (1, ?)", c)
		require.NoError(t, err)
	}
	sel := func(q string, args ...any) []int64 {
		rows, err := db.Query(q, args...)
		return column[int64](t, rows, err)
	}
	ops := map[string]func(a int64, f float64) bool{
		"<=": func(a int64, f float64) bool { return float64(a) <= f },
		"<":  func(a int64, f float64) bool { return float64(a) < f },
		">=": func(a int64, f float64) bool { return float64(a) >= f },
		">":  func(a int64, f float64) bool { return float64(a) > f },
		"=":  func(a int64, f float64) bool { return float64(a) == f },
		"!=": func(a int64, f float64) bool { return float64(a) != f },
	}
	for _, f := range []float64{2.5, -2.5, 0.5, 1e30, -1e30, math.Inf(1), math.Inf(-1)} {
		for op, holds := range ops {
			var want []int64
			for _, c := range cpus {
				// Exact for the extremes too: float64(MaxInt64) is 2^63,
				// which none of the fs equals.
				if holds(c, f) {
					want = append(want, c)
				}
			}
			q := "SELECT cpu FROM f WHERE cpu " + op + " ?"
			require.ElementsMatch(t, want, sel(q, f), "cpu %s %v", op, f)
		}
	}
	var c int64
	require.NoError(t, db.QueryRow("SELECT cpu FROM f WHERE cpu <= 2.5 ORDER BY priority LIMIT 1 FOR POP").Scan(&c))
	require.Contains(t, []int64{math.MinInt64, -3, 1, 2}, c)
	_, err = db.Exec("SELECT cpu FROM f WHERE cpu <= ?", math.NaN())
	require.ErrorIs(t, err, fdbqueue.ErrValue, "NaN bounds nothing: still refused")
}
