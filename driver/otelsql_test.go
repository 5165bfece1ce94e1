package driver_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/XSAM/otelsql"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	fdbqueue "github.com/fdbqueue/fdbqueue/driver"
)

// traced is a database opened through otelsql, and what its tracer
// recorded.
type traced struct {
	db  *sql.DB
	rec *tracetest.SpanRecorder
	tp  *sdktrace.TracerProvider
}

// tracedOptions are otelsql's options for a test: an in-memory span
// recorder, and sqlcommenter on, so that every statement reaches the
// driver with a traceparent comment new on each call.
func tracedOptions(t *testing.T) ([]otelsql.Option, *tracetest.SpanRecorder, *sdktrace.TracerProvider) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return []otelsql.Option{
		otelsql.WithTracerProvider(tp),
		otelsql.WithSQLCommenter(true),
		otelsql.WithTextMapPropagator(propagation.TraceContext{}),
	}, rec, tp
}

// spanNames lists the names of the spans that ended, once each.
func (tr traced) spanNames() []string {
	var names []string
	for _, s := range tr.rec.Ended() {
		if !slices.Contains(names, s.Name()) {
			names = append(names, s.Name())
		}
	}
	slices.Sort(names)
	return names
}

// queries lists the statements the spans recorded.
func (tr traced) queries() string {
	var b strings.Builder
	for _, s := range tr.rec.Ended() {
		for _, a := range s.Attributes() {
			if a.Key == "db.query.text" || a.Key == "db.statement" {
				b.WriteString(a.Value.AsString() + "\n")
			}
		}
	}
	return b.String()
}

// TestOtelsql runs the dialect through otelsql, the OpenTelemetry wrapper
// of database/sql drivers, with sqlcommenter appending a traceparent to
// each statement: what the wrapper passes through works as it does
// unwrapped, and the wrapper records its spans.
func TestOtelsql(t *testing.T) {
	t.Parallel()
	opts, rec, tp := tracedOptions(t)
	db, err := otelsql.Open("fdbqueue", "memory:", opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	tr := traced{db: db, rec: rec, tp: tp}
	// Statements run inside a span, so that sqlcommenter has a trace
	// context to append.
	ctx, span := tp.Tracer("test").Start(hangGuard(t), "test")
	defer span.End()

	_, err = db.ExecContext(ctx, createTasks)
	require.NoError(t, err)
	res, err := db.ExecContext(ctx, "INSERT INTO tasks (priority, cpu, mem, payload) VALUES (?, ?, ?, ?), (?, ?, ?, ?)",
		1, 2, 64, "small", 5, uint64(8), 1024, "big")
	require.NoError(t, err)
	last, err := res.LastInsertId()
	require.NoError(t, err)
	require.Equal(t, int64(2), count(t, db, "tasks"))

	// The driver's argument checks reach the driver: uint64 converts,
	// what it refuses is refused with its error, sql.Named works.
	_, err = db.ExecContext(ctx, "INSERT INTO tasks (priority, cpu, mem) VALUES (?, ?, ?)", 0, uint64(math.MaxUint64), 1)
	require.ErrorIs(t, err, fdbqueue.ErrArgType)
	_, err = db.ExecContext(ctx, "INSERT INTO tasks (priority, cpu, mem) VALUES (?, ?, ?)", 0, struct{}{}, 1)
	require.ErrorIs(t, err, fdbqueue.ErrArgType)
	_, err = db.ExecContext(ctx, "SELECT id FROM missing")
	require.ErrorIs(t, err, fdbqueue.ErrNoTable)

	// FOR POP, through the fit index, with named arguments.
	var id int64
	var payload string
	err = db.QueryRowContext(ctx, "SELECT id, payload FROM tasks WHERE cpu <= :cpu AND mem <= :mem ORDER BY priority DESC LIMIT 1 FOR POP",
		sql.Named("cpu", 4), sql.Named("mem", 128)).Scan(&id, &payload)
	require.NoError(t, err)
	require.Equal(t, "small", payload)

	// FOR LEASE ... WAIT, with time.Duration arguments: the driver's
	// NamedValueChecker passes them on, the default conversion would not.
	var lease int64
	err = db.QueryRowContext(ctx, "SELECT id, _lease FROM tasks LIMIT 1 FOR LEASE ? WAIT ?", time.Minute, time.Second).Scan(&id, &lease)
	require.NoError(t, err)
	require.Equal(t, last, id)
	res, err = db.ExecContext(ctx, "DELETE FROM tasks WHERE id = ? AND _lease = ?", id, lease)
	require.NoError(t, err)
	require.Equal(t, int64(1), rowsAffected(t, res))
	// A wait on an empty table ends with no rows.
	err = db.QueryRowContext(ctx, "SELECT id FROM tasks LIMIT 1 FOR POP WAIT ?", 10*time.Millisecond).Scan(&id)
	require.ErrorIs(t, err, sql.ErrNoRows)

	// A sql.Tx: its statements commit together, or not at all.
	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, "INSERT INTO tasks (priority, cpu, mem) VALUES (1, 1, 1)")
	require.NoError(t, err)
	require.NoError(t, tx.Rollback())
	require.Equal(t, int64(0), count(t, db, "tasks"))
	require.NoError(t, fdbqueue.ExecuteTx(ctx, db, nil, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO tasks (priority, cpu, mem) VALUES (3, 1, 1)")
		return err
	}))
	require.Equal(t, int64(1), count(t, db, "tasks"))
	tx, err = db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, "INSERT INTO tasks (priority, cpu, mem) VALUES (1, 1, 1)")
	require.ErrorIs(t, err, fdbqueue.ErrReadOnly)
	require.NoError(t, tx.Rollback())

	// A prepared statement, run twice; its columns' types.
	st, err := db.PrepareContext(ctx, "SELECT id, priority, payload FROM tasks WHERE cpu <= ? LIMIT 1")
	require.NoError(t, err)
	for range 2 {
		rows, err := st.QueryContext(ctx, 8)
		require.NoError(t, err)
		types, err := rows.ColumnTypes()
		require.NoError(t, err)
		require.Equal(t, "TEXT", types[2].DatabaseTypeName())
		nullable, ok := types[2].Nullable()
		require.True(t, ok)
		require.True(t, nullable)
		require.True(t, rows.Next())
		require.NoError(t, rows.Close())
	}
	require.NoError(t, st.Close())

	// Tables, through otelsql's connection, and inside a transaction on
	// it as that transaction sees them.
	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	tables, err := fdbqueue.Tables(ctx, conn)
	require.NoError(t, err)
	require.Len(t, tables, 1)
	require.Equal(t, []string{"cpu", "mem"}, tables[0].Index)
	tablesSeeTx(t, ctx, conn)

	require.Subset(t, tr.spanNames(), []string{
		"sql.conn.exec", "sql.conn.query", "sql.conn.prepare", "sql.stmt.query",
		"sql.conn.begin_tx", "sql.tx.commit", "sql.tx.rollback", "sql.rows",
	})
	q := tr.queries()
	for _, want := range []string{"CREATE TABLE tasks", "FOR POP", "FOR LEASE ? WAIT ?", "DELETE FROM tasks WHERE id = ? AND _lease = ?"} {
		require.Contains(t, q, want)
	}
	inTrace := 0
	for _, s := range rec.Ended() {
		if s.Parent().SpanID() == span.SpanContext().SpanID() {
			inTrace++
		}
	}
	require.Greater(t, inTrace, 20, "the statements run with ctx are the test span's children")
}

