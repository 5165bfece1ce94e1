package driver_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// queueRow is the row of fdbqueue_queues this file reads.
type queueRow struct {
	rows, visible, delayed, leased                                      int64
	dead                                                                sql.NullInt64
	pushed, popped, leasedTotal, acked, released, expired, deadLettered int64
	deleted, returned                                                   int64
	asOf                                                                time.Time
}

const queueColumns = "rows, visible, delayed, leased, dead, pushed, popped, leased_total, acked, released, expired, dead_lettered, deleted, returned, as_of"

func scanQueueRow(row interface{ Scan(...any) error }) (queueRow, error) {
	var q queueRow
	err := row.Scan(&q.rows, &q.visible, &q.delayed, &q.leased, &q.dead, &q.pushed, &q.popped, &q.leasedTotal,
		&q.acked, &q.released, &q.expired, &q.deadLettered, &q.deleted, &q.returned, &q.asOf)
	return q, err
}

// compareWithScan reads the system table's row of table and every row of
// the table in one read-only transaction (one snapshot), and checks the
// gauges against the rows classified at the row's as_of: a row whose
// _visible_at is after it is leased if it has a lease token (in this
// file's workloads a hidden row with a token was hidden by its lease, or
// a heartbeat), delayed if not; any other row is visible.
func compareWithScan(ctx context.Context, t *testing.T, db *sql.DB, table string) queueRow {
	t.Helper()
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	q, err := scanQueueRow(tx.QueryRowContext(ctx, "SELECT "+queueColumns+" FROM fdbqueue_queues WHERE name = ?", table))
	require.NoError(t, err)
	rows, err := tx.QueryContext(ctx, "SELECT id, _visible_at, _lease, _attempts FROM "+table)
	require.NoError(t, err)
	var want queueRow
	var hidden []string // the rows hidden at as_of, for a failure's message
	for rows.Next() {
		var at time.Time
		var id, lease, attempts int64
		require.NoError(t, rows.Scan(&id, &at, &lease, &attempts))
		want.rows++
		switch {
		case at.After(q.asOf) && lease != 0:
			want.leased++
		case at.After(q.asOf):
			want.delayed++
		default:
			want.visible++
		}
		if at.After(q.asOf) {
			hidden = append(hidden, fmt.Sprintf("id %d visible at %s lease %d attempts %d", id, at.Format(time.RFC3339Nano), lease, attempts))
		}
	}
	require.NoError(t, rows.Err())
	require.Equal(t, [4]int64{want.rows, want.visible, want.delayed, want.leased}, [4]int64{q.rows, q.visible, q.delayed, q.leased},
		"rows, visible, delayed, leased at %v (scan, then fdbqueue_queues); the rows hidden then:\n%s", q.asOf, strings.Join(hidden, "\n"))
	return q
}

// TestStatsUnderFaults: pushers, poppers, and lessees that ack, release,
// extend or abandon their leases (which then end), dead-lettering at
// MAX_ATTEMPTS, run together while the engine fails commits with
// not_committed, commit_unknown_result (applied or not) and
// transaction_too_old, and every statement is retried; meanwhile and at
// the end, fdbqueue_queues's gauges equal a scan of the rows, and its
// counters equal what the clients saw: a retried statement counts once.
func TestStatsUnderFaults(t *testing.T) {
	t.Parallel()
	for i, engine := range []string{"memory:", "file:" + t.TempDir()} {
		t.Run(fmt.Sprintf("%s/seed%d", engine[:strings.IndexByte(engine, ':')], i+1), func(t *testing.T) {
			t.Parallel()
			statsUnderFaults(t, engine, i+1)
		})
	}
}

