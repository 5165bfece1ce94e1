package embedded_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fdbqueue "github.com/fdbqueue/fdbqueue/driver"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
)

// watchCounter is a database that counts the watches its transactions
// make.
type watchCounter struct {
	*embedded.DB
	watches atomic.Int64
}

func (c *watchCounter) Transact(ctx context.Context, fn func(kv.Transaction) error) error {
	return kv.Transact(ctx, c, fn)
}

func (c *watchCounter) ReadTransact(ctx context.Context, fn func(kv.ReadTransaction) error) error {
	return kv.ReadTransact(ctx, c, fn)
}

func (c *watchCounter) CreateTransaction(ctx context.Context) (kv.Transaction, error) {
	tr, err := c.DB.CreateTransaction(ctx)
	if err != nil {
		return nil, err
	}
	return countingTxn{tr, c}, nil
}

type countingTxn struct {
	kv.Transaction
	c *watchCounter
}

func (t countingTxn) Watch(key []byte) kv.Watch {
	t.c.watches.Add(1)
	return t.Transaction.Watch(key)
}

// A FOR POP WAIT consumer that starts while a large INSERT (staged in the
// tree while its fsync runs) is not yet readable finds nothing, and waits
// on one watch, which the INSERT fires once readable: the consumer then
// takes a row. Its watch fired when armed, compared with the staged push
// signal, the consumer found nothing again, watched again, and so on, busy
// until the INSERT was readable.
func TestWaitingPopNotWokenBeforeStagedInsertIsReadable(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	edb, err := embedded.OpenFile(t.TempDir(), embedded.FileConfig{})
	require.NoError(t, err)
	c := &watchCounter{DB: edb}
	db := sql.OpenDB(fdbqueue.NewConnectorOn(c))
	defer db.Close()
	_, err = db.ExecContext(ctx, "CREATE TABLE jobs (name TEXT)")
	require.NoError(t, err)
	// The push signal exists: an empty pop watches it without writing
	// (a commit that would wait for the held fsync).
	_, err = db.ExecContext(ctx, "INSERT INTO jobs VALUES ('first')")
	require.NoError(t, err)
	var name string
	require.NoError(t, db.QueryRowContext(ctx, "SELECT name FROM jobs LIMIT 1 FOR POP").Scan(&name))

	staged, free := embedded.HoldFsync(edb)
	defer free() // before db.Close, which waits for the log's writer
	const rows = 100
	values := make([]string, rows)
	for i := range values {
		values[i] = fmt.Sprintf("('row %d')", i)
	}
	inserted := make(chan error, 1)
	go func() {
		_, err := db.ExecContext(ctx, "INSERT INTO jobs VALUES "+strings.Join(values, ", "))
		inserted <- err
	}()
	require.Eventually(t, staged, 10*time.Second, time.Millisecond, "the INSERT is staged while its fsync runs")

	popped := make(chan error, 1)
	go func() {
		popped <- db.QueryRowContext(ctx, "SELECT name FROM jobs LIMIT 1 FOR POP WAIT 30").Scan(&name)
	}()
	// Armed (fixed), or woken and watching again (broken).
	waiting := func() bool { return embedded.ArmedWatches(edb) == 1 || c.watches.Load() > 1 }
	require.Eventually(t, waiting, 10*time.Second, time.Millisecond)
	free()
	require.NoError(t, <-inserted)
	require.NoError(t, <-popped)
	require.Contains(t, name, "row ")
	require.EqualValues(t, 1, c.watches.Load(), "watches the consumer armed")
}
