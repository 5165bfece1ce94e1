package driver_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	fdbqueue "github.com/fdbqueue/fdbqueue/driver"
)

var bg = context.Background()

func open(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("fdbqueue", "memory:")
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

const createTasks = `CREATE TABLE tasks (priority INT NOT NULL, cpu INT NOT NULL, mem INT NOT NULL, payload TEXT, INDEX fit (cpu, mem))`

// column reads the one column of every row rows holds, then closes it;
// err is Query's error.
func column[T any](t testing.TB, rows *sql.Rows, err error) []T {
	t.Helper()
	require.NoError(t, err)
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		require.NoError(t, rows.Scan(&v))
		out = append(out, v)
	}
	require.NoError(t, rows.Err())
	return out
}

func count(t testing.TB, db interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, table string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, db.QueryRowContext(bg, "SELECT COUNT(*) FROM "+table).Scan(&n))
	return n
}

func TestDSN(t *testing.T) {
	t.Parallel()
	good := map[string]fdbqueue.Config{
		"memory:":      {Engine: fdbqueue.EngineMemory, Params: map[string]string{}},
		"memory:jobs":  {Engine: fdbqueue.EngineMemory, Name: "jobs", Params: map[string]string{}},
		"file:/tmp/q":  {Engine: fdbqueue.EngineFile, Path: "/tmp/q", Params: map[string]string{}},
		"fdb:?root=x":  {Engine: fdbqueue.EngineFDB, Params: map[string]string{"root": "x"}},
		"FDB:/etc/fdb": {Engine: fdbqueue.EngineFDB, Path: "/etc/fdb", Params: map[string]string{}},
	}
	for dsn, want := range good {
		cfg, err := fdbqueue.ParseDSN(dsn)
		require.NoError(t, err, dsn)
		require.Equal(t, want, *cfg, dsn)
	}
	bad := map[string]string{
		"":                    "has no engine",
		"postgres://x":        "unknown engine",
		"memory:?sync=full":   `unknown parameter "sync" for memory`,
		"memory:?nope=1":      "accepted: none; for tests, fault injection: fault_conflict",
		"file:":               "needs a path",
		"file:/x?bogus=1":     `unknown parameter "bogus" for file (accepted: sync, mode; for tests, fault injection: fault_conflict`,
		"fdb:?root=a&root=b":  "given 2 times",
		"memory:/tmp/x":       "did you mean file:",
		"file:/x?sync=%zz":    "parameters",
		"fdb:?tenant=t&zap=1": `unknown parameter "zap"`,
	}
	for dsn, want := range bad {
		_, err := fdbqueue.ParseDSN(dsn)
		require.ErrorIs(t, err, fdbqueue.ErrDSN, dsn)
		require.ErrorContains(t, err, want, dsn)
	}

	// fdb: depends on the build: see TestFDBEngine (fdb_off_test.go,
	// fdb_on_test.go).
	_, err := sql.Open("fdbqueue", "memory:?x=1")
	require.ErrorIs(t, err, fdbqueue.ErrDSN)
	for dsn, want := range map[string]string{
		"memory:?fault_conflict=2":                     "a rate from 0 to 1",
		"memory:?fault_conflict=0.6&fault_unknown=0.6": "more than 1",
		"memory:?fault_seed=-1":                        "unsigned integer",
		"memory:?commit_latency=soon":                  "a duration",
	} {
		_, err = sql.Open("fdbqueue", dsn)
		require.ErrorIs(t, err, fdbqueue.ErrDSN, dsn)
		require.ErrorContains(t, err, want, dsn)
	}
	db, err := sql.Open("fdbqueue", "memory:?fault_conflict=0.1&fault_unknown=0.1&fault_seed=3&commit_latency=1ms")
	require.NoError(t, err)
	require.NoError(t, db.Close())
	_, err = sql.Open("fdbqueue", "file:"+t.TempDir()+"?sync=sometimes")
	require.ErrorContains(t, err, "accepted: full")
}

