package exec_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

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
