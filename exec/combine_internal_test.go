package exec

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/parser"
)

// TestGroupDropsEndedStatementsBeforeRetry: a group's attempt fails on a
// conflict, and one of its statements' contexts ends before the next: a
// forwarded pop whose caller lost its connection, and may have settled
// its token as unapplied. The next attempt runs without it, which took
// nothing; run again, it would have taken a row no one receives.
func TestGroupDropsEndedStatementsBeforeRetry(t *testing.T) {
	t.Parallel()
	mem := embedded.Open("", embedded.Config{})
	t.Cleanup(func() { _ = mem.Close() })
	d := &conflictOnce{Database: mem}
	e := New(d, []byte("c"))
	auto := func(ctx context.Context, q string) (*Result, error) {
		p, err := parser.Parse(q)
		require.NoError(t, err)
		return e.Auto(ctx, p, Args{})
	}
	_, err := auto(context.Background(), "CREATE TABLE t (priority INT NOT NULL, cpu INT NOT NULL, mem INT NOT NULL)")
	require.NoError(t, err)

	bound := func(q string) *bound {
		p, err := parser.Parse(q)
		require.NoError(t, err)
		b, err := e.bind(context.Background(), p, Args{})
		require.NoError(t, err)
		return b
	}
	ctxB, cancelB := context.WithCancel(context.Background())
	defer cancelB()
	group := []*combineReq{
		{ctx: context.Background(), b: bound("INSERT INTO t (priority, cpu, mem) VALUES (1, 1, 1)")},
		{ctx: ctxB, b: bound("INSERT INTO t (priority, cpu, mem) VALUES (2, 2, 2)")},
	}
	d.onConflict = cancelB // between the two attempts
	d.armed.Store(true)
	e.runGroup(group, nil)
	require.False(t, d.armed.Load(), "the first attempt's commit conflicted")
	require.NoError(t, group[0].err)
	require.ErrorIs(t, group[1].err, context.Canceled)

	res, err := auto(context.Background(), "SELECT priority FROM t")
	require.NoError(t, err)
	require.Len(t, res.Rows, 1, "the statement whose context ended ran again")
	require.EqualValues(t, 1, res.Rows[0][0])
}

// conflictOnce is a database whose next commit, once armed, fails with a
// conflict (not_committed) after calling onConflict.
type conflictOnce struct {
	kv.Database
	armed      atomic.Bool
	onConflict func()
}

func (*conflictOnce) CertainCommits() bool { return true }

func (d *conflictOnce) CreateTransaction(ctx context.Context) (kv.Transaction, error) {
	tr, err := d.Database.CreateTransaction(ctx)
	return &conflictTxn{Transaction: tr, d: d}, err
}

type conflictTxn struct {
	kv.Transaction
	d *conflictOnce
}

func (t *conflictTxn) Commit() error {
	if t.d.armed.CompareAndSwap(true, false) {
		t.d.onConflict()
		return kv.ErrNotCommitted
	}
	return t.Transaction.Commit()
}
