package driver_test

import (
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLoneFitPopsFollowModel: one session's statements, one after another,
// on two tables: inserts, fit pops and leases with random limits and
// orders (a lone consumer's pops carry their reads to the next), and a
// third table dropped and created again between them. Every pop and lease
// takes the row a model says: the fitting row of the highest or lowest
// priority (priorities are distinct), never one a statement in between
// removed, never passing over one it added.
func TestLoneFitPopsFollowModel(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			t.Parallel()
			db := open(t)
			loneFitPopsModel(t, db, seed)
		})
	}
	t.Run("file", func(t *testing.T) {
		// Where a commit is written to the log before it is published.
		t.Parallel()
		db, err := sql.Open("fdbqueue", "file:"+t.TempDir()+"?sync=none")
		require.NoError(t, err)
		defer db.Close()
		loneFitPopsModel(t, db, 4)
	})
}

type modelRow struct{ prio, cpu, mem int64 }

func loneFitPopsModel(t *testing.T, db *sql.DB, seed uint64) {
	tables := []string{"ma", "mb"}
	for _, tb := range tables {
		_, err := db.Exec("CREATE TABLE " + tb + " (priority INT NOT NULL, cpu INT NOT NULL, mem INT NOT NULL, INDEX fit (cpu, mem))")
		require.NoError(t, err)
	}
	r := rand.New(rand.NewPCG(seed, 8))
	model := map[string]map[int64]modelRow{"ma": {}, "mb": {}} // by id
	used := map[int64]bool{}
	insert := func(tb string, n int) {
		for range n {
			row := modelRow{cpu: 1 + r.Int64N(8), mem: 1 + r.Int64N(64)}
			for row.prio == 0 || used[row.prio] {
				row.prio = 1 + r.Int64N(1_000_000)
			}
			used[row.prio] = true
			res, err := db.Exec("INSERT INTO "+tb+" (priority, cpu, mem) VALUES (?, ?, ?)", row.prio, row.cpu, row.mem)
			require.NoError(t, err)
			id, err := res.LastInsertId()
			require.NoError(t, err)
			model[tb][id] = row
		}
	}
	best := func(tb string, desc bool, cpu, mem int64) (int64, bool) {
		var id int64
		found := false
		for k, row := range model[tb] {
			if row.cpu > cpu || row.mem > mem {
				continue
			}
			if !found || desc && row.prio > model[tb][id].prio || !desc && row.prio < model[tb][id].prio {
				id, found = k, true
			}
		}
		return id, found
	}
	insert("ma", 300)
	insert("mb", 100)
	for step := range 600 {
		tb := tables[r.IntN(2)]
		desc := r.IntN(2) == 0
		order := map[bool]string{false: "ASC", true: "DESC"}[desc]
		cpu, mem := 1+r.Int64N(8), 1+r.Int64N(64)
		want, ok := best(tb, desc, cpu, mem)
		var id int64
		var err error
		switch x := r.IntN(20); {
		case x < 2:
			insert(tb, 1+r.IntN(3))
			continue
		case x < 3:
			// DDL between pops, in the same executor.
			_, err = db.Exec("CREATE TABLE mc (priority INT NOT NULL, cpu INT NOT NULL, mem INT NOT NULL, INDEX fit (cpu, mem))")
			require.NoError(t, err)
			_, err = db.Exec("INSERT INTO mc (priority, cpu, mem) VALUES (1, 1, 1)")
			require.NoError(t, err)
			_, err = db.Exec("DROP TABLE mc")
			require.NoError(t, err)
			continue
		case x < 5:
			var lease int64
			err = db.QueryRow("SELECT id, _lease FROM "+tb+" WHERE cpu <= ? AND mem <= ? ORDER BY priority "+order+" LIMIT 1 FOR LEASE ?", cpu, mem, time.Hour).Scan(&id, &lease)
			if err == nil {
				res, err := db.Exec("DELETE FROM "+tb+" WHERE id = ? AND _lease = ?", id, lease)
				require.NoError(t, err)
				n, err := res.RowsAffected()
				require.NoError(t, err)
				require.Equal(t, int64(1), n)
			}
		default:
			err = db.QueryRow("SELECT id FROM "+tb+" WHERE cpu <= ? AND mem <= ? ORDER BY priority "+order+" LIMIT 1 FOR POP", cpu, mem).Scan(&id)
		}
		if !ok {
			require.ErrorIs(t, err, sql.ErrNoRows, "step %d: %s took %d, none fits (%d, %d)", step, tb, id, cpu, mem)
			continue
		}
		if errors.Is(err, sql.ErrNoRows) {
			require.Failf(t, "no row", "step %d: %s took none, want %d %v (limits %d, %d)", step, tb, want, model[tb][want], cpu, mem)
		}
		require.NoError(t, err)
		require.Equal(t, want, id, "step %d: %s %s limits (%d, %d): took %v, want %v", step, tb, order, cpu, mem, model[tb][id], model[tb][want])
		delete(model[tb], id)
	}
	for _, tb := range tables {
		require.Equal(t, int64(len(model[tb])), count(t, db, tb))
	}
}