func TestNamedMemoryShared(t *testing.T) {
	t.Parallel()
	name := "memory:" + strings.ReplaceAll(t.Name(), "/", "_")
	a, err := sql.Open("fdbqueue", name)
	require.NoError(t, err)
	defer a.Close()
	b, err := sql.Open("fdbqueue", name)
	require.NoError(t, err)
	defer b.Close()
	_, err = a.Exec("CREATE TABLE q (v TEXT)")
	require.NoError(t, err)
	_, err = a.Exec("INSERT INTO q VALUES ('x')")
	require.NoError(t, err)
	require.Equal(t, int64(1), count(t, b, "q"), "a table created by one client is seen by every client")
}

func TestInsertResultAndPlaceholders(t *testing.T) {
	t.Parallel()
	db := open(t)
	_, err := db.Exec(createTasks)
	require.NoError(t, err)

	res, err := db.Exec("INSERT INTO tasks (priority, cpu, mem, payload) VALUES (?, ?, ?, ?), (?, ?, ?, ?)", 1, 2, 1024, "a", 5, int8(1), uint16(512), []byte("b"))
	require.NoError(t, err)
	n, err := res.RowsAffected()
	require.NoError(t, err)
	require.Equal(t, int64(2), n)
	last, err := res.LastInsertId()
	require.NoError(t, err)
	require.Positive(t, last)

	var payload string
	var id int64
	require.NoError(t, db.QueryRow("SELECT id, payload FROM tasks WHERE cpu <= :cpu AND mem <= :mem ORDER BY priority DESC LIMIT 1",
		sql.Named("cpu", 4), sql.Named("mem", 4096)).Scan(&id, &payload))
	require.Equal(t, "b", payload)
	require.Equal(t, last, id, "LastInsertId is the last row's id")

	// A prepared statement parses once and runs many times.
	st, err := db.Prepare("SELECT payload FROM tasks WHERE id = ?")
	require.NoError(t, err)
	defer st.Close()
	require.NoError(t, st.QueryRow(last).Scan(&payload))
	require.Equal(t, "b", payload)
	require.ErrorIs(t, st.QueryRow(int64(-1)).Scan(&payload), sql.ErrNoRows)
}

// TestBadInput: every case fails with a message naming the problem, writes
// nothing, and leaves the connection usable.
func TestBadInput(t *testing.T) {
	t.Parallel()
	db := open(t)
	db.SetMaxOpenConns(1) // one connection: prove it stays usable
	_, err := db.Exec(createTasks)
	require.NoError(t, err)
	_, err = db.Exec("CREATE TABLE fifo (v TEXT NOT NULL, b VARBINARY(4))")
	require.NoError(t, err)

	cases := []struct {
		sql  string
		args []any
		want string
	}{
		{"INSERT INTO tasks VALUES (?, ?, ?, ?)", []any{1, 2, 3}, "4 placeholders; got 3 arguments"},
		{"INSERT INTO tasks VALUES (?, ?, ?, ?)", []any{1, 2, 3, "x", 5}, "got 5 arguments"},
		{"INSERT INTO tasks VALUES (1, 1, 1, 'x')", []any{1}, "0 placeholders; got 1"},
		{"INSERT INTO tasks VALUES (:a, 1, 1, 'x')", nil, "no argument for :a"},
		{"INSERT INTO tasks VALUES (:a, 1, 1, 'x')", []any{sql.Named("a", 1), sql.Named("b", 2)}, "named placeholders"},
		{"INSERT INTO tasks VALUES (?, 1, 1, 'x')", []any{struct{}{}}, "unsupported argument type"},
		{"INSERT INTO tasks VALUES (?, 1, 1, 'x')", []any{uint64(math.MaxUint64)}, "larger than the largest integer"},
		{"INSERT INTO tasks VALUES (?, 1, 1, 'x')", []any{"high"}, "column priority is INT; got string"},
		{"INSERT INTO tasks VALUES (?, 1, 1, 'x')", []any{1.5}, "not an integer"},
		{"INSERT INTO tasks VALUES (1, NULL, 1, 'x')", nil, "column cpu cannot be NULL"},
		{"INSERT INTO tasks VALUES (1, 1, 1, ?)", []any{strings.Repeat("x", 200_000)}, "a row holds at most 100000"},
		{"INSERT INTO tasks (priority, cpu, mem, nope) VALUES (1, 1, 1, 1)", nil, "has no column nope"},
		{"INSERT INTO fifo (v, b) VALUES ('a', ?)", []any{[]byte("12345")}, "holds at most 4 bytes"},
		{"INSERT INTO fifo (v) VALUES (?)", []any{[]byte{0xff}}, "not valid UTF-8"},
		{"INSERT INTO nope VALUES (1)", nil, "no such table: nope"},
		{"SELECT * FROM tasks WHERE cpu <= ? LIMIT ?", []any{1, -1}, "LIMIT must be a count"},
		{"SELECT * FROM tasks WHERE cpu <= ? LIMIT 1", []any{"many"}, "WHERE cpu <="},
		{"SELECT * FROM tasks LIMIT 1 FOR UPDATE", nil, "FOR UPDATE"},
		{"SELECT * FROM tasks LIMIT 1 FOR POP NOW", nil, "SQL not understood"},
		{"DROP DATABASE x", nil, "not supported"},
		{"SELECT * FROM tasks; DELETE FROM tasks", nil, "2 statements"},
		{"UPDATE tasks SET cpu = 1 WHERE id = 1", nil, "the UPDATEs are"},
		{"COMMIT", nil, "no transaction is open"},
		{strings.Repeat("SELECT ", 200_000), nil, "statement of"},
		{"\x00\xff garbage", nil, "SQL not understood"},
	}
	for _, tc := range cases {
		_, err := db.Exec(tc.sql, tc.args...)
		require.Error(t, err, tc.sql)
		require.ErrorContains(t, err, tc.want, tc.sql)
		require.False(t, errors.Is(err, sqlDriverErrBadConn), tc.sql)
		require.Zero(t, count(t, db, "tasks"), "nothing written after %q", tc.sql)
		require.Zero(t, count(t, db, "fifo"))
	}
	_, err = db.Exec("INSERT INTO tasks VALUES (1, 1, 1, 'fine')")
	require.NoError(t, err, "the connection is still usable")
}

