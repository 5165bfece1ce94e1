package exec_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/exec"
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
