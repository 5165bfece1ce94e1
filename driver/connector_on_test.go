package driver_test

import (
	"context"
	"database/sql"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	fdbqueue "github.com/fdbqueue/fdbqueue/driver"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
)

// countingDB is an engine behind something of a tool's: it counts the
// transactions the driver opens on it, and its Close.
type countingDB struct {
	kv.Database
	txns   atomic.Int64
	closed atomic.Bool
}

func (d *countingDB) CreateTransaction(ctx context.Context) (kv.Transaction, error) {
	d.txns.Add(1)
	return d.Database.CreateTransaction(ctx)
}

func (d *countingDB) Close() error {
	d.closed.Store(true)
	return d.Database.Close()
}

// TestNewConnectorOn: the statements run on the engine given, and closing
// the sql.DB closes it.
func TestNewConnectorOn(t *testing.T) {
	t.Parallel()
	engine := &countingDB{Database: embedded.Open("", embedded.Config{})}
	db := sql.OpenDB(fdbqueue.NewConnectorOn(engine))
	_, err := db.ExecContext(bg, "CREATE TABLE t (payload TEXT)")
	require.NoError(t, err)
	_, err = db.ExecContext(bg, "INSERT INTO t (payload) VALUES ('a'), ('b')")
	require.NoError(t, err)
	var got string
	require.NoError(t, db.QueryRowContext(bg, "SELECT payload FROM t LIMIT 1 FOR POP").Scan(&got))
	require.Equal(t, "a", got)
	var n int
	require.NoError(t, db.QueryRowContext(bg, "SELECT COUNT(*) FROM t").Scan(&n))
	require.Equal(t, 1, n)
	require.Positive(t, engine.txns.Load(), "the statements ran on the engine given")

	require.False(t, engine.closed.Load())
	require.NoError(t, db.Close())
	require.True(t, engine.closed.Load(), "closing the sql.DB closes the engine")
}
