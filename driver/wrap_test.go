package driver_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	fdbqueue "github.com/fdbqueue/fdbqueue/driver"
)

// Wrapping drivers, as tracing and metrics libraries write them: each
// passes the connection's calls through, and exposes the connection it
// wraps with Raw, with Unwrap, or not at all.
type (
	rawConn    struct{ driver.Conn }
	unwrapped  struct{ driver.Conn }
	hiddenConn struct{ driver.Conn }
	// loopConn's Raw returns itself.
	loopConn struct{ driver.Conn }
)

func (c rawConn) Raw() driver.Conn      { return c.Conn }
func (c unwrapped) Unwrap() driver.Conn { return c.Conn }
func (c loopConn) Raw() driver.Conn     { return c }

// wrapConnector wraps the connections of the connector it holds.
type wrapConnector struct {
	driver.Connector
	wrap func(driver.Conn) driver.Conn
}

func (w wrapConnector) Connect(ctx context.Context) (driver.Conn, error) {
	c, err := w.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return w.wrap(c), nil
}

func (w wrapConnector) Close() error { return w.Connector.(io.Closer).Close() }

// openWrapped opens a private in-memory database whose connections wrap
// reaches.
func openWrapped(t *testing.T, wrap func(driver.Conn) driver.Conn) *sql.Conn {
	t.Helper()
	c, err := fdbqueue.NewConnector(&fdbqueue.Config{Engine: fdbqueue.EngineMemory})
	require.NoError(t, err)
	db := sql.OpenDB(wrapConnector{c, wrap})
	t.Cleanup(func() { _ = db.Close() })
	conn, err := db.Conn(bg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func TestTablesThroughWrappers(t *testing.T) {
	t.Parallel()
	for name, wrap := range map[string]func(driver.Conn) driver.Conn{
		"Raw":           func(c driver.Conn) driver.Conn { return rawConn{c} },
		"Unwrap":        func(c driver.Conn) driver.Conn { return unwrapped{c} },
		"Raw of Unwrap": func(c driver.Conn) driver.Conn { return rawConn{unwrapped{c}} },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			conn := openWrapped(t, wrap)
			_, err := conn.ExecContext(bg, "CREATE TABLE tasks (priority INT NOT NULL, v TEXT)")
			require.NoError(t, err)
			tables, err := fdbqueue.Tables(bg, conn)
			require.NoError(t, err)
			require.Len(t, tables, 1)
			require.Equal(t, "tasks", tables[0].Name)
			// The wrapped connection's transaction is the one Tables reads.
			tablesSeeTx(t, bg, conn)
		})
	}
}

// foreignConn is another driver's connection.
type foreignConn struct{}

func (foreignConn) Prepare(string) (driver.Stmt, error) { return nil, errors.New("foreign") }
func (foreignConn) Close() error                        { return nil }
func (foreignConn) Begin() (driver.Tx, error)           { return nil, errors.New("foreign") }

type foreignConnector struct{}

func (foreignConnector) Connect(context.Context) (driver.Conn, error) { return foreignConn{}, nil }
func (foreignConnector) Driver() driver.Driver                        { return nil }

func TestTablesOfAnotherDriver(t *testing.T) {
	t.Parallel()
	db := sql.OpenDB(foreignConnector{})
	defer db.Close()
	conn, err := db.Conn(bg)
	require.NoError(t, err)
	defer conn.Close()
	_, err = fdbqueue.Tables(bg, conn)
	require.ErrorIs(t, err, fdbqueue.ErrNotFdbqueue)
	require.ErrorContains(t, err, "Tables got a driver_test.foreignConn connection")

	// A wrapper that hides the connection it wraps is named, with what
	// it would need.
	_, err = fdbqueue.Tables(bg, openWrapped(t, func(c driver.Conn) driver.Conn { return hiddenConn{c} }))
	require.ErrorIs(t, err, fdbqueue.ErrNotFdbqueue)
	require.ErrorContains(t, err, "Tables got a driver_test.hiddenConn connection; a driver that wraps fdbqueue's must expose the connection it wraps with a method Raw() driver.Conn or Unwrap() driver.Conn")

	// One whose Raw returns itself does not make Tables loop.
	_, err = fdbqueue.Tables(bg, openWrapped(t, func(c driver.Conn) driver.Conn { return loopConn{c} }))
	require.ErrorIs(t, err, fdbqueue.ErrNotFdbqueue)
	require.ErrorContains(t, err, "under 16 wrappers")
}
