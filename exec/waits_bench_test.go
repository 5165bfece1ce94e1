package exec_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/exec"
	"github.com/fdbqueue/fdbqueue/internal/fdbmodel"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/parser"
)

// The statements of docs/foundationdb.md's table of waits, on 100,000-row
// tables, on a modeled FoundationDB cluster (internal/fdbmodel): what
// testdata/waits pins on small tables, measured on large ones.
// Each benchmark reports the waits of its statement (mean, median, p99,
// max), their kinds (mean) and the requests sent (mean). Measured, not
// asserted: ns/op is the embedded engine's CPU, not a cluster's latency.
//
//	go test -run - -bench FDBWaits -benchtime 2000x ./exec/
//
// The steady state is a queue that has run for a while under consumers of
// mixed sizes: 100,000 random tasks, then waitsWarmup rounds of a fit pop
// with random limits and an INSERT of a random task, then the measured
// rounds of the same.
func BenchmarkFDBWaits(b *testing.B) {
	for _, w := range waitsWorkloads(waitsScale{rows: 100_000, fifo: 30_000, priority: 20_000, warmup: waitsWarmup}) {
		b.Run(w.name, func(b *testing.B) {
			ws := newWaitsWorld(b)
			op := w.setup(ws)
			var samples []fdbmodel.Counts
			for b.Loop() {
				samples = append(samples, op())
			}
			reportWaits(b, samples)
		})
	}
}

// waitsWarmup is how many pop-and-insert rounds make the steady state: the
// study behind the table saw the median settle after about 5,000.
const waitsWarmup = 10_000

// TestFDBWaitsWorkloads runs each of BenchmarkFDBWaits's workloads a few
// times on small tables, so that they keep working between the runs of
// the benchmark.
func TestFDBWaitsWorkloads(t *testing.T) {
	t.Parallel()
	for _, w := range waitsWorkloads(waitsScale{rows: 300, fifo: 50, priority: 50, warmup: 20}) {
		ws := newWaitsWorld(t)
		op := w.setup(ws)
		for range 3 {
			c := op()
			require.Positive(t, c.Waits(), w.name)
			require.Equal(t, 1, c.Attempts, w.name)
		}
	}
}

// waitsScale is the size of a run's tables.
type waitsScale struct {
	rows, fifo, priority, warmup int
}

// A waitsWorkload builds its tables, and returns its measured statement:
// each call runs one (and whatever keeps the tables steady, uncounted) and
// returns what it cost.
type waitsWorkload struct {
	name  string
	setup func(ws *waitsWorld) func() fdbmodel.Counts
}

const waitsTaskDDL = "CREATE TABLE %s (priority INT NOT NULL, cpu INT NOT NULL, mem INT NOT NULL, payload BLOB, INDEX fit (cpu, mem))"

func fitPopSQL(table string, n int, lease bool) string {
	take := "FOR POP"
	if lease {
		take = "FOR LEASE 30"
	}
	return fmt.Sprintf("SELECT id, _lease, payload FROM %s WHERE cpu <= ? AND mem <= ? ORDER BY priority LIMIT %d %s", table, n, take)
}