// TestOtelsqlOpenings: otelsql's other ways in, OpenDB on fdbqueue's
// connector and WrapDriver; and Register, which cannot work, because it
// opens the driver with an empty DSN, which names no engine.
func TestOtelsqlOpenings(t *testing.T) {
	t.Parallel()
	opts, rec, _ := tracedOptions(t)
	cfg, err := fdbqueue.ParseDSN("memory:")
	require.NoError(t, err)
	c, err := fdbqueue.NewConnector(cfg)
	require.NoError(t, err)
	db := otelsql.OpenDB(c, opts...)
	defer db.Close()
	_, err = db.ExecContext(bg, "CREATE TABLE q (v TEXT)")
	require.NoError(t, err)
	conn, err := db.Conn(bg)
	require.NoError(t, err)
	tables, err := fdbqueue.Tables(bg, conn)
	require.NoError(t, err)
	require.Len(t, tables, 1)
	require.NoError(t, conn.Close())
	require.NotEmpty(t, rec.Ended())

	wrapped := otelsql.WrapDriver(&fdbqueue.Driver{}, opts...)
	dc, ok := wrapped.(driver.DriverContext)
	require.True(t, ok, "the wrapper keeps OpenConnector, so that one sql.DB shares one engine")
	wc, err := dc.OpenConnector("memory:")
	require.NoError(t, err)
	db2 := sql.OpenDB(wc)
	defer db2.Close()
	_, err = db2.ExecContext(bg, "CREATE TABLE q (v TEXT)")
	require.NoError(t, err)
	require.Equal(t, int64(0), count(t, db2, "q"))

	_, err = otelsql.Register("fdbqueue", opts...)
	require.ErrorIs(t, err, fdbqueue.ErrDSN)
}
