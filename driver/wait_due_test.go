package driver_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWaitEndsWhenARowBecomesDue: time passing fires no watch, so a waiting
// pop also wakes when the table's earliest delayed or leased row becomes
// visible; without that it would wait out its whole WAIT (20 s here) for a
// row due in a fraction of a second, and find it only if a push came.
func TestWaitEndsWhenARowBecomesDue(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("fdbqueue", "memory:")
	require.NoError(t, err)
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = db.ExecContext(ctx, `CREATE TABLE q (priority INT NOT NULL, v TEXT)`)
	require.NoError(t, err)

	// A delayed row, due in 200 ms: FOR POP WAIT takes it then.
	due := time.Now().Add(200 * time.Millisecond)
	_, err = db.ExecContext(ctx, `INSERT INTO q (priority, v, _visible_at) VALUES (1, 'delayed', ?)`, due)
	require.NoError(t, err)
	var v string
	require.NoError(t, db.QueryRowContext(ctx, `SELECT v FROM q LIMIT 1 FOR POP WAIT 20`).Scan(&v))
	require.Equal(t, "delayed", v)
	require.False(t, time.Now().Before(due), "not before it was due")

	// A lease of 200 ms that nobody acks: FOR LEASE ... WAIT takes the row
	// again when the lease expires, as its second attempt.
	_, err = db.ExecContext(ctx, `INSERT INTO q (priority, v) VALUES (1, 'abandoned')`)
	require.NoError(t, err)
	var first int64
	require.NoError(t, db.QueryRowContext(ctx, `SELECT _lease FROM q LIMIT 1 FOR LEASE 0.2`).Scan(&first))
	var attempts, second int64
	require.NoError(t, db.QueryRowContext(ctx, `SELECT v, _attempts, _lease FROM q LIMIT 1 FOR LEASE 30 WAIT 20`).Scan(&v, &attempts, &second))
	require.Equal(t, "abandoned", v)
	require.Equal(t, int64(2), attempts)
	require.NotEqual(t, first, second)
}
