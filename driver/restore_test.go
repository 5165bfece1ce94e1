package driver_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fdbqueue "github.com/fdbqueue/fdbqueue/driver"
)

// TestInsertGivesPseudoColumns: INSERT may give a row's id, _attempts and
// _visible_at, as a restore from a backup does; an id the table holds, or
// one given twice, fails the statement with a RowError naming the row,
// and writes nothing.
func TestInsertGivesPseudoColumns(t *testing.T) {
	t.Parallel()
	db := open(t)
	_, err := db.Exec("CREATE TABLE jobs (priority INT NOT NULL, v TEXT) MAX_ATTEMPTS=3")
	require.NoError(t, err)
	later := time.Now().Add(time.Hour).UTC().Round(0)
	res, err := db.Exec("INSERT INTO jobs (id, priority, v, _attempts, _visible_at) VALUES (?, 1, 'a', ?, ?), (?, 1, 'b', ?, ?), (?, 1, 'c', 0, NOW())",
		int64(7), 2, time.Time{}, int64(3), 1, later, int64(1))
	require.NoError(t, err)
	last, err := res.LastInsertId()
	require.NoError(t, err)
	require.Equal(t, int64(1), last, "LastInsertId is the last row's id, given")

	// Each row is found by the id it was given.
	for _, want := range []struct {
		id, attempts int64
		v            string
		visibleAt    time.Time
	}{
		{7, 2, "a", time.Time{}}, // the zero time: never delayed
		{3, 1, "b", later},
	} {
		var v string
		var attempts int64
		var at time.Time
		require.NoError(t, db.QueryRow("SELECT v, _attempts, _visible_at FROM jobs WHERE id = ?", want.id).Scan(&v, &attempts, &at))
		require.Equal(t, want.v, v)
		require.Equal(t, want.attempts, attempts, want.v)
		require.Equal(t, want.visibleAt, at, want.v)
	}

	// Ids do not order the rows; the INSERT does. b is hidden for an
	// hour; a lease counts on from the _attempts given.
	var v string
	var attempts int64
	require.NoError(t, db.QueryRow("SELECT v, _attempts FROM jobs LIMIT 1 FOR LEASE 3600").Scan(&v, &attempts))
	require.Equal(t, "a", v)
	require.Equal(t, int64(3), attempts)
	require.NoError(t, db.QueryRow("SELECT v FROM jobs LIMIT 1 FOR POP").Scan(&v))
	require.Equal(t, "c", v)

	// A taken id, autocommit and in a transaction: RowError, nothing written.
	rowErr := func(err error) *fdbqueue.RowError {
		t.Helper()
		require.ErrorIs(t, err, fdbqueue.ErrDuplicateID)
		var re *fdbqueue.RowError
		require.True(t, errors.As(err, &re), "%v", err)
		return re
	}
	_, err = db.Exec("INSERT INTO jobs (id, priority, v) VALUES (100, 1, 'x'), (3, 1, 'y')")
	require.Equal(t, 2, rowErr(err).Row)
	require.ErrorContains(t, err, "fdbqueue: an item with this id is already queued: row 2: table jobs holds a row with id 3 (leave id out, and one is assigned)")
	_, err = db.Exec("INSERT INTO jobs (id, priority, v) VALUES (100, 1, 'x'), (101, 1, 'y'), (100, 1, 'z')")
	require.Equal(t, 3, rowErr(err).Row)
	tx, err := db.Begin()
	require.NoError(t, err)
	_, err = tx.Exec("INSERT INTO jobs (id, priority, v) VALUES (?, 1, 'x')", int64(7))
	require.Equal(t, 1, rowErr(err).Row)
	require.NoError(t, tx.Rollback())
	require.Equal(t, int64(2), count(t, db, "jobs"))

	// Clients racing to insert one id: one row, the others told.
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = db.Exec("INSERT INTO jobs (id, priority, v) VALUES (500, 2, ?)", i)
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
			continue
		}
		require.Equal(t, 1, rowErr(err).Row)
	}
	require.Equal(t, 1, ok, "%v", errs)
	require.Equal(t, int64(3), count(t, db, "jobs"))
}
