package exec_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/exec"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/parser"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// downgrade rewrites table's rows (a table without INDEX) as a version
// before statistics wrote them, without pushed_at and held, and removes
// its counts and the mark of exact statistics, keeping its counters.
func downgrade(t *testing.T, e *exec.Executor, table string) {
	t.Helper()
	require.NoError(t, e.DB().Transact(bg, func(tr kv.Transaction) error {
		tables, err := e.TablesIn(tr)
		if err != nil {
			return err
		}
		var prefix []byte
		for _, tb := range tables {
			if tb.Name == table {
				prefix = tb.Queue.Range().Begin
			}
		}
		require.NotNil(t, prefix, table)
		key := func(elems ...any) []byte { return append(append([]byte{}, prefix...), tuple.Tuple(elems).Pack()...) }
		for _, tag := range []int64{0, 13} {
			rows, err := kv.Collect(tr.GetRange(kv.PrefixRange(key(tag)), kv.RangeOptions{}))
			if err != nil {
				return err
			}
			for _, r := range rows {
				// The record (queues/layout.go): tuple integers, then
				// 0xfe and the value; written before statistics, the
				// value as a packed byte string, then visible_at, lease
				// and attempts if any is set.
				var ints []int64
				rest := r.Value
				for rest[0] != 0xfe {
					var n int64
					n, rest, err = tuple.DecodeInt(rest)
					require.NoError(t, err)
					ints = append(ints, n)
				}
				old := tuple.Tuple{rest[1:]}
				switch len(ints) {
				case 1: // pushed_at
				case 5: // visible_at, lease, attempts, pushed_at, held
					old = append(old, ints[0], ints[1], ints[2])
				default:
					t.Fatalf("a record with %d integers: %x", len(ints), r.Value)
				}
				tr.Set(r.Key, old.Pack())
			}
		}
		tr.ClearRange(kv.Range{Begin: key(int64(17), int64(1)), End: key(int64(17), int64(5))})
		return nil
	}))
}

// TestQueuesMigration: a table from before statistics has NULL gauges
// inside a transaction; its first read in autocommit migrates it, and
// then says what its rows say.
func TestQueuesMigration(t *testing.T) {
	t.Parallel()
	e := newExec(t, tuple.Tuple{"fdbqueue"}.Pack())
	mustRun(t, e, "CREATE TABLE jobs (priority INT NOT NULL, v TEXT)")
	start := time.Now()
	for i := range 2500 { // more than a migration's batch
		mustRun(t, e, "INSERT INTO jobs VALUES (?, 'v')", int64(i%5))
	}
	mustRun(t, e, "INSERT INTO jobs (priority, v, _visible_at) VALUES (1, 'later', NOW() + INTERVAL 1 HOUR)")
	mustRun(t, e, "SELECT id FROM jobs LIMIT 3 FOR LEASE 60")
	mustRun(t, e, "SELECT id FROM jobs LIMIT 2 FOR POP")
	downgrade(t, e, "jobs")

	// Inside a transaction: the counters and rows, no gauges.
	p, err := parser.Parse("SELECT name, rows, visible, delayed, leased, oldest_visible_age_s, pushed, popped, leased_total, stats_since FROM fdbqueue_queues")
	require.NoError(t, err)
	tr, err := e.DB().CreateTransaction(bg)
	require.NoError(t, err)
	res, err := e.Exec(tr, p, exec.Args{})
	require.NoError(t, err)
	tr.Cancel()
	require.Equal(t, [][]any{{"jobs", int64(2499), nil, nil, nil, nil, int64(2501), int64(2), int64(3), nil}}, res.Rows)

	// In autocommit: migrated, in batches, then exact.
	res = mustRun(t, e, "SELECT name, rows, visible, delayed, leased, oldest_visible_age_s, pushed, popped, leased_total FROM fdbqueue_queues")
	// The oldest visible row was pushed since start: its age in whole
	// seconds is at most the time the test has run (the inserts take
	// over a second on a loaded machine), counted from the start's whole
	// second, as the statistics count a row from the second it became
	// visible (a row pushed at 10.9 s is 1 s old at 11.2 s).
	require.Len(t, res.Rows, 1)
	age := res.Rows[0][5]
	require.IsType(t, int64(0), age)
	require.GreaterOrEqual(t, age.(int64), int64(0))
	require.LessOrEqual(t, age.(int64), int64(time.Since(start.Truncate(time.Second)).Seconds()))
	res.Rows[0][5] = int64(0)
	require.Equal(t, [][]any{{"jobs", int64(2499), int64(2495), int64(1), int64(3), int64(0), int64(2501), int64(2), int64(3)}}, res.Rows)
	since := mustRun(t, e, "SELECT stats_since FROM fdbqueue_queues").Rows[0][0]
	require.IsType(t, time.Time{}, since)
	// A table dropped and created again starts exact.
	mustRun(t, e, "DROP TABLE jobs")
	mustRun(t, e, "CREATE TABLE jobs (v TEXT)")
	tr, err = e.DB().CreateTransaction(bg)
	require.NoError(t, err)
	defer tr.Cancel()
	res, err = e.Exec(tr, p, exec.Args{})
	require.NoError(t, err)
	require.Equal(t, int64(0), res.Rows[0][2], "visible")
}
