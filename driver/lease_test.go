package driver_test

import (
	"context"
	"database/sql"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// leaseTable opens memory: with a jobs table of n rows, payloads 0..n-1 in
// push order.
func leaseTable(t *testing.T, n int) *sql.DB {
	t.Helper()
	db := open(t)
	_, err := db.Exec("CREATE TABLE jobs (priority INT NOT NULL, cpu INT NOT NULL, mem INT NOT NULL, payload INT, INDEX fit (cpu, mem))")
	require.NoError(t, err)
	for i := 0; i < n; i++ {
		_, err := db.Exec("INSERT INTO jobs (priority, cpu, mem, payload) VALUES (1, 1, 1, ?)", i)
		require.NoError(t, err)
	}
	return db
}

type leased struct {
	id, lease, attempts, payload int64
	visibleAt                    time.Time
}

func leaseOne(t *testing.T, q interface {
	QueryRow(string, ...any) *sql.Row
}, d any) (leased, bool) {
	t.Helper()
	var l leased
	err := q.QueryRow("SELECT id, _lease, _attempts, payload, _visible_at FROM jobs WHERE cpu <= ? AND mem <= ? ORDER BY priority LIMIT 1 FOR LEASE ?", 4, 8, d).
		Scan(&l.id, &l.lease, &l.attempts, &l.payload, &l.visibleAt)
	if err == sql.ErrNoRows {
		return l, false
	}
	require.NoError(t, err)
	return l, true
}

// TestLeaseWorkerLoop: workers lease, heartbeat and ack; every task is
// acked exactly once, and a heartbeat or ack with a lost token does
// nothing.
func TestLeaseWorkerLoop(t *testing.T) {
	t.Parallel()
	const n = 40
	db := leaseTable(t, n)
	var mu sync.Mutex
	acked := map[int64]int{}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				l, ok := leaseOne(t, db, 30*time.Second)
				if !ok {
					return
				}
				require.NotZero(t, l.lease)
				require.Equal(t, int64(1), l.attempts)
				require.True(t, l.visibleAt.After(time.Now().Add(20*time.Second)), "the lease hides the row for 30 s")
				res, err := db.Exec("UPDATE jobs SET _visible_at = NOW() + INTERVAL 30 SECOND WHERE id = ? AND _lease = ?", l.id, l.lease)
				require.NoError(t, err)
				require.Equal(t, int64(1), rowsAffected(t, res), "heartbeat")
				res, err = db.Exec("DELETE FROM jobs WHERE id = ? AND _lease = ?", l.id, l.lease)
				require.NoError(t, err)
				require.Equal(t, int64(1), rowsAffected(t, res), "ack")
				res, err = db.Exec("DELETE FROM jobs WHERE id = ? AND _lease = ?", l.id, l.lease)
				require.NoError(t, err)
				require.Equal(t, int64(0), rowsAffected(t, res), "acked already")
				mu.Lock()
				acked[l.payload]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Len(t, acked, n)
	for p, c := range acked {
		require.Equal(t, 1, c, "payload %d", p)
	}
	require.Equal(t, int64(0), count(t, db, "jobs"))
}

func rowsAffected(t *testing.T, res sql.Result) int64 {
	t.Helper()
	n, err := res.RowsAffected()
	require.NoError(t, err)
	return n
}

// TestLeaseExpires: a row whose lease ends comes back at its original
// place, before later pushes of its priority, with one more attempt; the
// old token no longer acks it.
func TestLeaseExpires(t *testing.T) {
	t.Parallel()
	db := leaseTable(t, 2)
	first, ok := leaseOne(t, db, 0.2) // seconds
	require.True(t, ok)
	require.Equal(t, int64(0), first.payload)
	_, err := db.Exec("INSERT INTO jobs (priority, cpu, mem, payload) VALUES (1, 1, 1, 2)")
	require.NoError(t, err)
	second, ok := leaseOne(t, db, time.Minute)
	require.True(t, ok)
	require.Equal(t, int64(1), second.payload, "the leased row is not taken again while its lease lasts")
	// Wait for the lease to end (no upper bound: the machine may be slow).
	for {
		var due int64
		require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM jobs WHERE id = ? AND _visible_at <= NOW()", first.id).Scan(&due))
		if due == 1 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	again, ok := leaseOne(t, db, time.Minute)
	require.True(t, ok)
	require.Equal(t, int64(0), again.payload, "back at its place: before payload 2, pushed later")
	require.Equal(t, first.id, again.id)
	require.Equal(t, int64(2), again.attempts)
	require.NotEqual(t, first.lease, again.lease)
	res, err := db.Exec("DELETE FROM jobs WHERE id = ? AND _lease = ?", first.id, first.lease)
	require.NoError(t, err)
	require.Equal(t, int64(0), rowsAffected(t, res), "the first lease was lost")
	require.Equal(t, int64(3), count(t, db, "jobs"))
}

// TestLeaseReleaseAndDelay: a release makes the row due at once (or
// later); a delayed insert (time.Time argument) is not taken before its
// time; UPDATE by id alone sets _visible_at whoever holds the row.
func TestLeaseReleaseAndDelay(t *testing.T) {
	t.Parallel()
	db := leaseTable(t, 1)
	l, ok := leaseOne(t, db, time.Hour)
	require.True(t, ok)
	_, ok = leaseOne(t, db, time.Hour)
	require.False(t, ok)
	res, err := db.Exec("UPDATE jobs SET _visible_at = NOW() WHERE id = ? AND _lease = ?", l.id, l.lease+1)
	require.NoError(t, err)
	require.Equal(t, int64(0), rowsAffected(t, res), "not the holder")
	res, err = db.Exec("UPDATE jobs SET _visible_at = NOW() WHERE id = ? AND _lease = ?", l.id, l.lease)
	require.NoError(t, err)
	require.Equal(t, int64(1), rowsAffected(t, res))
	again, ok := leaseOne(t, db, time.Hour)
	require.True(t, ok)
	require.Equal(t, l.id, again.id)
	res, err = db.Exec("UPDATE jobs SET _visible_at = ? WHERE id = ?", time.Now().Add(-time.Second), l.id)
	require.NoError(t, err)
	require.Equal(t, int64(1), rowsAffected(t, res))

	_, err = db.Exec("INSERT INTO jobs (priority, cpu, mem, payload, _visible_at) VALUES (0, 1, 1, 7, ?)", time.Now().Add(time.Hour))
	require.NoError(t, err)
	var payload int64
	require.NoError(t, db.QueryRow("SELECT payload FROM jobs ORDER BY priority LIMIT 1 FOR POP").Scan(&payload))
	require.Equal(t, int64(0), payload, "the delayed row (priority 0) is not due")
	require.Equal(t, int64(1), count(t, db, "jobs"))
}

// TestLeaseInTx: lease and ack inside one sql.Tx commit together, or not
// at all.
func TestLeaseInTx(t *testing.T) {
	t.Parallel()
	db := leaseTable(t, 2)
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	l, ok := leaseOne(t, tx, 30*time.Second)
	require.True(t, ok)
	_, err = tx.Exec("DELETE FROM jobs WHERE id = ? AND _lease = ?", l.id, l.lease)
	require.NoError(t, err)
	require.NoError(t, tx.Rollback())
	require.Equal(t, int64(2), count(t, db, "jobs"))
	again, ok := leaseOne(t, db, time.Hour)
	require.True(t, ok)
	require.Equal(t, l.id, again.id, "the rolled back lease left the row visible")
	require.Equal(t, int64(1), again.attempts)

	tx, err = db.BeginTx(ctx, nil)
	require.NoError(t, err)
	l, ok = leaseOne(t, tx, 30*time.Second)
	require.True(t, ok)
	res, err := tx.Exec("DELETE FROM jobs WHERE id = ? AND _lease = ?", l.id, l.lease)
	require.NoError(t, err)
	require.Equal(t, int64(1), rowsAffected(t, res))
	require.NoError(t, tx.Commit())
	require.Equal(t, int64(1), count(t, db, "jobs"))
}

// TestLeaseBadInput: bad leases and writes of the pseudo-columns fail
// and write nothing.
func TestLeaseBadInput(t *testing.T) {
	t.Parallel()
	db := leaseTable(t, 1)
	for _, tc := range []struct {
		sql  string
		args []any
		want string
	}{
		{"SELECT id FROM jobs LIMIT 1 FOR LEASE ?", []any{0}, "a lease lasts a positive number of seconds"},
		{"SELECT id FROM jobs LIMIT 1 FOR LEASE ?", []any{-time.Second}, "a lease lasts a positive duration"},
		{"SELECT id FROM jobs LIMIT 1 FOR LEASE ?", []any{"30"}, "bind a time.Duration or a number of seconds"},
		{"SELECT id FROM jobs LIMIT 1 FOR LEASE 0", nil, "a lease lasts a positive number of seconds"},
		{"UPDATE jobs SET _visible_at = NOW() WHERE payload = ?", []any{0}, "WHERE id = v"},
		{"UPDATE jobs SET _lease = ? WHERE id = 1", []any{1}, "_lease is read-only"},
		{"UPDATE jobs SET _attempts = 3 WHERE id = 1", nil, "_attempts is read-only"},
		{"INSERT INTO jobs (priority, cpu, mem, _attempts) VALUES (1, 1, 1, ?)", []any{-3}, "_attempts -3: attempts are 0 or more"},
		{"INSERT INTO jobs (priority, cpu, mem, _visible_at) VALUES (1, 1, 1, 5)", nil, "_visible_at is TIMESTAMP"},
	} {
		_, err := db.Exec(tc.sql, tc.args...)
		require.ErrorContains(t, err, tc.want, tc.sql)
	}
	var attempts int64
	require.NoError(t, db.QueryRow("SELECT _attempts FROM jobs").Scan(&attempts))
	require.Equal(t, int64(0), attempts)
	require.Equal(t, int64(1), count(t, db, "jobs"))
}
