package driver

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/fdbqueue/fdbqueue/exec"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/parser"
)

// conn is one connection. database/sql uses a connection from one goroutine
// at a time.
type conn struct {
	exec   *exec.Executor
	pops   *openPops      // the connector's
	obs    *observers     // the connector's (Observe)
	tx     kv.Transaction // the open transaction, or nil
	txRO   bool
	viaSQL bool // opened by a BEGIN statement rather than BeginTx
	closed bool
	// args is the array of a statement's positional arguments (toArgs),
	// reused by the next statement on the connection: exec reads them
	// only while the statement runs. Made afresh, it was 65 of the 846
	// bytes a row of BenchmarkSQL/push100 allocated.
	args []any
}

var (
	_ driver.Conn               = (*conn)(nil)
	_ driver.ConnBeginTx        = (*conn)(nil)
	_ driver.ConnPrepareContext = (*conn)(nil)
	_ driver.ExecerContext      = (*conn)(nil)
	_ driver.QueryerContext     = (*conn)(nil)
	_ driver.NamedValueChecker  = (*conn)(nil)
	_ driver.Pinger             = (*conn)(nil)
	_ driver.SessionResetter    = (*conn)(nil)
	_ driver.Validator          = (*conn)(nil)
)

func (c *conn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

// PrepareContext parses the query once; the statement runs it many times.
func (c *conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if c.closed {
		return nil, driver.ErrBadConn
	}
	p, err := parser.Parse(query)
	if err != nil {
		return nil, err
	}
	return &stmt{c: c, p: p}, nil
}

func (c *conn) Close() error {
	if c.tx != nil {
		c.tx.Cancel()
		c.tx = nil
	}
	c.closed = true
	return nil
}

func (c *conn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

// BeginTx opens an explicit transaction: every statement until Commit runs
// in one kv transaction. Every isolation level is served by serializable
// isolation, which is at least as strong as any of them.
func (c *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if c.closed {
		return nil, driver.ErrBadConn
	}
	if c.tx != nil {
		return nil, fmt.Errorf("%w: a transaction is already open on this connection", ErrTxState)
	}
	tr, err := c.exec.DB().CreateTransaction(ctx)
	if err != nil {
		return nil, err
	}
	c.tx, c.txRO, c.viaSQL = tr, opts.ReadOnly, false
	return &tx{c: c}, nil
}

func (c *conn) commit() error {
	if c.tx == nil {
		return fmt.Errorf("%w: no transaction is open", ErrTxState)
	}
	tr := c.tx
	c.tx = nil
	defer tr.Cancel()
	if err := tr.Commit(); err != nil {
		return commitError(err)
	}
	return nil
}

func (c *conn) rollback() error {
	if c.tx == nil {
		return fmt.Errorf("%w: no transaction is open", ErrTxState)
	}
	c.tx.Cancel()
	c.tx = nil
	return nil
}

// commitError explains a failed commit.
func commitError(err error) error {
	switch {
	case kv.IsRetryableNotCommitted(err):
		return fmt.Errorf("fdbqueue: transaction not committed, nothing was written; run it again (driver.IsRetryable, driver.ExecuteTx): %w", err)
	case kv.IsMaybeCommitted(err):
		return fmt.Errorf("fdbqueue: the commit's outcome is unknown; it may have been applied: %w", err)
	case errors.Is(err, kv.ErrTransactionTooLarge):
		return fmt.Errorf("fdbqueue: the transaction was not committed, nothing was written: it writes more than FoundationDB's limit; commit the work in smaller transactions (fewer rows per transaction, DELETE ... LIMIT n in a loop): %w", err)
	}
	return err
}

func (c *conn) Ping(ctx context.Context) error {
	if c.closed {
		return driver.ErrBadConn
	}
	return ctx.Err()
}

// ResetSession rolls back a transaction that a BEGIN statement left open
// when the connection went back to the pool.
func (c *conn) ResetSession(ctx context.Context) error {
	if c.closed {
		return driver.ErrBadConn
	}
	if c.tx != nil && c.viaSQL {
		c.tx.Cancel()
		c.tx = nil
	}
	return nil
}

func (c *conn) IsValid() bool { return !c.closed }

// CheckNamedValue converts arguments to int64, float64, bool, []byte,
// string, time.Time or nil, as other drivers do, and refuses the rest. A
// time.Duration is passed on as it is, for FOR POP WAIT ? (which reads a
// bare number as seconds); anywhere else exec makes it int64 nanoseconds,
// what database/sql's default conversion makes of it.
func (c *conn) CheckNamedValue(nv *driver.NamedValue) error {
	switch v := nv.Value.(type) {
	case nil, int64, float64, bool, []byte, string, time.Time, time.Duration:
		return nil
	case uint64:
		if v > math.MaxInt64 {
			return fmt.Errorf("%w: uint64 %d is larger than the largest integer (int64)", ErrArgType, v)
		}
		nv.Value = int64(v)
		return nil
	// Go's other integers, as the default converter makes them, without
	// its reflection: 4 arguments a row of a 100-row INSERT.
	case int:
		nv.Value = int64(v)
		return nil
	case int32:
		nv.Value = int64(v)
		return nil
	case uint32:
		nv.Value = int64(v)
		return nil
	}
	conv, err := driver.DefaultParameterConverter.ConvertValue(nv.Value)
	if err != nil {
		return fmt.Errorf("%w: %T (accepted: integers, floats, bool, []byte, string, time.Time, nil, and driver.Valuer): %v", ErrArgType, nv.Value, err)
	}
	nv.Value = conv
	return nil
}

// toArgs returns a statement's arguments, its positional ones in c.args
// (endArgs lets go of them).
func (c *conn) toArgs(named []driver.NamedValue) exec.Args {
	var a exec.Args
	if len(named) > 0 && named[0].Name == "" {
		if cap(c.args) < len(named) {
			c.args = make([]any, 0, len(named))
		}
		a.Positional = c.args[:0]
	}
	for _, nv := range named {
		if nv.Name != "" {
			if a.Named == nil {
				a.Named = map[string]any{}
			}
			a.Named[nv.Name] = nv.Value
		} else {
			a.Positional = append(a.Positional, nv.Value)
		}
	}
	return a
}

// endArgs clears the statement's arguments in c.args, which keeps no
// value of the program's reachable; a long list's array is let go.
func (c *conn) endArgs(a exec.Args) {
	clear(a.Positional)
	if cap(c.args) > maxPooledArgs {
		c.args = nil
	}
}

// maxPooledArgs is the most arguments c.args keeps an array for.
const maxPooledArgs = 4096

// run runs a parsed statement on the connection.
func (c *conn) run(ctx context.Context, p *parser.Parsed, args []driver.NamedValue) (*exec.Result, error) {
	if c.closed {
		return nil, driver.ErrBadConn
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	switch p.Stmt.(type) {
	case *parser.Begin:
		if c.tx != nil {
			return nil, fmt.Errorf("%w: BEGIN inside a transaction", ErrTxState)
		}
		tr, err := c.exec.DB().CreateTransaction(context.Background())
		if err != nil {
			return nil, err
		}
		c.tx, c.txRO, c.viaSQL = tr, false, true
		return &exec.Result{}, nil
	case *parser.Commit:
		if c.tx != nil && !c.viaSQL {
			return nil, fmt.Errorf("%w: COMMIT inside a transaction opened by BeginTx; call Tx.Commit", ErrTxState)
		}
		return &exec.Result{}, c.commit()
	case *parser.Rollback:
		if c.tx != nil && !c.viaSQL {
			return nil, fmt.Errorf("%w: ROLLBACK inside a transaction opened by BeginTx; call Tx.Rollback", ErrTxState)
		}
		return &exec.Result{}, c.rollback()
	}
	a := c.toArgs(args)
	defer c.endArgs(a)
	if c.tx == nil {
		return c.observed(p, func() (*exec.Result, error) { return c.exec.Auto(ctx, p, a) })
	}
	if c.txRO && !exec.IsReadOnly(p.Stmt) {
		return nil, fmt.Errorf("%w: this statement writes; the transaction was opened with ReadOnly", ErrReadOnly)
	}
	return c.observed(p, func() (*exec.Result, error) { return c.exec.Exec(c.tx, p, a) })
}

func (c *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	p, err := parser.Parse(query)
	if err != nil {
		return nil, err
	}
	res, err := c.run(ctx, p, args)
	if err != nil {
		return nil, err
	}
	return result{res}, nil
}

func (c *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	p, err := parser.Parse(query)
	if err != nil {
		return nil, err
	}
	return c.query(ctx, p, args)
}

// stmt is a prepared statement: parsed once.
type stmt struct {
	c *conn
	p *parser.Parsed
}

var (
	_ driver.Stmt             = (*stmt)(nil)
	_ driver.StmtExecContext  = (*stmt)(nil)
	_ driver.StmtQueryContext = (*stmt)(nil)
)

func (s *stmt) Close() error  { return nil }
func (s *stmt) NumInput() int { return s.p.NumInput }

func (s *stmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), valuesToNamed(args))
}

func (s *stmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), valuesToNamed(args))
}

func valuesToNamed(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, v := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out
}

func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	res, err := s.c.run(ctx, s.p, args)
	if err != nil {
		return nil, err
	}
	return result{res}, nil
}

func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return s.c.query(ctx, s.p, args)
}

// tx is an explicit transaction.
type tx struct{ c *conn }

var _ driver.Tx = (*tx)(nil)

func (t *tx) Commit() error   { return t.c.commit() }
func (t *tx) Rollback() error { return t.c.rollback() }

// result is a statement's driver.Result.
type result struct{ r *exec.Result }

func (r result) LastInsertId() (int64, error) { return r.r.LastInsertID, nil }
func (r result) RowsAffected() (int64, error) { return r.r.RowsAffected, nil }
