package exec_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/exec"
	"github.com/fdbqueue/fdbqueue/kv"
)

// ids returns the ids of table's rows, in id order.
func ids(t *testing.T, e *exec.Executor, table string) []int64 {
	t.Helper()
	var out []int64
	for _, r := range mustRun(t, e, "SELECT id FROM "+table).Rows {
		out = append(out, r[0].(int64))
	}
	slices.Sort(out)
	return out
}

// valuesList is "(?), (?), ..." for n rows of one value each.
func valuesList(n int) string {
	return strings.TrimSuffix(strings.Repeat("(?), ", n), ", ")
}

// TestAssignedIDsAreSmall: assigned ids count from 1, consecutive within
// an INSERT, and a second client (an executor of its own) takes a block
// of its own after the first's.
func TestAssignedIDsAreSmall(t *testing.T) {
	t.Parallel()
	a := newExec(t, []byte("r"))
	b := exec.New(a.DB(), []byte("r"))
	mustRun(t, a, "CREATE TABLE q (v INT)")
	res := mustRun(t, a, "INSERT INTO q (v) VALUES (1), (2), (3)")
	require.Equal(t, int64(3), res.LastInsertID)
	res = mustRun(t, b, "INSERT INTO q (v) VALUES (4), (5)")
	require.Equal(t, int64(1024+2), res.LastInsertID)
	res = mustRun(t, a, "INSERT INTO q (v) VALUES (6)")
	require.Equal(t, int64(4), res.LastInsertID)
	require.Equal(t, []int64{1, 2, 3, 4, 1025, 1026}, ids(t, a, "q"))
}

