package bench

// fdbqueue bench's runner: the table, its statements, the fills. The
// constants, the statements, the random streams and the stop rules are
// those of the project's comparison harness, so that its figures and these
// compare.

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
)

// The task queue's domain: what tasks need and consumers offer.
const (
	grades       = 10 // priorities 0..9, lower value = served first
	cpuMax       = 8  // task and consumer cpu 1..8
	memMax       = 32 // task and consumer mem 1..32
	payloadLen   = 64
	worstCPU     = 4 // worst workload: the consumer has cpu 4, mem 16,
	worstMem     = 16
	worstTaskCPU = 5   // and every task but the last needs cpu 5..8
	fillBatch    = 500 // rows per INSERT of a (untimed) fill
)

// benchSQL holds the statements on the bench's table.
type benchSQL struct {
	table, drop, create, push, pop, popWait, count string
	// lease, leaseWait and ack are the lease workloads' (lease.go).
	lease, leaseWait, ack string
}

func newBenchSQL(table string) benchSQL {
	t := quoteIdent(table)
	return benchSQL{
		table:  t,
		drop:   "DROP TABLE IF EXISTS " + t,
		create: "CREATE TABLE " + t + " (priority INT NOT NULL, cpu INT NOT NULL, mem INT NOT NULL, payload BLOB, INDEX fit (cpu, mem))",
		push:   "INSERT INTO " + t + " (priority, cpu, mem, payload) VALUES (?, ?, ?, ?)",
		pop:    "SELECT id, cpu, mem, payload FROM " + t + " WHERE cpu <= ? AND mem <= ? ORDER BY priority LIMIT 1 FOR POP",
		// popWait is pop that waits for a task (its last argument).
		popWait: "SELECT id, cpu, mem, payload FROM " + t + " WHERE cpu <= ? AND mem <= ? ORDER BY priority LIMIT 1 FOR POP WAIT ?",
		count:   "SELECT COUNT(*) FROM " + t,
		// lease is pop that leases, for its last argument; leaseWait
		// waits for a task too (its last argument).
		lease:     "SELECT id, _lease, cpu, mem, payload FROM " + t + " WHERE cpu <= ? AND mem <= ? ORDER BY priority LIMIT 1 FOR LEASE ?",
		leaseWait: "SELECT id, _lease, cpu, mem, payload FROM " + t + " WHERE cpu <= ? AND mem <= ? ORDER BY priority LIMIT 1 FOR LEASE ? WAIT ?",
		ack:       "DELETE FROM " + t + " WHERE id = ? AND _lease = ?",
	}
}

// batch is an INSERT of n rows.
func (q benchSQL) batch(n int) string {
	if n == 1 {
		return q.push
	}
	var b strings.Builder
	b.WriteString("INSERT INTO " + q.table + " (priority, cpu, mem, payload) VALUES ")
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, ?, ?)")
	}
	return b.String()
}

// bencher runs the benchmarks of one fdbqueue bench.
type bencher struct {
	ctx      context.Context
	db       *sql.DB
	o        *benchOptions
	q        benchSQL
	payload  []byte
	rep      *benchReport
	progress *progress
	faults   benchFaults
	// fsyncMS is the median fsync, in ms, once measured (0 before).
	fsyncMS float64
	// tasksChecked counts the tasks taken (popped, leased, waited for)
	// that passed checkTask, by every client.
	tasksChecked atomic.Int64
	// procs runs the clients in child processes (--processes, in the
	// parent); nil: in this one.
	procs *procGroup
	// In a child process: gate runs once a run's clients are ready and
	// waits for the parent's go; halt ends the run (workers).
	gate func() error
	halt context.Context
}

func newBencher(ctx context.Context, db *sql.DB, o *benchOptions, stdout, stderr io.Writer, faults benchFaults) *bencher {
	return &bencher{
		ctx: ctx, db: db, o: o, q: newBenchSQL(o.table), payload: benchPayload(), faults: faults,
		rep:      newBenchReport(stdout, o),
		progress: newProgress(stderr),
	}
}

// benchPayload is every task's payload, the harness's: 64 bytes of a fixed
// random stream.
func benchPayload() []byte {
	r := rand.New(rand.NewPCG(3, 3))
	payload := make([]byte, payloadLen)
	for i := range payload {
		payload[i] = byte(r.IntN(256))
	}
	return payload
}

