package exec_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/exec"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/parser"
)

// TestFitPopLimitNWithinTransactionLimit: SELECT ... WHERE cpu <= ? AND
// mem <= ? LIMIT n FOR POP pops n rows in one pass. Every engine operation
// is charged 100µs on the engine's clock, so a statement that searched from
// the head once per row (O(n²) reads) would pass the 5-second limit and
// retry (transaction_too_old) until the context ends.
func TestFitPopLimitNWithinTransactionLimit(t *testing.T) {
	t.Parallel()
	var ops atomic.Int64
	start := time.Now()
	db := embedded.Open("", embedded.Config{Clock: func() time.Time {
		return start.Add(time.Duration(ops.Add(1)) * 100 * time.Microsecond)
	}})
	defer db.Close()
	e := exec.New(db, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	run := func(sql string, args ...any) *exec.Result {
		p, err := parser.Parse(sql)
		require.NoError(t, err)
		res, err := e.Auto(ctx, p, exec.Args{Positional: args})
		require.NoError(t, err)
		return res
	}
	run("CREATE TABLE tasks (priority INT NOT NULL, cpu INT NOT NULL, mem INT NOT NULL, INDEX fit (cpu, mem))")
	const n = 4000
	for i := 0; i < 2*n; i += 100 {
		vals := ""
		var args []any
		for j := i; j < i+100; j++ {
			if vals != "" {
				vals += ", "
			}
			vals += "(?, ?, ?)"
			args = append(args, int64(j%10), int64(1+j%8), int64(1+j%32))
		}
		run("INSERT INTO tasks (priority, cpu, mem) VALUES "+vals, args...)
	}
	res := run("SELECT id FROM tasks WHERE cpu <= 8 AND mem <= 32 ORDER BY priority DESC LIMIT ? FOR POP", int64(n))
	require.Len(t, res.Rows, n)
}

// TestTooLongGivesUp: a statement that cannot finish inside the 5-second
// transaction limit fails after a few attempts with transaction_too_old
// and what to do instead, rather than retrying for as long as its context
// allows. Every engine operation costs 100µs on the engine's clock, and a
// DELETE that matches 60,000 rows one by one needs about 12 s of them.
func TestTooLongGivesUp(t *testing.T) {
	t.Parallel()
	var ops atomic.Int64
	start := time.Now()
	clock := func() time.Time {
		return start.Add(time.Duration(ops.Add(1)) * 100 * time.Microsecond)
	}
	db := embedded.Open("", embedded.Config{Clock: clock})
	defer db.Close()
	e := exec.New(db, nil, exec.WithClock(clock)) // the statement's time is the engine's
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := func(sql string, args ...any) (*exec.Result, error) {
		p, err := parser.Parse(sql)
		require.NoError(t, err)
		return e.Auto(ctx, p, exec.Args{Positional: args})
	}
	_, err := run("CREATE TABLE t (v INT)")
	require.NoError(t, err)
	for i := 0; i < 60_000; i += 1000 {
		vals := "(?)" + strings.Repeat(", (?)", 999)
		args := make([]any, 1000)
		for j := range args {
			args[j] = int64(i + j)
		}
		_, err := run("INSERT INTO t (v) VALUES "+vals, args...)
		require.NoError(t, err)
	}
	before := ops.Load()
	_, err = run("DELETE FROM t WHERE v >= 0")
	require.ErrorIs(t, err, kv.ErrTransactionTooOld)
	require.ErrorContains(t, err, "3 times in a row")
	require.ErrorContains(t, err, "smaller statements")
	require.NoError(t, ctx.Err(), "it gave up on its own")
	require.Less(t, ops.Load()-before, int64(4*60_000*3), "about three attempts, not a thousand")
}
