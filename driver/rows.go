package driver

import (
	"context"
	"database/sql/driver"
	"io"
	"reflect"
	"time"

	"github.com/fdbqueue/fdbqueue/exec"
	"github.com/fdbqueue/fdbqueue/parser"
)

// rows iterates a query's materialised rows. database/sql calls Next and
// Close one at a time (under its Rows.closemu and the connection's lock),
// Close from its own goroutine when the statement's context ends.
type rows struct {
	res *exec.Result
	// i is how many rows Next handed over.
	i int
	// ctx is the statement's context: Next hands no row over once it
	// ended, and Close puts back, with ctx's values, the rows of an
	// autocommit pop that were not handed over.
	ctx    context.Context
	exec   *exec.Executor
	closed bool
}

// rows returns the rows of a query's result.
func (c *conn) rows(ctx context.Context, res *exec.Result) *rows {
	return &rows{res: res, ctx: ctx, exec: c.exec}
}

var (
	_ driver.Rows                           = (*rows)(nil)
	_ driver.RowsColumnTypeDatabaseTypeName = (*rows)(nil)
	_ driver.RowsColumnTypeScanType         = (*rows)(nil)
	_ driver.RowsColumnTypeNullable         = (*rows)(nil)
	_ driver.RowsColumnTypeLength           = (*rows)(nil)
)

// ColumnTypeNullable reports whether the column may hold NULL: id, priority,
// INDEX columns and NOT NULL columns never do.
func (r *rows) ColumnTypeNullable(i int) (nullable, ok bool) {
	if i >= len(r.res.Nullable) {
		return false, false
	}
	return r.res.Nullable[i], true
}

// ColumnTypeLength reports the declared length of VARCHAR(n) and
// VARBINARY(n) columns.
func (r *rows) ColumnTypeLength(i int) (int64, bool) {
	if i >= len(r.res.Lengths) || r.res.Lengths[i] == 0 {
		return 0, false
	}
	return int64(r.res.Lengths[i]), true
}

func (r *rows) Columns() []string { return r.res.Columns }

// Close puts back the rows of an autocommit pop that Next did not hand
// over (exec.PutBack): the program closed the rows early, or database/sql
// closed them because the statement's context ended. If that fails, the
// error (driver.ErrPutBack, naming the rows) is what database/sql's
// Rows.Close, and Row.Scan, return to the program; when database/sql
// closed the rows for the context, it drops the error, as it drops every
// error of Close it makes itself.
func (r *rows) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	return r.exec.PutBack(r.ctx, r.res, r.i)
}

// Next hands the next row over, unless the statement's context ended (or
// its deadline passed: ctx.Err() says so only once the context's timer
// ran, which under load is late): a row not handed over is put back by
// Close.
//
// A row handed over counts as delivered, and is never put back. The one
// case where it then does not reach the program: the context ends after
// this check and before the program's Rows.Scan, which then fails with the
// context's error, as database/sql closed the rows in between. The driver
// cannot tell that case from a Scan that succeeded (database/sql tells a
// driver nothing of Scan), and putting the last row handed over back in
// both would give a second copy of every row the program was working on
// when its context ended: the common case, where this one is the few
// instructions between here and Scan. So a pop never delivers a row twice,
// and may lose that one row, which the program sees: Scan fails right
// after Next returned true. In TestPopUnderDeadlines (contexts ending at
// random after 0 to 400 µs, about 3,000 of each run's pops cut short)
// checking ctx.Err() alone lost 2 to 9 rows a run this way; with the
// deadline checked too, 5 rows in 24 runs. A program that must not lose
// even that row pops in a sql.Tx (database/sql rolls it back when the
// context ends), or reads with a context that does not end before
// Rows.Close.
func (r *rows) Next(dest []driver.Value) error {
	if r.i >= len(r.res.Rows) {
		return io.EOF
	}
	if err := r.ctx.Err(); err != nil {
		return err
	}
	if d, ok := r.ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	for j, v := range r.res.Rows[r.i] {
		dest[j] = v
	}
	r.i++
	return nil
}

func (r *rows) ColumnTypeDatabaseTypeName(i int) string { return r.res.Types[i].String() }

var scanTypes = map[parser.Type]reflect.Type{
	parser.TypeInt:       reflect.TypeFor[int64](),
	parser.TypeFloat:     reflect.TypeFor[float64](),
	parser.TypeText:      reflect.TypeFor[string](),
	parser.TypeBlob:      reflect.TypeFor[[]byte](),
	parser.TypeBool:      reflect.TypeFor[bool](),
	parser.TypeTimestamp: reflect.TypeFor[time.Time](),
}

func (r *rows) ColumnTypeScanType(i int) reflect.Type {
	if t, ok := scanTypes[r.res.Types[i]]; ok {
		return t
	}
	return reflect.TypeFor[any]()
}
