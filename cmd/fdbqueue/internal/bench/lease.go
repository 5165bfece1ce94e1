package bench

// fdbqueue bench's lease workloads: what a lease and its ack cost against
// a pop, and a run whose consumers die holding leases, checked to end with
// every task acked exactly once.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fdbqueue/fdbqueue/internal/fdbmodel"
)

const (
	// leaseFor is the lease of the throughput runs: long enough that no
	// lease expires during a run, so each task is leased and acked once.
	leaseFor = time.Minute
	// killWait is the WAIT of the kill run's consumers: a wait ends when
	// a dead consumer's lease expires.
	killWait = time.Second
	// killTimeout bounds a kill run.
	killTimeout = 5 * time.Minute
	// killPoll is how often the kill run looks whether it is done.
	killPoll = 5 * time.Millisecond
)

// leasedTask is what a lease returns: a task and its lease token.
type leasedTask struct {
	poppedTask
	lease int64
}

// leaseOne leases the first task that fits cpu and mem with st (args
// after cpu and mem: the lease's duration, and the WAIT if st waits), and
// checks it; ok is false when no task fits.
func (b *bencher) leaseOne(ctx context.Context, st *sql.Stmt, cpu, mem int, args ...any) (t leasedTask, ok bool, err error) {
	err = st.QueryRowContext(ctx, append([]any{cpu, mem}, args...)...).Scan(&t.id, &t.lease, &t.cpu, &t.mem, &t.payload)
	if errors.Is(err, sql.ErrNoRows) {
		return t, false, nil
	}
	if err != nil {
		return t, false, err
	}
	if t.lease == 0 {
		return t, false, fmt.Errorf("%w: task %d was leased with the token 0, which means never leased", errSelfCheck, t.id)
	}
	return t, true, b.checkTask(&t.poppedTask, cpu, mem)
}

// ack acks t with st and returns the rows it removed, as the run records
// them (faults may alter them).
func (b *bencher) ack(ctx context.Context, st *sql.Stmt, t leasedTask) (id, n int64, err error) {
	res, err := st.ExecContext(ctx, t.id, t.lease)
	if err != nil {
		return 0, 0, err
	}
	if n, err = res.RowsAffected(); err != nil {
		return 0, 0, err
	}
	id = t.id
	if b.faults.acked != nil {
		id, n = b.faults.acked(id, n)
	}
	return id, n, nil
}

// leaseRuns runs, for each consumer resources and number of consumers, a
// pop run and a lease run on the same prefill, then the kill run.
func (b *bencher) leaseRuns() error {
	for _, mode := range b.o.resources {
		for _, consumers := range b.o.consumers {
			if err := b.lease(consumers, mode); err != nil {
				return fmt.Errorf("bench lease %s consumers=%d: %w", mode, consumers, err)
			}
		}
	}
	if err := b.leaseKill(); err != nil {
		return fmt.Errorf("bench lease_kill consumers=%d: %w", b.o.killConsumers, err)
	}
	return nil
}

// lease times FOR LEASE and its ack by consumers consumers on --prefill
// random tasks, after a pop run on the same prefill, and reports both.
func (b *bencher) lease(consumers int, mode string) error {
	pop, err := b.popRun(consumers, mode)
	if err != nil {
		return fmt.Errorf("the pop run to compare with: %w", err)
	}
	if err := b.reset(); err != nil {
		return err
	}
	if err := b.fill("random", b.o.prefill); err != nil {
		return err
	}
	ids := make([][]int64, consumers)
	leaseLat := make([][]time.Duration, consumers)
	ackLat := make([][]time.Duration, consumers)
	// On the modeled cluster, the lease and the ack are counted apart
	// (their collectors take the counts from the run's, per operation).
	leaseWaits := make([][]fdbmodel.Counts, consumers)
	ackWaits := make([][]fdbmodel.Counts, consumers)
	res, err := b.workers(consumers, 1, func(c *sql.Conn, i int) (opFn, error) {
		lst, err := c.PrepareContext(b.ctx, b.q.lease)
		if err != nil {
			return nil, err
		}
		ast, err := c.PrepareContext(b.ctx, b.q.ack)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, r *rand.Rand) (int, error) {
			cpu, mem := consumerLimits(mode, r)
			var t leasedTask
			var ok bool
			t0 := time.Now()
			err := b.metered(ctx, &leaseWaits[i], func(ctx context.Context) (err error) {
				t, ok, err = b.leaseOne(ctx, lst, cpu, mem, leaseFor)
				return err
			})
			leaseLat[i] = append(leaseLat[i], time.Since(t0))
			if err != nil || !ok {
				return 0, err
			}
			ids[i] = append(ids[i], t.id)
			var id, n int64
			t0 = time.Now()
			err = b.metered(ctx, &ackWaits[i], func(ctx context.Context) (err error) {
				id, n, err = b.ack(ctx, ast, t)
				return err
			})
			ackLat[i] = append(ackLat[i], time.Since(t0))
			if err != nil {
				return 0, err
			}
			if n != 1 {
				return 0, fmt.Errorf("%w: the ack of task %d removed %d rows; its consumer holds a lease of %v and should remove 1", errSelfCheck, id, n, leaseFor)
			}
			return 1, nil
		}, nil
	})
	if err != nil {
		return err
	}
	if err := checkOnce(ids, "leased"); err != nil {
		return err
	}
	if err := b.checkLeft(int64(b.o.prefill), res.rows, "acked"); err != nil {
		return err
	}
	sec := res.elapsed.Seconds()
	v := leaseResult{
		Bench: "lease", Consumers: consumers, ConsumerResources: mode, Prefill: b.o.prefill,
		Rows: res.rows, EmptyLeases: res.empty, Seconds: sec, RowsPerS: perSecond(res.rows, sec),
		LeaseSamples: int64(len(flatten(leaseLat))), LeaseP50MS: pct(flatten(leaseLat), 50), LeaseP99MS: pct(flatten(leaseLat), 99),
		AckSamples: int64(len(flatten(ackLat))), AckP50MS: pct(flatten(ackLat), 50), AckP99MS: pct(flatten(ackLat), 99),
		PopRowsPerS: pop.RowsPerS, PopSamples: pop.Samples, PopP50MS: pop.P50MS, PopP99MS: pop.P99MS,
		Stop: res.stop, LimitOps: b.o.lim.ops, LimitS: b.o.lim.dur.Seconds(),
		LeaseWaits: b.newWaitStats(leaseWaits...), AckWaits: b.newWaitStats(ackWaits...),
	}
	v.LeaseOverPop = ratio(v.LeaseP50MS, v.PopP50MS)
	v.TaskOverPop = ratio(v.PopRowsPerS, v.RowsPerS)
	return b.rep.lease(v)
}

