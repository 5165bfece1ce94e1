package exec_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/exec"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/parser"
)

// scripted wraps an engine so that its commits, in order, report the given
// errors: a maybe-committed one after committing for real, any other
// without committing.
type scripted struct {
	kv.Database
	errs  []error
	calls atomic.Int64
}

func (s *scripted) CreateTransaction(ctx context.Context) (kv.Transaction, error) {
	tr, err := s.Database.CreateTransaction(ctx)
	return scriptedTx{Transaction: tr, s: s}, err
}

type scriptedTx struct {
	kv.Transaction
	s *scripted
}

func (t scriptedTx) Commit() error {
	n := int(t.s.calls.Add(1)) - 1
	if n >= len(t.s.errs) {
		return t.Transaction.Commit()
	}
	err := t.s.errs[n]
	if kv.IsMaybeCommitted(err) {
		if cerr := t.Transaction.Commit(); cerr != nil {
			return cerr
		}
	}
	return err
}

// TestMaybeCommittedSurvivesLaterErrors: an autocommit statement whose
// attempt was applied but reported commit_unknown_result, and whose next
// attempt then failed for another reason (here transaction_timed_out), was
// perhaps applied: its error says so (IsMaybeCommitted), though the error
// that ended it is another.
func TestMaybeCommittedSurvivesLaterErrors(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	s := &scripted{Database: db}
	e := exec.New(s, nil)
	run := func(sql string) error {
		p, err := parser.Parse(sql)
		require.NoError(t, err)
		_, err = e.Auto(context.Background(), p, exec.Args{})
		return err
	}
	require.NoError(t, run("CREATE TABLE q (v INT)"))
	s.calls.Store(0)
	s.errs = []error{kv.ErrCommitUnknownResult, kv.ErrTransactionTimedOut}
	err := run("INSERT INTO q (v) VALUES (1), (2)")
	require.ErrorIs(t, err, kv.ErrTransactionTimedOut)
	require.True(t, kv.IsMaybeCommitted(err), "the first attempt may have been applied: %v", err)
	require.False(t, kv.IsRetryableNotCommitted(err))

	s.errs = nil
	p, err := parser.Parse("SELECT COUNT(*) FROM q")
	require.NoError(t, err)
	res, err := e.Auto(context.Background(), p, exec.Args{})
	require.NoError(t, err)
	require.Equal(t, int64(2), res.Rows[0][0], "it was applied")
}
