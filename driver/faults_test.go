package driver_test

import (
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestExactlyOnceUnderFaults is the total-queue test: producers and
// consumers work one queue through database/sql while the engine fails 10%
// of commits with each of not_committed (1020), commit_unknown_result
// (1021) after applying, 1021 without applying, and transaction_too_old
// (1007). Every statement is retried by the driver; every pushed item must
// be popped exactly once, none lost, none twice.
func TestExactlyOnceUnderFaults(t *testing.T) {
	t.Parallel()
	for _, seed := range []int{1, 2, 3, 4} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			db, err := sql.Open("fdbqueue", fmt.Sprintf("memory:?fault_conflict=0.1&fault_unknown=0.2&fault_too_old=0.1&fault_seed=%d", seed))
			require.NoError(t, err)
			defer db.Close()
			// DDL under faults too: a CREATE applied and reported 1021 is
			// retried, and must not fail with "already exists".
			for i := 0; i < 20; i++ {
				_, err = db.Exec("CREATE TABLE q (priority INT NOT NULL, cpu INT NOT NULL, item TEXT NOT NULL, INDEX fit (cpu))")
				require.NoError(t, err)
				_, err = db.Exec("DROP TABLE q")
				require.NoError(t, err)
			}
			_, err = db.Exec("CREATE TABLE q (priority INT NOT NULL, cpu INT NOT NULL, item TEXT NOT NULL, INDEX fit (cpu))")
			require.NoError(t, err)

			exactlyOnce(t, db, 8, 60, 8)
		})
	}
}

// TestDeleteCountsUnderFaults: a DELETE retried after a commit of unknown
// outcome reports what its committed attempt removed (a count receipt), and
// emptying a table keeps the push markers, so a push retried across it is
// still applied once.
func TestDeleteCountsUnderFaults(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("fdbqueue", "memory:?fault_unknown=0.5&fault_conflict=0.1&fault_seed=11")
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec("CREATE TABLE q (priority INT NOT NULL, v INT NOT NULL)")
	require.NoError(t, err)
	deleted := func(query string, args ...any) int64 {
		t.Helper()
		res, err := db.Exec(query, args...)
		require.NoError(t, err)
		n, err := res.RowsAffected()
		require.NoError(t, err)
		return n
	}
	for round := 0; round < 10; round++ {
		var ids []int64
		for i := 0; i < 10; i++ {
			res, err := db.Exec("INSERT INTO q VALUES (?, ?)", i%3, i)
			require.NoError(t, err)
			id, err := res.LastInsertId()
			require.NoError(t, err)
			ids = append(ids, id)
		}
		require.Equal(t, int64(1), deleted("DELETE FROM q WHERE id = ?", ids[0]), "round %d", round)
		require.Equal(t, int64(2), deleted("DELETE FROM q ORDER BY priority LIMIT 2"), "round %d", round)
		require.Equal(t, int64(3), deleted("DELETE FROM q WHERE v >= 7"), "round %d", round)
		require.Equal(t, int64(4), deleted("DELETE FROM q"), "round %d: the clear-all", round)
		require.Equal(t, int64(0), deleted("DELETE FROM q"))
	}
}

// exactlyOnce is the total-queue workload: producers each push items into
// table q (priority INT, cpu INT, item TEXT, INDEX fit (cpu)) while
// consumers pop them, half with a fit pop, until every item is taken;
// every item must be popped exactly once, none lost, none twice.
func exactlyOnce(t *testing.T, db *sql.DB, producers, each, consumers int) {
	t.Helper()
	var popped sync.Map
	var taken atomic.Int64
	var producing sync.WaitGroup
	var pushed atomic.Bool // all producers are done
	var wg sync.WaitGroup
	errs := make(chan error, producers+consumers+1)
	for p := 0; p < producers; p++ {
		producing.Add(1)
		go func() {
			defer producing.Done()
			for i := 0; i < each; i++ {
				res, err := db.Exec("INSERT INTO q (priority, cpu, item) VALUES (?, ?, ?)", i%3, i%2, fmt.Sprint(p, "-", i))
				if err != nil {
					errs <- fmt.Errorf("push: %w", err)
					return
				}
				if n, _ := res.RowsAffected(); n != 1 {
					errs <- fmt.Errorf("push reported %d rows", n)
					return
				}
			}
		}()
	}
	for c := 0; c < consumers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for taken.Load() < int64(producers*each) {
				if pushed.Load() {
					// Everything is pushed: stop once the queue is
					// empty, even if items are missing (then the
					// checks below say which).
					var n int
					if err := db.QueryRow("SELECT COUNT(*) FROM q").Scan(&n); err != nil {
						errs <- err
						return
					}
					if n == 0 {
						return
					}
				}
				var item string
				var err error
				if c%2 == 0 {
					err = db.QueryRow("SELECT item FROM q ORDER BY priority DESC LIMIT 1 FOR POP").Scan(&item)
				} else {
					err = db.QueryRow("SELECT item FROM q WHERE cpu <= 1 ORDER BY priority DESC LIMIT 1 FOR POP").Scan(&item)
				}
				if errors.Is(err, sql.ErrNoRows) {
					continue
				}
				if err != nil {
					errs <- fmt.Errorf("pop: %w", err)
					return
				}
				if _, dup := popped.LoadOrStore(item, true); dup {
					errs <- fmt.Errorf("%s popped twice", item)
					return
				}
				taken.Add(1)
			}
		}()
	}
	producing.Wait()
	pushed.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for p := 0; p < producers; p++ {
		for i := 0; i < each; i++ {
			_, ok := popped.Load(fmt.Sprint(p, "-", i))
			require.True(t, ok, "item %d-%d lost", p, i)
		}
	}
	var left int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM q").Scan(&left))
	require.Zero(t, left, "items pushed twice")
}