func flatten(l [][]time.Duration) []time.Duration {
	var out []time.Duration
	for _, x := range l {
		out = append(out, x...)
	}
	return out
}

// ratio is a / b, 0 when b is 0 (JSON cannot hold +Inf).
func ratio(a, b float64) float64 {
	if b <= 0 || math.IsNaN(a) {
		return 0
	}
	return a / b
}

// deadConsumers is how many of n consumers the kill run kills: share of
// them, rounded, at least one, and never all of them.
func deadConsumers(n int, share float64) int {
	if share <= 0 {
		return 0
	}
	return min(max(1, int(math.Round(share*float64(n)))), n-1)
}

// leaseKill fills --kill-tasks tasks; --kill-consumers consumers lease them
// (FOR LEASE --lease-s WAIT 1) and ack them until the table is empty, but
// --kill-share of them die: each leases a few tasks, acks them, then
// leases one more and stops, abandoning its lease. The others, started
// then, take those tasks again when the leases expire. The check: every task filled was
// acked exactly once (an ack that removed the row), and the table is
// empty.
func (b *bencher) leaseKill() error {
	if err := b.reset(); err != nil {
		return err
	}
	tasks := b.o.killTasks
	if err := b.fill("random", tasks); err != nil {
		return err
	}
	filled, err := b.ids()
	if err != nil {
		return err
	}
	r := newKillRun(b, tasks)
	defer r.cancel(nil)
	start := time.Now()
	if err := r.startConsumers(); err != nil {
		return err
	}
	runErr := r.wait()
	elapsed := time.Since(start)
	r.cancel(nil)
	r.wg.Wait()
	if runErr != nil {
		return runErr
	}
	if err := b.afterRun(); err != nil {
		return err
	}
	return r.check(filled, elapsed)
}

// killRun is one run of leaseKill: its consumers, and what they did.
type killRun struct {
	b        *bencher
	tasks    int
	dead     int // how many consumers die, the first ones
	leaseDur time.Duration
	// cs is what each consumer did, its own slot each.
	cs              []killConsumer
	acked, underWay atomic.Int64
	ctx             context.Context
	cancel          context.CancelCauseFunc
	wg              sync.WaitGroup
	// The live consumers start once the dead ones died (allDied), so that
	// each dead one dies holding a lease, whatever the scheduling.
	died    sync.WaitGroup
	allDied chan struct{}
}

// killConsumer is what one consumer of a kill run did.
type killConsumer struct {
	leased    []int64 // every lease, in order
	acked     []int64 // acks that removed the row
	lost      int64   // acks that removed nothing: the lease had expired
	abandoned int64   // the task it died holding, 0 if it did not die
}

func newKillRun(b *bencher, tasks int) *killRun {
	n := b.o.killConsumers
	r := &killRun{b: b, tasks: tasks, dead: deadConsumers(n, b.o.killShare), leaseDur: b.o.leaseDur,
		cs: make([]killConsumer, n), allDied: make(chan struct{})}
	r.ctx, r.cancel = context.WithCancelCause(b.ctx)
	r.died.Add(r.dead)
	go func() { r.died.Wait(); close(r.allDied) }()
	return r
}