// TestAssignedIDsPastGivenOnes: ids an INSERT gave (a restore's) lie in
// the block a client holds, or ahead of the counter; the client's next
// INSERTs are handed some of them, find them taken, and push again above
// the table's ids: every INSERT succeeds, no row is lost or doubled.
func TestAssignedIDsPastGivenOnes(t *testing.T) {
	t.Parallel()
	a := newExec(t, []byte("r"))
	restore := exec.New(a.DB(), []byte("r"))
	mustRun(t, a, "CREATE TABLE q (v INT)")
	mustRun(t, a, "INSERT INTO q (v) VALUES (0)") // a holds [1, 1025)
	given := make([]any, 0, 3000)
	for id := 2; id <= 3001; id++ {
		given = append(given, int64(id))
	}
	mustRun(t, restore, "INSERT INTO q (id) VALUES "+valuesList(len(given)), given...)

	res := mustRun(t, a, "INSERT INTO q (v) VALUES (1), (2), (3)")
	require.Greater(t, res.LastInsertID, int64(3001+2))
	// Concurrent single-row INSERTs (combined into shared
	// transactions), from a client whose block is now past the given
	// ids, and from one handed given ids.
	other := exec.New(a.DB(), []byte("r"))
	mustRun(t, restore, "INSERT INTO q (id) VALUES (4000), (4001)")
	var wg sync.WaitGroup
	for g := range 8 {
		e := a
		if g%2 == 1 {
			e = other
		}
		wg.Go(func() {
			for i := range 20 {
				if _, err := run(t, e, "INSERT INTO q (v) VALUES (?)", int64(100*g+i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	got := ids(t, a, "q")
	require.Len(t, got, 1+3000+3+2+160)
	require.Equal(t, len(got), len(slices.Compact(slices.Clone(got))))
	require.Equal(t, int64(len(got)), mustRun(t, a, "SELECT COUNT(*) FROM q").Rows[0][0])
}

// TestAssignedIDsBesideDrawnOnes: a table given an id an earlier version
// drew at random (above 2^53; a restore of its rows) does not send the
// counter up there: past a run of given ids, assigned ids stay small.
func TestAssignedIDsBesideDrawnOnes(t *testing.T) {
	t.Parallel()
	a := newExec(t, []byte("r"))
	mustRun(t, a, "CREATE TABLE q (v INT)")
	mustRun(t, a, "INSERT INTO q (v) VALUES (0)") // a holds [1, 1025)
	mustRun(t, a, "INSERT INTO q (id) VALUES (?), (2), (3), (4)", int64(1)<<60+12345)
	mustRun(t, a, "INSERT INTO q (v) VALUES (1), (2), (3)")
	got := ids(t, a, "q")
	require.Len(t, got, 8)
	require.Less(t, got[len(got)-2], int64(1<<32), "%v", got)
}

// TestAssignedIDsInATransaction: inside an explicit transaction too, an
// INSERT handed a taken id pushes again, and its rows commit with the
// transaction.
func TestAssignedIDsInATransaction(t *testing.T) {
	t.Parallel()
	a := newExec(t, []byte("r"))
	mustRun(t, a, "CREATE TABLE q (v INT)")
	mustRun(t, a, "INSERT INTO q (v) VALUES (0)")
	mustRun(t, exec.New(a.DB(), []byte("r")), "INSERT INTO q (id) VALUES (2), (3)")
	require.NoError(t, a.DB().Transact(bg, func(tr kv.Transaction) error {
		for i := range 3 {
			if _, err := execIn(t, a, tr, fmt.Sprintf("INSERT INTO q (v) VALUES (%d)", i)); err != nil {
				return err
			}
		}
		return nil
	}))
	require.Equal(t, []int64{1, 2, 3, 4, 5, 6}, ids(t, a, "q"))
}

// TestAssignedIDsPastARestore: a restore into a fresh database gives ids
// an earlier version drew (above 2^53) beside small ones, in one INSERT:
// the counter goes past the small ones, so no client is handed one of
// them, in that table or another.
func TestAssignedIDsPastARestore(t *testing.T) {
	t.Parallel()
	restore := newExec(t, []byte("r"))
	mustRun(t, restore, "CREATE TABLE q (v INT)")
	mustRun(t, restore, "CREATE TABLE other (v INT)")
	mustRun(t, restore, "INSERT INTO q (id, v) VALUES (?, 0), (1, 1), (35, 2), (3, 3)", int64(1)<<60+7)
	e := exec.New(restore.DB(), []byte("r"))
	res := mustRun(t, e, "INSERT INTO other (v) VALUES (1), (2)")
	require.Greater(t, res.LastInsertID-1, int64(35), "the first id assigned after the restore")
	res = mustRun(t, e, "INSERT INTO q (v) VALUES (1), (2)")
	require.Greater(t, res.LastInsertID-1, int64(35))
	require.Less(t, res.LastInsertID, int64(1<<32))
}

// TestAssignedIDsPastSparseGivenOnes: ids given sparsely (every other one,
// as a queue's survivors are) inside a client's block, in a table that
// also holds an id an earlier version drew: one push again goes past them
// all.
func TestAssignedIDsPastSparseGivenOnes(t *testing.T) {
	t.Parallel()
	a := newExec(t, []byte("r"))
	mustRun(t, a, "CREATE TABLE q (v INT)")
	mustRun(t, a, "INSERT INTO q (v) VALUES (0)") // a holds [1, 1025)
	given := []any{int64(1)<<60 + 7}
	for id := int64(3); id <= 1001; id += 2 {
		given = append(given, id)
	}
	mustRun(t, exec.New(a.DB(), []byte("r")), "INSERT INTO q (id) VALUES "+valuesList(len(given)), given...)
	res := mustRun(t, a, "INSERT INTO q (v) VALUES (1), (2), (3), (4)")
	require.Equal(t, int64(1005), res.LastInsertID)
	got := ids(t, a, "q")
	require.Len(t, got, 1+len(given)+4)
	require.Equal(t, len(got), len(slices.Compact(slices.Clone(got))))
}

// TestDeadLetterTakesANewIDIfItsIsTaken: a dead-letter table given an id
// (a restore's) that a client's block still held; the client's row of
// that id, leased past MAX_ATTEMPTS, moves to the dead letters with a new
// id, where it would have stopped every lease of its table.
func TestDeadLetterTakesANewIDIfItsIsTaken(t *testing.T) {
	t.Parallel()
	a := newExec(t, []byte("r"))
	mustRun(t, a, "CREATE TABLE jobs (v INT) MAX_ATTEMPTS=1") // and jobs_dead
	mustRun(t, a, "INSERT INTO jobs (v) VALUES (0)")          // a holds [1, 1025)
	mustRun(t, exec.New(a.DB(), []byte("r")), "INSERT INTO jobs_dead (id, v) VALUES (2, 100)")
	res := mustRun(t, a, "INSERT INTO jobs (v) VALUES (5)")
	require.Equal(t, int64(2), res.LastInsertID)
	require.Len(t, mustRun(t, a, "SELECT v FROM jobs LIMIT 2 FOR LEASE 0.01").Rows, 2)
	time.Sleep(50 * time.Millisecond) // the leases end
	require.Empty(t, mustRun(t, a, "SELECT v FROM jobs LIMIT 2 FOR LEASE 30").Rows, "both moved to jobs_dead")
	rows := mustRun(t, a, "SELECT id, v FROM jobs_dead").Rows
	require.Len(t, rows, 3)
	byV := map[int64]int64{}
	for _, r := range rows {
		byV[r[1].(int64)] = r[0].(int64)
	}
	require.Equal(t, int64(1), byV[0], "a dead letter keeps its id")
	require.Equal(t, int64(2), byV[100])
	require.Greater(t, byV[5], int64(2), "the row whose id was taken got a new one")
}
