package driver_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLoneFitPopsExactlyOnceMixed: lone consumers pop with random limits
// and orders from two tables, one of them from both in turn (the pops of
// one executor share one slot for the reads a pop carries to the next),
// while producers insert in bursts (some rows delayed a few milliseconds),
// a consumer leases and acks or lets its leases run out, and another
// session creates, fills, pops and drops a third table. Every row comes
// out exactly once: popped, or acked under its lease. In memory, in a
// file (where a commit is written before it is published), and under
// injected conflicts and commits of unknown outcome.
func TestLoneFitPopsExactlyOnceMixed(t *testing.T) {
	t.Parallel()
	for name, dsn := range map[string]string{
		"memory": "memory:",
		"file":   "file:" + t.TempDir() + "?sync=none",
		"faults": "memory:?fault_conflict=0.05&fault_unknown=0.05&fault_seed=3",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db, err := sql.Open("fdbqueue", dsn)
			require.NoError(t, err)
			defer db.Close()
			loneFitPopsMixed(t, db)
		})
	}
}

func loneFitPopsMixed(t *testing.T, db *sql.DB) {
	for _, tb := range []string{"ja", "jb"} {
		_, err := db.Exec("CREATE TABLE " + tb + " (priority INT NOT NULL, cpu INT NOT NULL, mem INT NOT NULL, payload TEXT, INDEX fit (cpu, mem))")
		require.NoError(t, err)
	}
	const producers, bursts, rows = 2, 12, 12
	total := int64(2 * producers * bursts * rows)
	var consumed atomic.Int64
	var got sync.Map
	errs := make(chan error, 64)
	fail := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	took := func(payload string) {
		if _, dup := got.LoadOrStore(payload, true); dup {
			fail(fmt.Errorf("%s consumed twice", payload))
		}
		consumed.Add(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for p := range producers {
		for _, tb := range []string{"ja", "jb"} {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(p), 3))
				for b := range bursts {
					for i := range rows {
						payload := fmt.Sprintf("%s-%d-%d-%d", tb, p, b, i)
						var err error
						if r.IntN(5) == 0 {
							_, err = db.ExecContext(ctx, "INSERT INTO "+tb+" (priority, cpu, mem, payload, _visible_at) VALUES (?, ?, ?, ?, ?)",
								r.Int64N(4), 1+r.Int64N(6), 1+r.Int64N(40), payload, time.Now().Add(time.Duration(1+r.IntN(20))*time.Millisecond))
						} else {
							_, err = db.ExecContext(ctx, "INSERT INTO "+tb+" (priority, cpu, mem, payload) VALUES (?, ?, ?, ?)",
								r.Int64N(4), 1+r.Int64N(6), 1+r.Int64N(40), payload)
						}
						if err != nil {
							fail(err)
							return
						}
					}
					time.Sleep(time.Duration(r.IntN(3)) * time.Millisecond) // a pause: pops follow one another
				}
			})
		}
	}
	pop := func(r *rand.Rand, tb string) {
		order := []string{"ASC", "DESC"}[r.IntN(2)]
		cpu, mem := 1+r.Int64N(6), 1+r.Int64N(40)
		if consumed.Load() > total*3/4 {
			cpu, mem = 6, 40
		}
		var payload string
		var c, m int64
		err := db.QueryRowContext(ctx, "SELECT payload, cpu, mem FROM "+tb+" WHERE cpu <= ? AND mem <= ? ORDER BY priority "+order+" LIMIT 1 FOR POP", cpu, mem).Scan(&payload, &c, &m)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			fail(err)
		case c > cpu || m > mem:
			fail(fmt.Errorf("%s (cpu %d, mem %d) popped with limits %d, %d", payload, c, m, cpu, mem))
		default:
			took(payload)
		}
	}
	var cw sync.WaitGroup
	done := func() bool { return consumed.Load() >= total || ctx.Err() != nil || len(errs) > 0 }
	for c, tbs := range [][]string{{"ja"}, {"jb"}, {"ja", "jb"}} {
		cw.Go(func() {
			r := rand.New(rand.NewPCG(uint64(c), 4))
			for !done() {
				pop(r, tbs[r.IntN(len(tbs))])
			}
		})
	}
	cw.Go(func() {
		// Leases: acked, or left to run out (the row comes back).
		r := rand.New(rand.NewPCG(7, 4))
		for !done() {
			var id, lease int64
			var payload string
			err := db.QueryRowContext(ctx, "SELECT id, _lease, payload FROM ja WHERE cpu <= ? AND mem <= ? ORDER BY priority LIMIT 1 FOR LEASE ?", 6, 40, time.Duration(2+r.IntN(10))*time.Millisecond).Scan(&id, &lease, &payload)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				fail(err)
				return
			}
			if r.IntN(3) == 0 {
				continue // runs out
			}
			res, err := db.ExecContext(ctx, "DELETE FROM ja WHERE id = ? AND _lease = ?", id, lease)
			if err != nil {
				fail(err)
				return
			}
			if n, _ := res.RowsAffected(); n == 1 {
				took(payload)
			}
		}
	})
	cw.Go(func() {
		// DDL beside the pops, in the same executor.
		for i := 0; !done(); i++ {
			for _, q := range []string{
				"CREATE TABLE jc (priority INT NOT NULL, cpu INT NOT NULL, mem INT NOT NULL, payload TEXT, INDEX fit (cpu, mem))",
				"INSERT INTO jc (priority, cpu, mem, payload) VALUES (1, 1, 1, 'x'), (2, 2, 2, 'y')",
			} {
				if _, err := db.ExecContext(ctx, q); err != nil {
					fail(err)
					return
				}
			}
			var payload string
			if err := db.QueryRowContext(ctx, "SELECT payload FROM jc WHERE cpu <= 2 AND mem <= 2 ORDER BY priority LIMIT 1 FOR POP").Scan(&payload); err != nil || payload != "x" {
				fail(fmt.Errorf("jc pop: %q, %v", payload, err))
				return
			}
			if _, err := db.ExecContext(ctx, "DROP TABLE jc"); err != nil {
				fail(err)
				return
			}
		}
	})
	wg.Wait()
	cw.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, ctx.Err(), "consumed %d of %d", consumed.Load(), total)
	require.Equal(t, total, consumed.Load())
	require.Zero(t, count(t, db, "ja"))
	require.Zero(t, count(t, db, "jb"))
}
