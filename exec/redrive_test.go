package exec_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/exec"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
)

// TestInsertSelectUnknownResult: an INSERT ... SELECT ... FOR POP whose
// commit was applied but reported commit_unknown_result is retried, and
// the retry finds the statement's receipt: it reports what the applied
// attempt did (its count and last id) without moving more rows, and the
// rows moved once. An attempt that was not applied moves them again, as
// if it were the first.
func TestInsertSelectUnknownResult(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	s := &scripted{Database: uncertain{db}}
	e := exec.New(s, nil)
	mustRun(t, e, "CREATE TABLE jobs (v INT)")
	mustRun(t, e, "CREATE TABLE jobs_dead (v INT)")
	mustRun(t, e, "INSERT INTO jobs_dead (v) VALUES (1), (2), (3), (4), (5)")

	for _, errs := range [][]error{
		{kv.ErrCommitUnknownResult},                            // applied, then found by the retry
		{kv.ErrNotCommitted, kv.ErrCommitUnknownResult},        // a conflict first
		{kv.ErrCommitUnknownResult, kv.ErrCommitUnknownResult}, // the retry's own answer lost too
	} {
		s.calls.Store(0)
		s.errs = errs
		res := mustRun(t, e, "INSERT INTO jobs (v) SELECT v FROM jobs_dead LIMIT 1 FOR POP")
		require.Equal(t, int64(1), res.RowsAffected)
		s.errs = nil
		got := mustRun(t, e, "SELECT id FROM jobs WHERE id = ?", res.LastInsertID)
		require.Len(t, got.Rows, 1, "LastInsertId names the row inserted")
	}
	require.Equal(t, [][]any{{int64(3)}}, mustRun(t, e, "SELECT COUNT(*) FROM jobs").Rows, "each statement moved one row, once")
	require.Equal(t, [][]any{{int64(2)}}, mustRun(t, e, "SELECT COUNT(*) FROM jobs_dead").Rows)
	vals := mustRun(t, e, "SELECT v FROM jobs")
	require.Equal(t, [][]any{{int64(1)}, {int64(2)}, {int64(3)}}, vals.Rows, "in order, none twice")
}
