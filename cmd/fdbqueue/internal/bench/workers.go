package bench

// fdbqueue bench's concurrent runs: clients on their own connections,
// bounded by rows and time, and what they measured.

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fdbqueue/fdbqueue/internal/fdbmodel"
)

// opFn runs one operation on a client's connection and returns how many
// rows it handled (0 with a nil error: nothing to do, an empty pop).
type opFn func(ctx context.Context, r *rand.Rand) (int, error)

// runResult is what a push or pop run measured.
type runResult struct {
	rows, stmts, empty int64
	start              time.Time // when the clients started
	elapsed            time.Duration
	// stop is what ended the run: count or time, its limits; halt, the
	// parent of a child process (procs.go) when another child's
	// count ended the run.
	stop string
	lat  []time.Duration
	// ids are the tasks each client popped (pop runs), by client; by
	// process across processes.
	ids [][]int64
	// byProcess is each process's share, across processes.
	byProcess []procRun
	// waits are what the operations cost on the modeled cluster, one
	// each, in no order (none off it).
	waits []fdbmodel.Counts
}

// workers runs `clients` clients, each on a connection of its own, until
// the run's limits are spent: each reserves perOp rows of the budget before
// an operation, so that the rows never exceed --limit-ops; an operation
// started before the time limit completes and counts. prepare gives client
// i its operation. The first error stops every client and is returned. On
// the modeled cluster, each operation's statements are counted together
// (metered). In a child process of --processes (child.go), b.gate
// runs once every client is ready, before the start, and b.halt ending
// ends the run as the time limit does.
func (b *bencher) workers(clients, perOp int, prepare func(c *sql.Conn, i int) (opFn, error)) (runResult, error) {
	conns := make([]*sql.Conn, clients)
	fns := make([]opFn, clients)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range conns {
		c, err := b.db.Conn(b.ctx)
		if err != nil {
			return runResult{}, err
		}
		conns[i] = c
		if fns[i], err = prepare(c, i); err != nil {
			return runResult{}, err
		}
	}
	if b.gate != nil {
		if err := b.gate(); err != nil {
			return runResult{}, err
		}
	}
	budget := newRowBudget(b.o.lim.ops)
	var rows, stmts, empty atomic.Int64
	var timedOut, halted atomic.Bool
	lats := make([][]time.Duration, clients)
	waits := make([][]fdbmodel.Counts, clients)
	ctx, fail := context.WithCancelCause(b.ctx)
	defer fail(nil)
	// rctx ends the run: the time limit, a halt, or a failure.
	rctx, endRun := context.WithCancel(ctx)
	defer endRun()
	if b.o.lim.dur > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(rctx, b.o.lim.dur)
		defer cancel()
	}
	if b.halt != nil {
		defer context.AfterFunc(b.halt, endRun)()
	}
	var wg sync.WaitGroup
	start := time.Now()
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(i)+1, 42))
			for {
				if rctx.Err() != nil {
					switch {
					case ctx.Err() != nil: // a failure
					case b.halt != nil && b.halt.Err() != nil:
						halted.Store(true)
					default:
						timedOut.Store(true)
					}
					return
				}
				if !budget.take(perOp) {
					return
				}
				t0 := time.Now()
				var n int
				err := b.metered(ctx, &waits[i], func(ctx context.Context) (err error) {
					n, err = fns[i](ctx, r) // not rctx: a started operation completes
					return err
				})
				d := time.Since(t0)
				if err != nil {
					fail(err)
					return
				}
				lats[i] = append(lats[i], d)
				stmts.Add(1)
				if n == 0 {
					empty.Add(1)
					budget.giveBack(perOp) // an empty pop took nothing
				}
				rows.Add(int64(n))
			}
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return runResult{}, err
	}
	res := runResult{rows: rows.Load(), stmts: stmts.Load(), empty: empty.Load(), start: start, elapsed: time.Since(start), stop: "count"}
	switch {
	case halted.Load():
		res.stop = "halt"
	case timedOut.Load():
		res.stop = "time"
	}
	res.lat = slices.Concat(lats...)
	res.waits = slices.Concat(waits...)
	if !b.o.model && clients > 1 {
		res.waits = nil // over the test double, overlapping statements' counts overlap (metered)
	}
	return res, nil
}

// rowBudget is what is left of a run's --limit-ops, shared by its clients.
type rowBudget struct{ left atomic.Int64 }

func newRowBudget(ops int) *rowBudget {
	b := &rowBudget{}
	if ops == 0 {
		ops = math.MaxInt64 / 2 // no limit
	}
	b.left.Store(int64(ops))
	return b
}

// take reserves n rows, or reports that fewer are left and takes nothing:
// rows that an empty pop gives back then serve the clients still running,
// so a run that stops on the count has popped exactly --limit-ops rows.
func (b *rowBudget) take(n int) bool {
	for {
		left := b.left.Load()
		if left < int64(n) {
			return false
		}
		if b.left.CompareAndSwap(left, left-int64(n)) {
			return true
		}
	}
}

// giveBack returns n rows taken and not used.
func (b *rowBudget) giveBack(n int) { b.left.Add(int64(n)) }

// pct is the p-th percentile of lat, in ms (the nearest-rank method).
func pct(lat []time.Duration, p float64) float64 {
	if len(lat) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), lat...)
	slices.Sort(s)
	return ms(nearestRank(s, p))
}

// nearestRank is the p-th percentile of s, sorted and not empty.
func nearestRank[T cmp.Ordered](s []T, p float64) T {
	return s[max(int(math.Ceil(p/100*float64(len(s))))-1, 0)]
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// minP99 is the fewest timings whose p99 is not simply their slowest: the
// nearest rank of the p99 of n < 100 timings, ceil(0.99 n), is n.
const minP99 = 100

// p99Cell is a p99 for the table, of n timings: marked * when n is below
// minP99, where it is their slowest (the header's legend says so).
func p99Cell(p99 float64, n int64) string {
	mark := " "
	if n < minP99 {
		mark = "*"
	}
	return fmt.Sprintf("%8.3f%s", p99, mark)
}

// perSecond is n per second of sec, 0 for a run too short to time.
func perSecond(n int64, sec float64) float64 {
	if sec <= 0 {
		return 0
	}
	return float64(n) / sec
}