func waitsWorkloads(sc waitsScale) []waitsWorkload {
	tasks := func(ws *waitsWorld) {
		ws.exec(fmt.Sprintf(waitsTaskDDL, "tasks"))
		ws.insertTasks("tasks", sc.rows)
	}
	// fifoPop pops n rows of a FIFO queue, and pushes as many back.
	fifoPop := func(n int) func(ws *waitsWorld) func() fdbmodel.Counts {
		return func(ws *waitsWorld) func() fdbmodel.Counts {
			ws.exec("CREATE TABLE t (payload BLOB)")
			ws.insertFIFO(sc.fifo)
			pop := fmt.Sprintf("SELECT id, payload FROM t LIMIT %d FOR POP", n)
			return func() fdbmodel.Counts {
				c := ws.exec(pop)
				ws.insertFIFO(n)
				return c
			}
		}
	}
	return []waitsWorkload{
		{"create-table", func(ws *waitsWorld) func() fdbmodel.Counts {
			n := 0
			return func() fdbmodel.Counts {
				n++
				return ws.exec(fmt.Sprintf(waitsTaskDDL, fmt.Sprintf("t%d", n)))
			}
		}},
		{"insert-1", func(ws *waitsWorld) func() fdbmodel.Counts {
			tasks(ws)
			return func() fdbmodel.Counts { return ws.insertTasks("tasks", 1) }
		}},
		{"insert-100", func(ws *waitsWorld) func() fdbmodel.Counts {
			// One row first, as insert-1's table has: the executor's
			// first INSERT reserves its first block of ids (queues.IDs)
			// in a transaction of its own, which the later ones do
			// once in hundreds.
			ws.exec(fmt.Sprintf(waitsTaskDDL, "tasks"))
			ws.insertTasks("tasks", 1)
			return func() fdbmodel.Counts { return ws.insertTasks("tasks", 100) }
		}},
		{"fifo-pop", fifoPop(1)},
		{"fifo-pop-100", fifoPop(100)},
		{"fifo-lease", func(ws *waitsWorld) func() fdbmodel.Counts {
			ws.exec("CREATE TABLE t (payload BLOB)")
			ws.insertFIFO(sc.fifo)
			return func() fdbmodel.Counts {
				c, res := ws.query("SELECT id, _lease, payload FROM t LIMIT 1 FOR LEASE 30")
				ws.ack("t", res)
				ws.insertFIFO(1)
				return c
			}
		}},
		{"priority-desc-pop", func(ws *waitsWorld) func() fdbmodel.Counts {
			ws.exec("CREATE TABLE pq (priority INT NOT NULL, payload BLOB)")
			ws.insertPriority(sc.priority)
			return func() fdbmodel.Counts {
				c := ws.exec("SELECT id, payload FROM pq ORDER BY priority DESC LIMIT 1 FOR POP")
				ws.insertPriority(1)
				return c
			}
		}},
		{"fit-pop-steady", func(ws *waitsWorld) func() fdbmodel.Counts {
			tasks(ws)
			round := func() fdbmodel.Counts {
				c := ws.exec(fitPopSQL("tasks", 1, false), ws.limits()...)
				ws.insertTasks("tasks", 1)
				return c
			}
			for range sc.warmup {
				round()
			}
			return round
		}},
		{"fit-pop-100", func(ws *waitsWorld) func() fdbmodel.Counts {
			tasks(ws)
			return func() fdbmodel.Counts {
				c, res := ws.query(fitPopSQL("tasks", 100, false), ws.limits()...)
				if n := len(res.Rows); n > 0 {
					ws.insertTasks("tasks", n)
				}
				return c
			}
		}},
		{"fit-lease", func(ws *waitsWorld) func() fdbmodel.Counts {
			tasks(ws)
			return func() fdbmodel.Counts {
				c, res := ws.query(fitPopSQL("tasks", 1, true), ws.limits()...)
				ws.ack("tasks", res)
				return c
			}
		}},
		{"ack", func(ws *waitsWorld) func() fdbmodel.Counts {
			tasks(ws)
			return func() fdbmodel.Counts {
				for {
					if _, res := ws.query(fitPopSQL("tasks", 1, true), ws.limits()...); len(res.Rows) > 0 {
						return ws.ack("tasks", res)
					}
				}
			}
		}},
		{"count", func(ws *waitsWorld) func() fdbmodel.Counts {
			tasks(ws)
			return func() fdbmodel.Counts { return ws.exec("SELECT COUNT(*) FROM tasks") }
		}},
	}
}

// waitsWorld is an executor on a modeled cluster, with fixed seeds.
type waitsWorld struct {
	tb      testing.TB
	e       *exec.Executor
	rng     *rand.Rand
	payload []byte
	parsed  map[string]*parser.Parsed
	// total, if set, is what the database's transactions waited so far
	// (the FoundationDB test double's count): a statement costs the
	// difference. Otherwise the modeled cluster counts each statement.
	total func() fdbmodel.Counts
}

func newWaitsWorld(tb testing.TB) *waitsWorld {
	db := fdbmodel.Wrap(embedded.Open("", embedded.Config{}), fdbmodel.Config{})
	tb.Cleanup(func() { _ = db.Close() })
	return newWaitsWorldOn(tb, db, nil)
}

// newWaitsWorldOn is a waitsWorld on db, whose waits total counts (nil:
// db is a modeled cluster).
func newWaitsWorldOn(tb testing.TB, db kv.Database, total func() fdbmodel.Counts) *waitsWorld {
	ws := &waitsWorld{
		tb:      tb,
		total:   total,
		e:       exec.New(db, ddRoot),
		rng:     rand.New(rand.NewPCG(1, 2)),
		payload: make([]byte, 64), // as fdbqueue bench's tasks
		parsed:  map[string]*parser.Parsed{},
	}
	for i := range ws.payload {
		ws.payload[i] = byte(ws.rng.IntN(256))
	}
	// Its rows' ids come from its database's counter (queues.IDs),
	// reservations counted: two worlds built alike (the model's and the
	// bindings', TestFDBWaitsThroughBindings) number their rows alike.
	return ws
}