func statsUnderFaults(t *testing.T, engine string, seed int) {
	ctx := context.Background()
	db, err := sql.Open("fdbqueue", fmt.Sprintf("%s?fault_conflict=0.1&fault_unknown=0.2&fault_too_old=0.05&fault_seed=%d", engine, seed))
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec("CREATE TABLE jobs (priority INT NOT NULL, payload TEXT) MAX_ATTEMPTS=3")
	require.NoError(t, err)

	// What the clients saw.
	var pushed, delivered, leases, acked, deleted atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	fail := func(what string, err error) { errs <- fmt.Errorf("%s: %w", what, err) }
	affected := func(res sql.Result, err error) int64 {
		if err != nil {
			return -1
		}
		n, _ := res.RowsAffected()
		return n
	}
	const pushers, poppers, lessees, rounds = 2, 2, 3, 60
	for w := range pushers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(seed), uint64(w)))
			for i := range rounds {
				var n int64
				if r.IntN(3) == 0 { // delayed
					n = affected(db.Exec("INSERT INTO jobs (priority, payload, _visible_at) VALUES (?, ?, ?)", r.Int64N(3), fmt.Sprint(w, "-", i), time.Now().Add(100*time.Millisecond)))
				} else {
					n = affected(db.Exec("INSERT INTO jobs (priority, payload) VALUES (?, ?), (?, ?)", r.Int64N(3), "a", r.Int64N(3), "b"))
				}
				if n < 0 {
					fail("insert", errors.New("failed"))
					return
				}
				pushed.Add(n)
			}
		})
	}
	for w := range poppers {
		wg.Go(func() {
			for i := range rounds {
				// LIMIT 2 read through QueryRow: one row reaches the
				// program, the other (if any) goes back (returned).
				var p string
				err := db.QueryRow("SELECT payload FROM jobs ORDER BY priority DESC LIMIT 2 FOR POP").Scan(&p)
				if errors.Is(err, sql.ErrNoRows) {
					time.Sleep(time.Millisecond)
					continue
				}
				if err != nil {
					fail("pop", err)
					return
				}
				delivered.Add(1)
				if i%10 == w {
					if n := affected(db.Exec("DELETE FROM jobs WHERE _attempts = 0 ORDER BY priority LIMIT 1")); n < 0 {
						fail("delete", errors.New("failed"))
						return
					} else {
						deleted.Add(n)
					}
				}
			}
		})
	}
	for w := range lessees {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(seed), uint64(100+w)))
			for range rounds {
				var id, lease int64
				err := db.QueryRow("SELECT id, _lease FROM jobs LIMIT 1 FOR LEASE 0.05").Scan(&id, &lease)
				if errors.Is(err, sql.ErrNoRows) {
					time.Sleep(time.Millisecond)
					continue
				}
				if err != nil {
					fail("lease", err)
					return
				}
				leases.Add(1)
				switch r.IntN(4) {
				case 0: // ack
					n := affected(db.Exec("DELETE FROM jobs WHERE id = ? AND _lease = ?", id, lease))
					if n < 0 {
						fail("ack", errors.New("failed"))
						return
					}
					acked.Add(n)
				case 1: // release
					if _, err := db.Exec("UPDATE jobs SET _visible_at = NOW() WHERE id = ? AND _lease = ?", id, lease); err != nil {
						fail("release", err)
						return
					}
				case 2: // heartbeat
					if _, err := db.Exec("UPDATE jobs SET _visible_at = ? WHERE id = ? AND _lease = ?", time.Now().Add(80*time.Millisecond), id, lease); err != nil {
						fail("heartbeat", err)
						return
					}
				}
				// else abandon it: the lease ends
			}
		})
	}
	// The gauges against a scan while the workload runs.
	done := make(chan struct{})
	var checks sync.WaitGroup
	checks.Go(func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
				compareWithScan(ctx, t, db, "jobs")
			}
		}
	})
	wg.Wait()
	close(done)
	checks.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	// Drain: leases and delays end, pops take the rows back.
	for {
		var n int64
		require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM jobs").Scan(&n))
		if n == 0 {
			break
		}
		var p string
		err := db.QueryRow("SELECT payload FROM jobs LIMIT 1 FOR POP").Scan(&p)
		if errors.Is(err, sql.ErrNoRows) {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		require.NoError(t, err)
		delivered.Add(1)
	}
	q := compareWithScan(ctx, t, db, "jobs")
	require.Equal(t, pushed.Load(), q.pushed, "pushed")
	require.Equal(t, delivered.Load(), q.popped-q.returned, "popped, less what went back")
	require.Equal(t, leases.Load(), q.leasedTotal, "leased")
	require.Equal(t, acked.Load(), q.acked, "acked")
	require.Equal(t, deleted.Load(), q.deleted, "deleted")
	require.Equal(t, q.rows, q.pushed+q.returned-q.popped-q.acked-q.deleted-q.deadLettered, "the counters balance the rows")
	require.True(t, q.dead.Valid)
	require.Equal(t, q.deadLettered, q.dead.Int64, "dead letters")
	// Every lease ended: acked (an ack may also come after the lease
	// ended), released, or expired (the DELETEs took never-leased rows).
	require.LessOrEqual(t, q.released+q.expired, q.leasedTotal)
	require.LessOrEqual(t, q.leasedTotal, q.acked+q.released+q.expired)
	t.Logf("pushed %d popped %d returned %d leased %d acked %d released %d expired %d dead-lettered %d deleted %d",
		q.pushed, q.popped, q.returned, q.leasedTotal, q.acked, q.released, q.expired, q.deadLettered, q.deleted)
	dead := compareWithScan(ctx, t, db, "jobs_dead")
	require.Equal(t, q.deadLettered, dead.pushed)
}