var sqlDriverErrBadConn = errors.New("driver: bad connection")

func TestExplicitTransactions(t *testing.T) {
	t.Parallel()
	db := open(t)
	_, err := db.Exec(createTasks)
	require.NoError(t, err)

	tx, err := db.BeginTx(bg, nil)
	require.NoError(t, err)
	_, err = tx.Exec("INSERT INTO tasks VALUES (1, 1, 1, 'a'), (2, 1, 1, 'b')")
	require.NoError(t, err)
	var payload string
	require.NoError(t, tx.QueryRow("SELECT payload FROM tasks WHERE cpu <= 1 ORDER BY priority DESC LIMIT 1 FOR POP").Scan(&payload))
	require.Equal(t, "b", payload, "a transaction reads its own writes")
	require.Zero(t, count(t, db, "tasks"), "others see nothing before Commit")
	require.NoError(t, tx.Commit())
	require.Equal(t, int64(1), count(t, db, "tasks"))

	// ReadOnly is enforced.
	ro, err := db.BeginTx(bg, &sql.TxOptions{ReadOnly: true})
	require.NoError(t, err)
	_, err = ro.Exec("INSERT INTO tasks VALUES (1, 1, 1, 'x')")
	require.ErrorIs(t, err, fdbqueue.ErrReadOnly)
	require.Equal(t, int64(1), count(t, ro, "tasks"))
	require.NoError(t, ro.Rollback())

	// Two transactions pop the same task: the second commit conflicts,
	// IsRetryable says so, and nothing of it is written.
	t1, err := db.BeginTx(bg, nil)
	require.NoError(t, err)
	t2, err := db.BeginTx(bg, nil)
	require.NoError(t, err)
	for _, tx := range []*sql.Tx{t1, t2} {
		require.NoError(t, tx.QueryRow("SELECT payload FROM tasks WHERE cpu <= 1 LIMIT 1 FOR POP").Scan(&payload))
		require.Equal(t, "a", payload)
	}
	require.NoError(t, t1.Commit())
	err = t2.Commit()
	require.Error(t, err)
	require.True(t, fdbqueue.IsRetryable(err), "got %v", err)

	// ExecuteTx runs the function again after a conflict.
	_, err = db.Exec("INSERT INTO tasks VALUES (1, 1, 1, 'c'), (1, 1, 1, 'd')")
	require.NoError(t, err)
	attempts := 0
	var got string
	err = fdbqueue.ExecuteTx(bg, db, nil, func(tx *sql.Tx) error {
		attempts++
		if err := tx.QueryRow("SELECT payload FROM tasks WHERE cpu <= 1 LIMIT 1 FOR POP").Scan(&got); err != nil {
			return err
		}
		if attempts == 1 {
			// Someone else pops the same task first.
			_, err := db.Exec("DELETE FROM tasks ORDER BY priority LIMIT 1")
			return err
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 2, attempts)
	require.Equal(t, "d", got)
	require.Zero(t, count(t, db, "tasks"))
}

func TestBeginCommitStatements(t *testing.T) {
	t.Parallel()
	db := open(t)
	_, err := db.Exec("CREATE TABLE q (v TEXT)")
	require.NoError(t, err)
	conn, err := db.Conn(bg)
	require.NoError(t, err)
	defer conn.Close()
	for _, s := range []string{"BEGIN", "INSERT INTO q VALUES ('a')", "INSERT INTO q VALUES ('b')"} {
		_, err := conn.ExecContext(bg, s)
		require.NoError(t, err, s)
	}
	require.Zero(t, count(t, db, "q"))
	require.Equal(t, int64(2), count(t, conn, "q"))
	_, err = conn.ExecContext(bg, "COMMIT")
	require.NoError(t, err)
	require.Equal(t, int64(2), count(t, db, "q"))

	// A BEGIN left open on a connection returned to the pool is rolled
	// back before the connection's next user runs anything.
	require.NoError(t, conn.Close())
	db.SetMaxOpenConns(1)
	conn, err = db.Conn(bg)
	require.NoError(t, err)
	for _, s := range []string{"BEGIN", "INSERT INTO q VALUES ('lost')"} {
		_, err := conn.ExecContext(bg, s)
		require.NoError(t, err, s)
	}
	require.NoError(t, conn.Close())
	require.Equal(t, int64(2), count(t, db, "q"), "the next user is not inside the stale transaction")
	_, err = db.Exec("COMMIT")
	require.ErrorIs(t, err, fdbqueue.ErrTxState, "and cannot commit it")
	require.Equal(t, int64(2), count(t, db, "q"))
}

func TestContextCancellation(t *testing.T) {
	t.Parallel()
	db := open(t)
	_, err := db.Exec("CREATE TABLE q (v TEXT)")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(bg)
	cancel()
	_, err = db.ExecContext(ctx, "INSERT INTO q VALUES ('x')")
	require.ErrorIs(t, err, context.Canceled)
	require.Zero(t, count(t, db, "q"))

	ctx, cancel = context.WithTimeout(bg, time.Millisecond)
	defer cancel()
	<-ctx.Done()
	_, err = db.QueryContext(ctx, "SELECT v FROM q LIMIT 1 FOR POP")
	require.Error(t, err)
}

// TestConcurrentExactlyOnce: 8 goroutines push and 8 pop through
// database/sql; every task is popped exactly once.
func TestConcurrentExactlyOnce(t *testing.T) {
	t.Parallel()
	db := open(t)
	_, err := db.Exec(createTasks)
	require.NoError(t, err)
	const pushers, poppers, each = 8, 8, 100
	var popped sync.Map
	var remaining atomic.Int64
	remaining.Store(pushers * each)
	var wg sync.WaitGroup
	errs := make(chan error, pushers+poppers)
	for p := 0; p < pushers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if _, err := db.Exec("INSERT INTO tasks VALUES (?, ?, ?, ?)", i%5, 1+i%4, 512*(1+i%8), fmt.Sprint(p, "-", i)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for c := 0; c < poppers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for remaining.Load() > 0 {
				var payload string
				err := db.QueryRow("SELECT payload FROM tasks WHERE cpu <= ? AND mem <= ? ORDER BY priority DESC LIMIT 1 FOR POP", 4, 4096).Scan(&payload)
				if errors.Is(err, sql.ErrNoRows) {
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				if _, dup := popped.LoadOrStore(payload, true); dup {
					errs <- fmt.Errorf("%s popped twice", payload)
					return
				}
				remaining.Add(-1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Zero(t, count(t, db, "tasks"))
}

type task struct {
	ID       int64  `db:"id"`
	Priority int64  `db:"priority"`
	CPU      int64  `db:"cpu"`
	Mem      int64  `db:"mem"`
	Payload  string `db:"payload"`
}

func TestSqlx(t *testing.T) {
	t.Parallel()
	db := sqlx.MustOpen("fdbqueue", "memory:")
	defer db.Close()
	db.MustExec(createTasks)
	batch := []task{{Priority: 1, CPU: 1, Mem: 512, Payload: "a"}, {Priority: 3, CPU: 2, Mem: 1024, Payload: "b"}, {Priority: 2, CPU: 8, Mem: 1024, Payload: "c"}}
	res, err := db.NamedExec("INSERT INTO tasks (priority, cpu, mem, payload) VALUES (:priority, :cpu, :mem, :payload)", batch)
	require.NoError(t, err)
	n, err := res.RowsAffected()
	require.NoError(t, err)
	require.Equal(t, int64(3), n)

	var all []task
	require.NoError(t, db.Select(&all, "SELECT id, priority, cpu, mem, payload FROM tasks ORDER BY priority DESC"))
	require.Len(t, all, 3)
	require.Equal(t, []string{"b", "c", "a"}, []string{all[0].Payload, all[1].Payload, all[2].Payload})

	var got task
	pop := "SELECT id, priority, cpu, mem, payload FROM tasks WHERE cpu <= ? AND mem <= ? ORDER BY priority DESC LIMIT 1 FOR POP"
	require.NoError(t, db.Get(&got, pop, 2, 2048))
	require.Equal(t, "b", got.Payload)
	require.NoError(t, db.Get(&got, pop, 2, 2048))
	require.Equal(t, "a", got.Payload)
	require.ErrorIs(t, db.Get(&got, pop, 2, 2048), sql.ErrNoRows, "an empty pop is sql.ErrNoRows")
}

func TestColumnTypes(t *testing.T) {
	t.Parallel()
	db := open(t)
	_, err := db.Exec("CREATE TABLE t (priority INT NOT NULL, f DOUBLE, s VARCHAR(12), b BLOB, ok BOOLEAN NOT NULL, ts TIMESTAMP)")
	require.NoError(t, err)
	now := time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC)
	_, err = db.Exec("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?)", 1, 2.5, "s", []byte{1}, true, now)
	require.NoError(t, err)
	rows, err := db.Query("SELECT id, priority, f, s, b, ok, ts FROM t")
	require.NoError(t, err)
	defer rows.Close()
	cts, err := rows.ColumnTypes()
	require.NoError(t, err)
	var names []string
	for _, ct := range cts {
		names = append(names, ct.DatabaseTypeName())
	}
	require.Equal(t, []string{"INT", "INT", "DOUBLE", "TEXT", "BLOB", "BOOLEAN", "TIMESTAMP"}, names)
	var nullable []bool
	for _, ct := range cts {
		n, known := ct.Nullable()
		require.True(t, known)
		nullable = append(nullable, n)
	}
	require.Equal(t, []bool{false, false, true, true, true, false, true}, nullable)
	l, known := cts[3].Length()
	require.True(t, known)
	require.Equal(t, int64(12), l)
	_, known = cts[2].Length()
	require.False(t, known)
	require.True(t, rows.Next())
	var id, prio int64
	var f float64
	var s string
	var b []byte
	var ok bool
	var ts time.Time
	require.NoError(t, rows.Scan(&id, &prio, &f, &s, &b, &ok, &ts))
	require.Equal(t, now, ts)
	require.True(t, ok)
	require.Equal(t, []byte{1}, b)
}

// TestDropConflictsWithWriters: a transaction that wrote into a table that
// another client then dropped does not commit its rows into nowhere.
func TestDropConflictsWithWriters(t *testing.T) {
	t.Parallel()
	db := open(t)
	_, err := db.Exec("CREATE TABLE q (v TEXT)")
	require.NoError(t, err)
	tx, err := db.BeginTx(bg, nil)
	require.NoError(t, err)
	_, err = tx.Exec("INSERT INTO q VALUES ('orphan?')")
	require.NoError(t, err)
	_, err = db.Exec("DROP TABLE q")
	require.NoError(t, err)
	err = tx.Commit()
	require.True(t, fdbqueue.IsRetryable(err), "got %v", err)
	_, err = db.Exec("CREATE TABLE q (v TEXT)")
	require.NoError(t, err)
	require.Zero(t, count(t, db, "q"), "a re-created table starts empty")
}

// TestStatementAtomicInTransaction: a statement that fails inside an explicit
// transaction writes none of its rows, and the transaction goes on.
func TestStatementAtomicInTransaction(t *testing.T) {
	t.Parallel()
	db := open(t)
	_, err := db.Exec("CREATE TABLE q (v TEXT NOT NULL)")
	require.NoError(t, err)
	tx, err := db.Begin()
	require.NoError(t, err)
	_, err = tx.Exec("INSERT INTO q VALUES ('first'), (NULL)")
	require.ErrorContains(t, err, "cannot be NULL")
	_, err = tx.Exec("INSERT INTO q VALUES ('second')")
	require.NoError(t, err)
	require.NoError(t, tx.Commit())
	var vs []string
	rows, err := db.Query("SELECT v FROM q")
	require.NoError(t, err)
	for rows.Next() {
		var v string
		require.NoError(t, rows.Scan(&v))
		vs = append(vs, v)
	}
	require.Equal(t, []string{"second"}, vs, "the failed statement left nothing behind")
}

func TestMaybeCommitted(t *testing.T) {
	t.Parallel()
	// Every read-write commit fails with 1021, applied or not.
	db, err := sql.Open("fdbqueue", "memory:?fault_unknown=1&fault_seed=7")
	require.NoError(t, err)
	defer db.Close()
	// Autocommit statements are exactly-once through 1021.
	_, err = db.Exec("CREATE TABLE q (v INT)")
	require.NoError(t, err)
	_, err = db.Exec("INSERT INTO q VALUES (1)")
	require.NoError(t, err)
	require.Equal(t, int64(1), count(t, db, "q"))

	// An explicit transaction's COMMIT reports it.
	tx, err := db.Begin()
	require.NoError(t, err)
	_, err = tx.Exec("INSERT INTO q VALUES (2)")
	require.NoError(t, err)
	err = tx.Commit()
	require.True(t, fdbqueue.IsMaybeCommitted(err), "got %v", err)
	require.False(t, fdbqueue.IsRetryable(err), "running it again could apply it twice")
	require.False(t, fdbqueue.IsMaybeCommitted(errors.New("other")))
}

func TestTables(t *testing.T) {
	t.Parallel()
	db := open(t)
	conn, err := db.Conn(bg)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(bg, "CREATE TABLE tasks (priority INT NOT NULL, cpu INT NOT NULL, name VARCHAR(20), INDEX fit (cpu))")
	require.NoError(t, err)
	tables, err := fdbqueue.Tables(bg, conn)
	require.NoError(t, err)
	require.Equal(t, []fdbqueue.TableInfo{{
		Name: "tasks", Kind: "priority", IndexName: "fit", Index: []string{"cpu"},
		Columns: []fdbqueue.ColumnInfo{
			{Name: "priority", Type: "INT", NotNull: true},
			{Name: "cpu", Type: "INT", NotNull: true},
			{Name: "name", Type: "TEXT", Length: 20}, // VARCHAR(20)
		},
	}}, tables)

	tablesSeeTx(t, bg, conn)
}

// tablesSeeTx: Tables inside a transaction open on conn lists the tables
// as that transaction sees them: a table it created, gone once it rolls
// back.
func tablesSeeTx(t *testing.T, ctx context.Context, conn *sql.Conn) {
	t.Helper()
	before, err := fdbqueue.Tables(ctx, conn)
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, "BEGIN")
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, "CREATE TABLE in_tx (v TEXT)")
	require.NoError(t, err)
	in, err := fdbqueue.Tables(ctx, conn)
	require.NoError(t, err)
	require.Len(t, in, len(before)+1)
	i := slices.IndexFunc(in, func(ti fdbqueue.TableInfo) bool { return ti.Name == "in_tx" })
	require.GreaterOrEqual(t, i, 0, "%v", in)
	require.Equal(t, "fifo", in[i].Kind)
	_, err = conn.ExecContext(ctx, "ROLLBACK")
	require.NoError(t, err)
	after, err := fdbqueue.Tables(ctx, conn)
	require.NoError(t, err)
	require.Equal(t, before, after)
}

// The priority and resource columns are NOT NULL whatever the CREATE
// said (the queue orders and fits by them): the catalog says so, as
// INSERT enforces it.
func TestQueueColumnsAreNotNull(t *testing.T) {
	t.Parallel()
	db := open(t)
	_, err := db.Exec("CREATE TABLE t6 (priority INT NULL, cpu INT, mem INT, x TEXT, INDEX fit (cpu, mem))")
	require.NoError(t, err)
	conn, err := db.Conn(context.Background())
	require.NoError(t, err)
	defer conn.Close()
	tables, err := fdbqueue.Tables(context.Background(), conn)
	require.NoError(t, err)
	require.Len(t, tables, 1)
	notNull := map[string]bool{}
	for _, c := range tables[0].Columns {
		notNull[c.Name] = c.NotNull
	}
	require.Equal(t, map[string]bool{"priority": true, "cpu": true, "mem": true, "x": false}, notNull)
	rows, err := db.Query("SELECT priority, x FROM t6")
	require.NoError(t, err)
	defer rows.Close()
	types, err := rows.ColumnTypes()
	require.NoError(t, err)
	nullable, ok := types[0].Nullable()
	require.True(t, ok)
	require.False(t, nullable)
	_, err = db.Exec("INSERT INTO t6 (priority, cpu, mem) VALUES (NULL, 1, 1)")
	require.ErrorIs(t, err, fdbqueue.ErrValue)
}

// SELECT 1 is the health check of connection pools and ORMs: it answers
// one row, in autocommit and in every kind of transaction.
func TestSelectOne(t *testing.T) {
	t.Parallel()
	db := open(t)
	var n int64
	require.NoError(t, db.QueryRow("SELECT 1").Scan(&n))
	require.Equal(t, int64(1), n)
	require.NoError(t, db.QueryRow("select 42 from DUAL").Scan(&n))
	require.Equal(t, int64(42), n)
	for _, ro := range []bool{false, true} {
		tx, err := db.BeginTx(context.Background(), &sql.TxOptions{ReadOnly: ro})
		require.NoError(t, err)
		require.NoError(t, tx.QueryRow("SELECT 1").Scan(&n))
		require.NoError(t, tx.Commit())
	}
	rows, err := db.Query("SELECT 1")
	require.NoError(t, err)
	cols, err := rows.Columns()
	require.NoError(t, err)
	require.Equal(t, []string{"1"}, cols)
	require.NoError(t, rows.Close())
	_, err = db.Exec("SELECT 1 FROM nope")
	require.Error(t, err, "a literal from a table is not the health check")
}

// TestIntegerArgs: every Go integer type is an INT argument with its value
// (the driver converts int, int32 and uint32 itself, the others through
// database/sql's default converter), and a BLOB argument is stored as it
// was when the statement ran, whatever its caller does with it afterwards.
func TestIntegerArgs(t *testing.T) {
	t.Parallel()
	db := open(t)
	_, err := db.Exec(`CREATE TABLE ints (priority INT NOT NULL, v INT NOT NULL, b BLOB)`)
	require.NoError(t, err)
	args := []any{int(-1 << 40), int8(-8), int16(-16), int32(-1 << 31), int64(1 << 62), uint(7), uint8(8), uint16(16), uint32(1<<32 - 1), uint64(1 << 40)}
	want := []int64{-1 << 40, -8, -16, -1 << 31, 1 << 62, 7, 8, 16, 1<<32 - 1, 1 << 40}
	blob := []byte("blob\x00")
	for i, a := range args {
		_, err := db.Exec(`INSERT INTO ints (priority, v, b) VALUES (?, ?, ?)`, i, a, blob)
		require.NoError(t, err, "%T", a)
		blob[0]++ // the row keeps what the statement was given
	}
	rows, err := db.QueryContext(bg, `SELECT v FROM ints ORDER BY priority ASC`)
	require.Equal(t, want, column[int64](t, rows, err))
	rows, err = db.QueryContext(bg, `SELECT b FROM ints ORDER BY priority ASC`)
	blobs := column[[]byte](t, rows, err)
	require.Len(t, blobs, len(args))
	for i, b := range blobs {
		require.Equal(t, append([]byte{'b' + byte(i)}, "lob\x00"...), b)
	}
}