// query runs one statement and returns what it cost, and its result.
func (ws *waitsWorld) query(sql string, args ...any) (fdbmodel.Counts, *exec.Result) {
	p, ok := ws.parsed[sql]
	if !ok {
		var err error
		p, err = parser.Parse(sql)
		require.NoError(ws.tb, err, sql)
		ws.parsed[sql] = p
	}
	if ws.total != nil {
		before := ws.total()
		res, err := ws.e.Auto(context.Background(), p, exec.Args{Positional: args})
		require.NoError(ws.tb, err, sql)
		return ws.total().Sub(before), res
	}
	var col fdbmodel.Collector
	res, err := ws.e.Auto(fdbmodel.WithCollector(context.Background(), &col), p, exec.Args{Positional: args})
	require.NoError(ws.tb, err, sql)
	return col.Counts(), res
}

func (ws *waitsWorld) exec(sql string, args ...any) fdbmodel.Counts {
	c, _ := ws.query(sql, args...)
	return c
}

// limits are a consumer's random limits: cpu 1..8, mem 1..32.
func (ws *waitsWorld) limits() []any {
	return []any{1 + ws.rng.Int64N(8), 1 + ws.rng.Int64N(32)}
}

// insertTasks inserts n random tasks (priority 0..9, cpu 1..8, mem 1..32,
// as fdbqueue bench makes them) and returns what that cost.
func (ws *waitsWorld) insertTasks(table string, n int) fdbmodel.Counts {
	return ws.insert(table, "priority, cpu, mem, payload", n, func() []any {
		return []any{ws.rng.Int64N(10), 1 + ws.rng.Int64N(8), 1 + ws.rng.Int64N(32), ws.payload}
	})
}

// insertFIFO inserts n rows into the FIFO table t.
func (ws *waitsWorld) insertFIFO(n int) {
	ws.insert("t", "payload", n, func() []any { return []any{ws.payload} })
}

// insertPriority inserts n rows of random priorities (0..9) into pq.
func (ws *waitsWorld) insertPriority(n int) {
	ws.insert("pq", "priority, payload", n, func() []any { return []any{ws.rng.Int64N(10), ws.payload} })
}

// insert inserts n rows of the columns cols, values from row, 100 to a
// statement, and returns what the statements cost.
func (ws *waitsWorld) insert(table, cols string, n int, row func() []any) fdbmodel.Counts {
	var total fdbmodel.Counts
	tuple := "(" + strings.TrimSuffix(strings.Repeat("?, ", strings.Count(cols, ",")+1), ", ") + ")"
	for done := 0; done < n; done += 100 {
		k := min(100, n-done)
		var args []any
		for range k {
			args = append(args, row()...)
		}
		sql := fmt.Sprintf("INSERT INTO %s (%s) VALUES %s", table, cols, strings.TrimSuffix(strings.Repeat(tuple+", ", k), ", "))
		total.Add(ws.exec(sql, args...))
	}
	return total
}

// ack acks the row a lease of table returned, if any, and returns what it
// cost.
func (ws *waitsWorld) ack(table string, res *exec.Result) fdbmodel.Counts {
	if len(res.Rows) == 0 {
		return fdbmodel.Counts{}
	}
	c, acked := ws.query("DELETE FROM "+table+" WHERE id = ? AND _lease = ?", res.Rows[0][0], res.Rows[0][1])
	require.EqualValues(ws.tb, 1, acked.RowsAffected)
	return c
}

// reportWaits reports the samples' waits: mean, lower median (a count that
// occurred), p99 and max; the mean of each kind; the mean requests.
func reportWaits(b *testing.B, samples []fdbmodel.Counts) {
	n := len(samples)
	var total fdbmodel.Counts
	waits := make([]int, n)
	for i, c := range samples {
		total.Add(c)
		waits[i] = c.Waits()
	}
	slices.Sort(waits)
	per := func(v int) float64 { return float64(v) / float64(n) }
	b.ReportMetric(per(total.Waits()), "waits/op")
	b.ReportMetric(float64(waits[(n-1)/2]), "waits-p50")
	b.ReportMetric(float64(waits[(n-1)*99/100]), "waits-p99")
	b.ReportMetric(float64(waits[n-1]), "waits-max")
	b.ReportMetric(per(total.GRV), "grv/op")
	b.ReportMetric(per(total.Reads), "reads/op")
	b.ReportMetric(per(total.Commits), "commits/op")
	b.ReportMetric(per(total.Gets+total.GetManyKeys+total.Batches), "requests/op")
	b.ReportMetric(per(total.Attempts), "attempts/op")
}
