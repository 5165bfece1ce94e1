package driver_test

import (
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	fdbqueue "github.com/fdbqueue/fdbqueue/driver"
)

// TestUniqueUnderFaults: producers INSERT IGNORE the same keys, in orders
// of their own, while the engine fails commits with not_committed (1020),
// commit_unknown_result (1021) after applying and without, and
// transaction_too_old (1007). Every key goes in exactly once: the rows the
// INSERTs report sum to the keys, none reports a duplicate of itself
// after a retry (its receipt says which rows its committed attempt
// inserted), and the table holds each key once. Then pops and acks free
// the keys, under the same faults, and every key goes in again once.
// Without faults (seed 0), the INSERTs of the producers run combined, a
// few in one transaction (exec/combine.go).
func TestUniqueUnderFaults(t *testing.T) {
	t.Parallel()
	for _, seed := range []int{0, 1, 2, 3} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			dsn := fmt.Sprintf("memory:?fault_conflict=0.1&fault_unknown=0.2&fault_too_old=0.05&fault_seed=%d", seed)
			if seed == 0 {
				dsn = "memory:"
			}
			db, err := sql.Open("fdbqueue", dsn)
			require.NoError(t, err)
			defer db.Close()
			_, err = db.Exec("CREATE TABLE jobs (priority INT NOT NULL, kind TEXT NOT NULL, n INT NOT NULL, UNIQUE KEY once (kind, n))")
			require.NoError(t, err)

			const keys, producers = 40, 6
			fill := func(round int) {
				t.Helper()
				var inserted atomic.Int64
				var wg sync.WaitGroup
				errs := make(chan error, producers)
				for p := range producers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						rng := rand.New(rand.NewPCG(uint64(seed), uint64(round*producers+p)))
						for _, k := range rng.Perm(keys) {
							// Two rows a statement, the second often taken.
							res, err := db.Exec("INSERT IGNORE INTO jobs VALUES (?, 'report', ?), (?, 'report', ?)", k%3, k, (k+1)%3, (k+1)%keys)
							if err != nil {
								errs <- fmt.Errorf("insert %d: %w", k, err)
								return
							}
							n, _ := res.RowsAffected()
							inserted.Add(n)
						}
					}()
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					require.NoError(t, err)
				}
				require.Equal(t, int64(keys), inserted.Load(), "round %d: the rows the INSERTs report", round)
				rows, err := db.Query("SELECT n FROM jobs")
				require.NoError(t, err)
				seen := map[int64]bool{}
				for rows.Next() {
					var n int64
					require.NoError(t, rows.Scan(&n))
					require.False(t, seen[n], "round %d: key %d twice", round, n)
					seen[n] = true
				}
				require.NoError(t, rows.Err())
				require.Len(t, seen, keys)
			}
			fill(0)

			// A plain INSERT of a held key fails, naming the row that
			// holds it, and writes nothing; one of a new key goes in once.
			var holder int64
			require.NoError(t, db.QueryRow("SELECT id FROM jobs WHERE n = 7").Scan(&holder))
			_, err = db.Exec("INSERT INTO jobs VALUES (0, 'other', 1), (0, 'report', 7)")
			require.ErrorIs(t, err, fdbqueue.ErrDuplicateKey)
			var dup *fdbqueue.DuplicateKeyError
			require.True(t, errors.As(err, &dup), "%v", err)
			require.Equal(t, holder, dup.ID)
			require.Equal(t, "once", dup.Key)
			var rowErr *fdbqueue.RowError
			require.True(t, errors.As(err, &rowErr))
			require.Equal(t, 2, rowErr.Row)
			res, err := db.Exec("INSERT INTO jobs VALUES (0, 'other', 1)")
			require.NoError(t, err, "the failed INSERT wrote nothing")
			n, _ := res.RowsAffected()
			require.Equal(t, int64(1), n)
			_, err = db.Exec("DELETE FROM jobs WHERE kind = 'other'")
			require.NoError(t, err)

			// Every removal frees its keys, exactly once: pops, and leases
			// acked.
			for i := 0; ; i++ {
				var id, lease int64
				var err error
				if i%2 == 0 {
					err = db.QueryRow("SELECT id FROM jobs ORDER BY priority DESC LIMIT 1 FOR POP").Scan(&id)
				} else {
					err = db.QueryRow("SELECT id, _lease FROM jobs LIMIT 1 FOR LEASE 60").Scan(&id, &lease)
					if err == nil {
						var res sql.Result
						res, err = db.Exec("DELETE FROM jobs WHERE id = ? AND _lease = ?", id, lease)
						if err == nil {
							n, _ := res.RowsAffected()
							require.Equal(t, int64(1), n, "the ack")
						}
					}
				}
				if errors.Is(err, sql.ErrNoRows) {
					break
				}
				require.NoError(t, err)
			}
			fill(1)
		})
	}
}

// TestUniquePutBack: the rows of an autocommit pop that the program did
// not read go back with their keys: a key put back stays taken.
func TestUniquePutBack(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("fdbqueue", "memory:")
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec("CREATE TABLE jobs (ref TEXT UNIQUE)")
	require.NoError(t, err)
	_, err = db.Exec("INSERT INTO jobs VALUES ('a'), ('b'), ('c')")
	require.NoError(t, err)

	var ref string
	require.NoError(t, db.QueryRow("SELECT ref FROM jobs LIMIT 3 FOR POP").Scan(&ref)) // b and c go back
	require.Equal(t, "a", ref)
	res, err := db.Exec("INSERT IGNORE INTO jobs VALUES ('a'), ('b'), ('c')")
	require.NoError(t, err)
	n, err := res.RowsAffected()
	require.NoError(t, err)
	require.Equal(t, int64(1), n, "only a was taken")

	var count int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM jobs").Scan(&count))
	require.Equal(t, 3, count)
}
