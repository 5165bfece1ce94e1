package worker

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"strconv"
	"sync"
)

// Job.Scan converts as sql.Rows.Scan does by being sql.Rows.Scan: the
// values a lease read (the driver's own, scanned into *any) are passed
// to a query of a driver of this file's, which returns them as its one
// row, and database/sql converts them into the caller's destinations
// (integers to strings, NULL into a *T or sql.Null*, a sql.Scanner, ...).
// Nothing is registered: the *sql.DB is opened on a connector.

var (
	valuesOnce sync.Once
	valuesDB   *sql.DB
)

func scanValues(values, dest []any) error {
	if len(dest) != len(values) {
		return errors.New("worker: Scan: " + itoa(len(dest)) + " destinations for " + itoa(len(values)) + " columns (Config.Columns)")
	}
	valuesOnce.Do(func() { valuesDB = sql.OpenDB(valuesConnector{}) })
	return valuesDB.QueryRowContext(context.Background(), "", values...).Scan(dest...)
}

func itoa(n int) string { return strconv.Itoa(n) }

type valuesConnector struct{}

func (valuesConnector) Connect(context.Context) (driver.Conn, error) { return valuesConn{}, nil }
func (valuesConnector) Driver() driver.Driver                        { return valuesDriver{} }

type valuesDriver struct{}

func (valuesDriver) Open(string) (driver.Conn, error) { return valuesConn{}, nil }

type valuesConn struct{}

func (valuesConn) Prepare(string) (driver.Stmt, error) { return nil, driver.ErrSkip }
func (valuesConn) Close() error                        { return nil }
func (valuesConn) Begin() (driver.Tx, error)           { return nil, errors.New("worker: no transactions") }

// CheckNamedValue takes every value as it is: they are the fdbqueue
// driver's values already.
func (valuesConn) CheckNamedValue(*driver.NamedValue) error { return nil }

func (valuesConn) QueryContext(_ context.Context, _ string, args []driver.NamedValue) (driver.Rows, error) {
	row := make([]driver.Value, len(args))
	for i, a := range args {
		row[i] = a.Value
	}
	return &valuesRows{row: row}, nil
}

type valuesRows struct {
	row  []driver.Value
	done bool
}

func (r *valuesRows) Columns() []string {
	cols := make([]string, len(r.row))
	for i := range cols {
		cols[i] = "c" + itoa(i)
	}
	return cols
}
func (r *valuesRows) Close() error { return nil }
func (r *valuesRows) Next(dest []driver.Value) error {
	if r.done {
		return io.EOF
	}
	r.done = true
	copy(dest, r.row)
	return nil
}