// run runs the benchmarks o asks for, in benchNames' order.
func (b *bencher) run() error {
	procs := ""
	if b.procs != nil {
		procs = b.procs.describe()
	}
	if err := b.rep.header(benchEnv(), procs); err != nil {
		return err
	}
	if b.o.runs("fsync") {
		res, err := measureFsync(b.ctx, b.o.cfg.Path, b.o.fsyncReps)
		if err != nil {
			return fmt.Errorf("bench fsync: %w", err)
		}
		b.fsyncMS = res.MedianMS
		if err := b.rep.fsync(res); err != nil {
			return err
		}
	}
	if b.o.runs("push") {
		for _, batch := range b.o.batches {
			for _, clients := range b.o.clients {
				if err := b.push(clients, batch); err != nil {
					return fmt.Errorf("bench push %s clients=%d: %w", pushMode(batch), clients, err)
				}
			}
		}
	}
	if b.o.runs("pop") {
		for _, mode := range b.o.resources {
			for _, consumers := range b.o.consumers {
				if err := b.pop(consumers, mode); err != nil {
					return fmt.Errorf("bench pop %s consumers=%d: %w", mode, consumers, err)
				}
			}
		}
	}
	if b.o.runs("latency") {
		for _, n := range b.o.sizes {
			for _, w := range []string{"random", "worst"} {
				if err := b.latency(w, n); err != nil {
					return fmt.Errorf("bench get_task %s size=%d: %w", w, n, err)
				}
			}
		}
	}
	if b.o.runs("wait") {
		if err := b.waitRuns(); err != nil {
			return err
		}
	}
	if b.o.runs("lease") {
		if err := b.leaseRuns(); err != nil {
			return err
		}
	}
	if b.o.runs("takeover") {
		// Last: the serving process is gone after it.
		if err := b.takeover(); err != nil {
			return fmt.Errorf("bench takeover prefill=%d: %w", b.o.prefill, err)
		}
	}
	return nil
}

// benchEnv describes where the bench runs, for the report's header.
func benchEnv() string {
	s := fmt.Sprintf("%s %s/%s, %d CPUs", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, kv := range info.Settings {
			if kv.Key == "vcs.revision" && len(kv.Value) >= 7 {
				s += ", commit " + kv.Value[:7]
			}
		}
	}
	return s
}

// reset drops and recreates the bench's table.
func (b *bencher) reset() error {
	if _, err := b.db.ExecContext(b.ctx, b.q.drop); err != nil {
		return err
	}
	_, err := b.db.ExecContext(b.ctx, b.q.create)
	return err
}

// count counts the rows of the bench's table.
func (b *bencher) count() (int64, error) {
	var n int64
	err := b.db.QueryRowContext(b.ctx, b.q.count).Scan(&n)
	return n, err
}

func randTask(r *rand.Rand) (prio, cpu, mem int) {
	return r.IntN(grades), 1 + r.IntN(cpuMax), 1 + r.IntN(memMax)
}

// fill pushes n tasks in fillBatch-row statements, untimed; worst: every
// task needs more cpu than the worst consumer has.
func (b *bencher) fill(workload string, n int) error {
	r := rand.New(rand.NewPCG(uint64(n), 11))
	st, err := b.db.PrepareContext(b.ctx, b.q.batch(fillBatch))
	if err != nil {
		return err
	}
	defer st.Close()
	p := b.progress.start(fmt.Sprintf("filling %s: %s tasks", b.o.table, workload), n)
	defer p.finish()
	args := make([]any, 0, 4*fillBatch)
	for done := 0; done < n; {
		k := min(fillBatch, n-done)
		args = args[:0]
		for range k {
			prio, cpu, mem := randTask(r)
			if workload == "worst" {
				cpu = worstTaskCPU + r.IntN(cpuMax-worstTaskCPU+1)
			}
			args = append(args, prio, cpu, mem, b.payload)
		}
		if k < fillBatch {
			_, err = b.db.ExecContext(b.ctx, b.q.batch(k), args...)
		} else {
			_, err = st.ExecContext(b.ctx, args...)
		}
		if err != nil {
			return fmt.Errorf("fill: %w", err)
		}
		done += k
		p.update(done)
	}
	return nil
}
