package exec_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/exec"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/parser"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// TestRunsUnderFaults: three executors on one engine whose commits fail
// with not_committed and commit_unknown_result, applied or not. Two
// clients insert batches of 16 to 40 rows (filed under runs, not an id
// index key each); the others take rows by id while the batches come: a
// lease and its ack by id and lease, a DELETE by id of a row a scan
// found, and pops. Then one more batch, and the rows left are deleted by
// id alone, each found by id. Every row inserted is taken exactly once,
// and the table's indexes agree with its rows.
func TestRunsUnderFaults(t *testing.T) {
	t.Parallel()
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			runsUnderFaults(t, seed)
		})
	}
}

func runsUnderFaults(t *testing.T, seed uint64) {
	db := embedded.Open("", embedded.Config{Faults: &embedded.Faults{
		Seed: seed, Conflict: 0.1, UnknownApplied: 0.1, UnknownNotApplied: 0.1,
	}})
	t.Cleanup(func() { _ = db.Close() })
	root := []byte("r")
	execs := []*exec.Executor{exec.New(db, root), exec.New(db, root), exec.New(db, root)}
	ctx := context.Background()
	// run runs a statement from any goroutine: a failure is reported
	// (t.Errorf), and the loops stop once the test failed.
	run := func(e *exec.Executor, sql string, args ...any) *exec.Result {
		p, err := parser.Parse(sql)
		if !assert.NoError(t, err) {
			return &exec.Result{}
		}
		res, err := e.Auto(ctx, p, exec.Args{Positional: args})
		if !assert.NoError(t, err, sql) {
			return &exec.Result{}
		}
		return res
	}
	run(execs[0], "CREATE TABLE q (priority INT NOT NULL, v INT NOT NULL)")

	var mu sync.Mutex
	taken := map[int64]int{}
	take := func(v int64) {
		mu.Lock()
		taken[v]++
		mu.Unlock()
	}
	const inserters, batches = 2, 12
	var inserted []int64
	var insertersDone sync.WaitGroup
	for i := range inserters {
		insertersDone.Go(func() {
			e := execs[i%len(execs)]
			for b := range batches {
				n := 16 + (i*batches+b)%25
				values := make([]string, n)
				var vs []int64
				for j := range values {
					v := int64(i*1_000_000 + b*1_000 + j)
					values[j] = fmt.Sprintf("(%d, %d)", j%4, v)
					vs = append(vs, v)
				}
				run(e, "INSERT INTO q (priority, v) VALUES "+strings.Join(values, ", "))
				mu.Lock()
				inserted = append(inserted, vs...)
				mu.Unlock()
			}
		})
	}
	stop := make(chan struct{})
	var draining atomic.Bool
	var takersDone sync.WaitGroup
	takers := []func(e *exec.Executor) int{
		func(e *exec.Executor) int { // a lease, then its ack by id
			rows := run(e, "SELECT id, _lease, v FROM q ORDER BY priority DESC LIMIT 3 FOR LEASE 60").Rows
			for _, r := range rows {
				// 0 rows when the scan's taker deleted the leased row
				// first: it counted it.
				if run(e, "DELETE FROM q WHERE id = ? AND _lease = ?", r[0], r[1]).RowsAffected == 1 {
					take(r[2].(int64))
				}
			}
			return len(rows)
		},
		func(e *exec.Executor) int { // a DELETE by id of a row a scan found
			rows := run(e, "SELECT id, v FROM q LIMIT 8").Rows
			if len(rows) == 0 {
				return 0
			}
			r := rows[len(rows)/2]
			found := run(e, "SELECT v FROM q WHERE id = ?", r[0]).Rows
			deleted := run(e, "DELETE FROM q WHERE id = ?", r[0]).RowsAffected
			if draining.Load() { // nothing else takes rows: the scan's row is there
				assert.Equal(t, [][]any{{r[1]}}, found, "id %v by id", r[0])
				assert.Equal(t, int64(1), deleted, "id %v deleted by id", r[0])
			}
			if deleted == 1 {
				take(r[1].(int64))
			}
			return 1
		},
		func(e *exec.Executor) int { // pops
			rows := run(e, "SELECT v FROM q LIMIT 2 FOR POP").Rows
			for _, r := range rows {
				take(r[0].(int64))
			}
			return len(rows)
		},
	}
	for k, taker := range takers {
		takersDone.Go(func() {
			e := execs[(k+1)%len(execs)]
			for {
				select {
				case <-stop:
					return
				default:
				}
				if t.Failed() {
					return
				}
				taker(e)
			}
		})
	}
	insertersDone.Wait()
	close(stop)
	takersDone.Wait()
	// Then one more batch, and the rows left, by id, alone.
	last := make([]string, 20)
	for j := range last {
		last[j] = fmt.Sprintf("(%d, %d)", j%4, 9_000_000+j)
		inserted = append(inserted, int64(9_000_000+j))
	}
	run(execs[1], "INSERT INTO q (priority, v) VALUES "+strings.Join(last, ", "))
	require.Positive(t, runKeys(t, db, execs[0]), "the batches' rows are filed under runs")
	draining.Store(true)
	for !t.Failed() && takers[1](execs[0]) > 0 {
	}
	require.False(t, t.Failed())
	require.Empty(t, run(execs[0], "SELECT v FROM q").Rows)
	require.Len(t, inserted, len(taken), "rows taken")
	for _, v := range inserted {
		require.Equal(t, 1, taken[v], "row %d taken", v)
	}
	require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		tables, err := execs[0].TablesIn(tr)
		for _, tb := range tables {
			if err == nil {
				err = tb.Queue.Check(tr)
			}
		}
		return err
	}))
}

// runKeys counts the run keys (queues/runs.go: tag 20 under a table's
// queue) of e's tables.
func runKeys(t *testing.T, db kv.Database, e *exec.Executor) int {
	t.Helper()
	n := 0
	require.NoError(t, db.ReadTransact(context.Background(), func(tr kv.ReadTransaction) error {
		tables, err := e.TablesIn(tr)
		for _, tb := range tables {
			if err != nil {
				break
			}
			r := tb.Queue.Range()
			var rows []kv.KeyValue
			if rows, err = kv.Collect(tr.GetRange(r, kv.RangeOptions{Mode: kv.StreamingModeWantAll})); err != nil {
				break
			}
			for _, e := range rows {
				if tag, _, terr := tuple.DecodeInt(e.Key[len(r.Begin):]); terr == nil && tag == runsTag {
					n++
				}
			}
		}
		return err
	}))
	return n
}

// runsTag is the runs' tag in a queue's keys (queues/layout.go).
const runsTag = 20
