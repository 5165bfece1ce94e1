package driver_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestExpiredLeaseVisibleToScans: a row whose lease ended is visible to a
// pop or lease whose WHERE the queue does not index (a scan), not only to
// one that goes through an index.
func TestExpiredLeaseVisibleToScans(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("fdbqueue", "memory:")
	require.NoError(t, err)
	defer db.Close()
	ctx := context.Background()
	_, err = db.ExecContext(ctx, `CREATE TABLE j (v TEXT)`)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO j (v) VALUES ('x')`)
	require.NoError(t, err)
	var v string
	require.NoError(t, db.QueryRowContext(ctx, `SELECT v FROM j LIMIT 1 FOR LEASE 0.1`).Scan(&v))
	time.Sleep(200 * time.Millisecond) // the lease ends; nothing else runs meanwhile
	require.NoError(t, db.QueryRowContext(ctx, `SELECT v FROM j WHERE v = 'x' LIMIT 1 FOR POP`).Scan(&v))
	require.Equal(t, "x", v)
}