// startConsumers opens each consumer's connection and statements and
// starts it.
func (r *killRun) startConsumers() error {
	b, n := r.b, len(r.cs)
	for i := range n {
		c, err := b.db.Conn(b.ctx)
		if err != nil {
			return err
		}
		lst, err := c.PrepareContext(b.ctx, b.q.leaseWait)
		if err != nil {
			c.Close()
			return err
		}
		ast, err := c.PrepareContext(b.ctx, b.q.ack)
		if err != nil {
			c.Close()
			return err
		}
		// The first consumers die, each at its k-th lease, having acked
		// k-1 tasks.
		dieAt := -1
		if i < r.dead {
			rnd := rand.New(rand.NewPCG(uint64(i)+1, 23))
			dieAt = 1 + rnd.IntN(max(1, r.tasks/(4*n)))
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.consume(i, c, lst, ast, dieAt)
		}()
	}
	return nil
}

// consume is consumer i: it leases and acks tasks until the run ends, or
// dies holding its dieAt-th lease (dieAt > 0). An error ends the run.
func (r *killRun) consume(i int, c *sql.Conn, lst, ast *sql.Stmt, dieAt int) {
	defer c.Close()
	if dieAt > 0 {
		defer r.died.Done()
	} else {
		select {
		case <-r.allDied:
		case <-r.ctx.Done():
			return
		}
	}
	me := &r.cs[i]
	for r.ctx.Err() == nil {
		t, ok, err := r.b.leaseOne(r.ctx, lst, cpuMax, memMax, r.leaseDur, killWait)
		if err == nil && ok {
			me.leased = append(me.leased, t.id)
			if len(me.leased) == dieAt {
				me.abandoned = t.id
				return // dies holding the lease
			}
			var id, k int64
			r.underWay.Add(1)
			id, k, err = r.b.ack(r.ctx, ast, t)
			switch {
			case err != nil:
			case k == 1:
				me.acked = append(me.acked, id)
				r.acked.Add(1)
			case k == 0:
				me.lost++
			default:
				err = fmt.Errorf("%w: the ack of task %d removed %d rows; an ack removes one row or none", errSelfCheck, id, k)
			}
			r.underWay.Add(-1)
		}
		if err != nil {
			if r.ctx.Err() == nil {
				r.cancel(err)
			}
			return
		}
	}
}

// wait returns when every task is acked, or when the table is empty and
// no ack is under way (check then says which task was not acked); or
// with the error that ended the run, or at killTimeout.
func (r *killRun) wait() error {
	timeout := time.NewTimer(killTimeout)
	defer timeout.Stop()
	tick := time.NewTicker(killPoll)
	defer tick.Stop()
	for r.acked.Load() < int64(r.tasks) {
		select {
		case <-r.ctx.Done():
			return context.Cause(r.ctx)
		case <-timeout.C:
			return fmt.Errorf("%w: %d of %d tasks acked after %v", errSelfCheck, r.acked.Load(), r.tasks, killTimeout)
		case <-tick.C:
			// An ack counts itself under way before it removes its row:
			// once the table is empty, no ack is under way after it
			// means every ack that removed a row is recorded.
			left, err := r.b.count()
			switch {
			case err != nil:
				return err
			case left == 0 && r.underWay.Load() == 0:
				return nil
			}
		}
	}
	return nil
}

// check checks that every task filled was acked once, and none other, and
// reports the run.
func (r *killRun) check(filled map[int64]bool, elapsed time.Duration) error {
	v := leaseKillResult{
		Bench: "lease_kill", Consumers: len(r.cs), Dead: r.dead, LeaseS: r.leaseDur.Seconds(), Tasks: r.tasks,
		Seconds: elapsed.Seconds(),
	}
	ackedBy := map[int64]int{}
	leases := map[int64]int{}
	for _, c := range r.cs {
		for _, id := range c.acked {
			ackedBy[id]++
		}
		for _, id := range c.leased {
			leases[id]++
		}
		if c.abandoned != 0 {
			v.Abandoned++
		}
		v.LostAcks += c.lost
		v.Acked += int64(len(c.acked))
	}
	for id, k := range ackedBy {
		if !filled[id] {
			return fmt.Errorf("%w: task %d was acked, and it was never filled", errSelfCheck, id)
		}
		if k > 1 {
			return fmt.Errorf("%w: task %d was acked %d times", errSelfCheck, id, k)
		}
	}
	for id := range filled {
		if ackedBy[id] == 0 {
			return fmt.Errorf("%w: task %d left the table and was never acked (%d of %d tasks acked)", errSelfCheck, id, len(ackedBy), r.tasks)
		}
	}
	left, err := r.b.count()
	if err != nil {
		return err
	}
	if err := checkGone(int64(r.tasks), v.Acked, left, "acked"); err != nil {
		return err
	}
	for _, k := range leases {
		if k > 1 {
			v.Redelivered++
		}
		v.MaxLeases = max(v.MaxLeases, k)
	}
	v.RowsPerS = perSecond(v.Acked, v.Seconds)
	return r.b.rep.leaseKill(v)
}

// ids returns the ids of the bench's table.
func (b *bencher) ids() (map[int64]bool, error) {
	rows, err := b.db.QueryContext(b.ctx, "SELECT id FROM "+b.q.table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out[id] = true
	}
	return out, rows.Err()
}
