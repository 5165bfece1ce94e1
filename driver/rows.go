package driver

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"reflect"
	"sync"
	"time"

	"github.com/fdbqueue/fdbqueue/exec"
	"github.com/fdbqueue/fdbqueue/parser"
)

// rows iterates a query's materialised rows. database/sql calls Next and
// Close one at a time (under its Rows.closemu and the connection's lock),
// Close from its own goroutine when the statement's context ends; the
// connector's Close may close them too (openPops).
type rows struct {
	res *exec.Result
	// ctx is the statement's context: Next hands no row over once it
	// ended, and Close puts back, with ctx's values, the rows of an
	// autocommit pop that were not handed over.
	ctx  context.Context
	exec *exec.Executor
	// pops holds the rows of an autocommit pop until they are closed
	// (nil for other rows).
	pops *openPops

	mu sync.Mutex // guards res until the pop is done (openPops.begin), i and closed
	// i is how many rows Next handed over.
	i      int
	closed bool
}

// query runs a query and returns its rows. An autocommit pop's rows are
// in the connector's openPops from before the pop runs until they are
// closed, so that closing the database puts back what they did not hand
// over, also when the pop commits while the database closes.
func (c *conn) query(ctx context.Context, p *parser.Parsed, args []driver.NamedValue) (driver.Rows, error) {
	r := &rows{ctx: ctx, exec: c.exec}
	sel, pop := p.Stmt.(*parser.Select)
	if !pop || !sel.ForPop || c.tx != nil || c.pops == nil {
		res, err := c.run(ctx, p, args)
		if err != nil {
			return nil, err
		}
		r.res = res
		return r, nil
	}
	runCtx, done, err := c.pops.begin(ctx, r, sel.Wait != nil)
	if err != nil {
		return nil, err
	}
	res, err := c.run(runCtx, p, args)
	if err = done(res, err); err != nil {
		return nil, err
	}
	return r, nil
}

// openPops are the rows of a connector's autocommit pops, from before each
// pop runs until its rows are closed. database/sql's DB.Close closes the
// connector, and so the engine, without waiting for statements under way
// or rows still open (it closes their connections once they are
// released): a pop that commits then, and the put-backs of rows closed
// then, by the program or by database/sql as their context ends (a
// program that shuts down cancels its workers' context and closes the
// database at once), would find the engine closed, and the rows would be
// lost. close waits for the pops under way (ending their waits), and puts
// back what the rows did not hand over, before the engine closes.
type openPops struct {
	mu     sync.Mutex // guards open, closed and closing
	open   map[*rows]struct{}
	closed bool // close ran: begin refuses new pops
	// closing ends when close runs: the pops that wait (FOR POP WAIT)
	// run on a context that ends with it.
	closing context.Context
	cancel  context.CancelFunc
}

// errDBClosed is what Next returns for rows that the database's Close
// closed, a wait it ended, and a pop that starts once it ran.
var errDBClosed = errors.New("fdbqueue: the database was closed (DB.Close put back the rows of pops that the program had not read, or returned driver.ErrPutBack)")

// begin holds r, the rows of a pop about to run, and returns the context
// the pop runs on, and done, which the pop calls with its outcome, and
// which returns the pop's error (errDBClosed for a wait that close ended).
// r is locked until done, so that close waits for the pop.
func (o *openPops) begin(ctx context.Context, r *rows, waits bool) (context.Context, func(*exec.Result, error) error, error) {
	r.mu.Lock() // before o.mu, as in Close
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		r.mu.Unlock()
		return nil, nil, errDBClosed
	}
	if o.open == nil {
		o.open = map[*rows]struct{}{}
		o.closing, o.cancel = context.WithCancel(context.Background())
	}
	o.open[r] = struct{}{}
	closing := o.closing
	r.pops = o
	o.mu.Unlock()
	runCtx, release := ctx, func() {}
	if waits {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithCancel(ctx)
		stop := context.AfterFunc(closing, cancel)
		release = func() { stop(); cancel() }
	}
	return runCtx, func(res *exec.Result, err error) error {
		release()
		if err != nil {
			res = nil // took nothing
		}
		r.res = res
		if res == nil || res.Popped() == 0 {
			r.pops = nil // nothing to put back
			o.remove(r)
		}
		r.mu.Unlock()
		if err != nil && ctx.Err() == nil && closing.Err() != nil {
			err = errors.Join(errDBClosed, err)
		}
		return err
	}, nil
}

func (o *openPops) remove(r *rows) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.open, r)
}

// close ends the waits of the pops under way, waits for the pops, and
// closes their rows, which puts back what they did not hand over; it
// returns the errors of those put-backs.
func (o *openPops) close() error {
	o.mu.Lock()
	o.closed = true
	if o.cancel != nil {
		o.cancel()
	}
	open := make([]*rows, 0, len(o.open))
	for r := range o.open {
		open = append(open, r)
	}
	o.mu.Unlock()
	var errs []error
	for _, r := range open {
		errs = append(errs, r.Close())
	}
	return errors.Join(errs...)
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
// over (exec.PutBack): the program closed the rows early, database/sql
// closed them because the statement's context ended, or the database was
// closed (openPops). If that fails, the error (driver.ErrPutBack, naming
// the rows) is what database/sql's Rows.Close, and Row.Scan, return to the
// program, or DB.Close; when database/sql closed the rows for the
// context, it drops the error, as it drops every error of a Close it
// makes itself.
func (r *rows) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	err := r.exec.PutBack(r.ctx, r.res, r.i)
	if r.pops != nil {
		r.pops.remove(r)
	}
	return err
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
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errDBClosed // database/sql calls Next only before Close
	}
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
