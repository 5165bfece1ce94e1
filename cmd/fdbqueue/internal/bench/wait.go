package bench

// fdbqueue bench's wait workloads: what SELECT ... FOR POP WAIT costs and
// gains, against a consumer that polls.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/fdbqueue/fdbqueue/internal/cputime"
)

const (
	// waitSettle is the pause before each push of the wake run: time
	// for every waiter to wait again, so that each push lands on waiters
	// that all wait (the case where a push wakes them all).
	waitSettle = 5 * time.Millisecond
	// waitFor is the WAIT of the wake and idle runs' consumers, which
	// wait again in a loop: a worker's usual shape.
	waitFor = 5 * time.Second
	// pcWaitFor is the WAIT of the producer/consumer run's consumers.
	pcWaitFor = time.Second
	// pollSleep is how long a polling consumer sleeps after an empty pop.
	pollSleep = 10 * time.Millisecond
	// drainTimeout bounds how long a producer/consumer run waits for the
	// consumers to take the last rows.
	drainTimeout = time.Minute
)

// The consumer modes of the idle and producer/consumer runs.
var waitModes = []string{"wait", "poll"}

// waitRuns runs the wait workloads: wake-up latency for each --waiters,
// idle CPU, and producer/consumer runs for each --wait-rate and mode;
// across processes, the wake-up runs only.
func (b *bencher) waitRuns() error {
	for _, n := range b.o.waiters {
		if err := b.waitWake(n); err != nil {
			return fmt.Errorf("bench wait_wake waiters=%d: %w", n, err)
		}
	}
	if b.procs != nil {
		return nil
	}
	for _, mode := range waitModes {
		if err := b.waitIdle(mode); err != nil {
			return fmt.Errorf("bench wait_idle %s: %w", mode, err)
		}
	}
	for _, rate := range b.o.waitRates {
		for _, mode := range waitModes {
			if err := b.waitProdCons(mode, rate); err != nil {
				return fmt.Errorf("bench wait_pc %s rate=%d: %w", mode, rate, err)
			}
		}
	}
	return nil
}

// consumers runs n consumers, each on a connection of its own with the
// statement q prepared, calling fn until ctx ends or fn fails; the first
// failure stops them all. It returns a function that stops them and
// returns that failure.
func (b *bencher) consumers(ctx context.Context, n int, q string, fn func(ctx context.Context, st *sql.Stmt, i int) error) (stop func() error, err error) {
	ctx, cancel := context.WithCancelCause(ctx)
	var wg sync.WaitGroup
	stop = func() error {
		cancel(nil)
		wg.Wait()
		if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		return nil
	}
	for i := range n {
		c, err := b.db.Conn(b.ctx)
		if err != nil {
			_ = stop()
			return nil, err
		}
		st, err := c.PrepareContext(b.ctx, q)
		if err != nil {
			c.Close()
			_ = stop()
			return nil, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			defer st.Close()
			for ctx.Err() == nil {
				if err := fn(ctx, st, i); err != nil {
					if ctx.Err() == nil {
						cancel(err)
					}
					return
				}
			}
		}()
	}
	return stop, nil
}

// scanTask reads a popped task; ok is false for no row.
func scanTask(row *sql.Row) (t poppedTask, ok bool, err error) {
	err = row.Scan(&t.id, &t.cpu, &t.mem, &t.payload)
	if errors.Is(err, sql.ErrNoRows) {
		return t, false, nil
	}
	return t, err == nil, err
}

// arrival is a task a consumer popped, and when.
type arrival struct {
	t  poppedTask
	at time.Time
}

// waitWake times wake-ups: waiters consumers wait (FOR POP WAIT in a loop)
// on an empty table; --wait-reps times, once they all wait again, one task
// is pushed, and the time from the push's start to the task in a
// consumer's hands is recorded. Across processes, the waiters are the
// children's that do not serve, and this process pushes.
func (b *bencher) waitWake(waiters int) error {
	if err := b.reset(); err != nil {
		return err
	}
	var got <-chan arrival
	var stop func() error
	var err error
	if b.procs != nil {
		stop, got, err = b.procs.waiters(waiters)
	} else {
		stop, got, err = b.localWaiters(waiters)
	}
	if err != nil {
		return err
	}
	defer func() { _ = stop() }()
	r := rand.New(rand.NewPCG(uint64(waiters), 13))
	var lat, pushLat []time.Duration
	for range b.o.waitReps {
		time.Sleep(waitSettle)
		prio, cpu, mem := randTask(r)
		t0 := time.Now()
		res, err := b.db.ExecContext(b.ctx, b.q.push, prio, cpu, mem, b.payload)
		if err != nil {
			return err
		}
		pushLat = append(pushLat, time.Since(t0))
		id, err := res.LastInsertId()
		if err != nil {
			return err
		}
		select {
		case a, ok := <-got:
			if !ok { // the waiters failed
				if err := stop(); err != nil {
					return err
				}
				return errors.New("the waiters stopped")
			}
			// Across processes, a.at is on the wall clock, which
			// t0's wall reading is compared with.
			lat = append(lat, a.at.Sub(t0))
			if a.t.id != id {
				return fmt.Errorf("%w: task %d was pushed into an empty table, and a waiter got task %d", errSelfCheck, id, a.t.id)
			}
			if b.procs == nil { // a child checks the tasks its waiters take
				if err := b.checkTask(&a.t, cpuMax, memMax); err != nil {
					return err
				}
			}
		case <-time.After(drainTimeout):
			return fmt.Errorf("%w: no waiter got task %d within %v", errSelfCheck, id, drainTimeout)
		case <-b.ctx.Done():
			return b.ctx.Err()
		}
	}
	if err := stop(); err != nil {
		return err
	}
	if err := b.checkTaken(nil, int64(len(lat)), int64(len(lat))); err != nil {
		return err
	}
	return b.rep.waitWake(waitWakeResult{
		Bench: "wait_wake", Waiters: waiters, Pushes: len(lat),
		Samples: int64(len(lat)), P50MS: pct(lat, 50), P99MS: pct(lat, 99), PushP50MS: pct(pushLat, 50),
	})
}

// localWaiters starts waiters in this process: what each takes comes on
// got; stop stops them, and returns the first failure.
func (b *bencher) localWaiters(waiters int) (stop func() error, got <-chan arrival, err error) {
	ch := make(chan arrival, waiters)
	stop, err = b.consumers(b.ctx, waiters, b.q.popWait, func(ctx context.Context, st *sql.Stmt, _ int) error {
		t, ok, err := scanTask(st.QueryRowContext(ctx, cpuMax, memMax, waitFor))
		if ok {
			select {
			case ch <- arrival{t, time.Now()}:
			case <-ctx.Done():
			}
		}
		return err
	})
	return stop, ch, err
}

// cpuSince returns the process's CPU time since before (a processCPU
// reading), in ms, or -1 where the platform does not report it.
func cpuSince(before time.Duration, ok bool) float64 {
	now, ok2 := cputime.Process()
	if !ok || !ok2 {
		return -1
	}
	return ms(now - before)
}

// waitIdle measures what --idle-consumers consumers cost while the table
// stays empty for --idle-s: the process's CPU time, waiting (FOR POP WAIT
// 5 in a loop) or polling (FOR POP, then 10 ms of sleep when empty).
func (b *bencher) waitIdle(mode string) error {
	if err := b.reset(); err != nil {
		return err
	}
	var mu sync.Mutex
	var pops, empty int64
	q, args := b.q.popWait, []any{cpuMax, memMax, waitFor}
	if mode == "poll" {
		q, args = b.q.pop, []any{cpuMax, memMax}
	}
	stop, err := b.consumers(b.ctx, b.o.idleConsumers, q, func(ctx context.Context, st *sql.Stmt, _ int) error {
		_, ok, err := scanTask(st.QueryRowContext(ctx, args...))
		mu.Lock()
		pops++
		if !ok {
			empty++
		}
		mu.Unlock()
		if err == nil && !ok && mode == "poll" {
			sleepCtx(ctx, pollSleep)
		}
		return err
	})
	if err != nil {
		return err
	}
	defer func() { _ = stop() }()
	// The consumers start (each a first empty pop), then the idle time
	// is measured.
	sleepCtx(b.ctx, min(500*time.Millisecond, b.o.idleDur))
	mu.Lock()
	pops0 := pops
	mu.Unlock()
	cpu0, ok := cputime.Process()
	t0 := time.Now()
	sleepCtx(b.ctx, b.o.idleDur)
	cpu := cpuSince(cpu0, ok)
	sec := time.Since(t0).Seconds()
	mu.Lock()
	stmts := pops - pops0
	mu.Unlock()
	if err := stop(); err != nil {
		return err
	}
	if err := b.ctx.Err(); err != nil {
		return err
	}
	if err := b.checkLeft(0, pops-empty, "popped"); err != nil {
		return err
	}
	res := waitIdleResult{
		Bench: "wait_idle", Mode: mode, Consumers: b.o.idleConsumers, Seconds: sec,
		CPUMS: cpu, Stmts: stmts, StmtsPerS: perSecond(stmts, sec),
	}
	if cpu >= 0 && sec > 0 {
		res.CPUPct = 100 * cpu / (sec * 1000)
	}
	return b.rep.waitIdle(res)
}

// waitProdCons runs a producer (rate tasks a second; 0: as fast as it can)
// and --wait-consumers consumers that wait (FOR POP WAIT 1 in a loop) or
// poll (FOR POP, then 10 ms of sleep when empty), until the run's limits;
// then the consumers take what is left. It reports the rows taken a
// second, the end-to-end latency (from the push's start to the task in a
// consumer's hands), the empty pops and the CPU time per row.
func (b *bencher) waitProdCons(mode string, rate int) error {
	if err := b.reset(); err != nil {
		return err
	}
	n := b.o.waitConsumers
	tally := &pcTally{arrivals: make([][]arrival, n)}
	cpu0, cpuOK := cputime.Process()
	start := time.Now()
	stop, err := b.pcConsumers(mode, tally)
	if err != nil {
		return err
	}
	defer func() { _ = stop() }()
	pushedAt, err := b.produce(rate, start)
	if err != nil {
		return err
	}
	pushed := int64(len(pushedAt))
	if err := b.awaitTaken(tally, pushed); err != nil {
		return err
	}
	elapsed := time.Since(start)
	cpu := cpuSince(cpu0, cpuOK)
	if err := stop(); err != nil {
		return err
	}
	if err := b.afterRun(); err != nil {
		return err
	}
	lat, err := b.checkArrivals(tally.arrivals, pushedAt)
	if err != nil {
		return err
	}
	left, err := b.count()
	if err != nil {
		return err
	}
	if err := checkGone(pushed, int64(len(lat)), left, "popped"); err != nil {
		return err
	}
	res := waitPCResult{
		Bench: "wait_pc", Mode: mode, Consumers: n, Rate: rate, Rows: pushed,
		Seconds: elapsed.Seconds(), RowsPerS: perSecond(pushed, elapsed.Seconds()),
		Samples: int64(len(lat)), P50MS: pct(lat, 50), P99MS: pct(lat, 99), EmptyPops: tally.empty, CPUMS: cpu,
	}
	if cpu >= 0 && pushed > 0 {
		res.CPUMSPerRow = cpu / float64(pushed)
	}
	return b.rep.waitPC(res)
}

// pcTally is what waitProdCons's consumers took: each consumer's arrivals,
// its own slot each, and the counts of tasks taken and of empty pops.
type pcTally struct {
	arrivals     [][]arrival
	mu           sync.Mutex
	taken, empty int64
}

// pcConsumers starts waitProdCons's consumers, which wait or poll (mode)
// and record what they take in tally.
func (b *bencher) pcConsumers(mode string, tally *pcTally) (stop func() error, err error) {
	q, args := b.q.popWait, []any{cpuMax, memMax, pcWaitFor}
	if mode == "poll" {
		q, args = b.q.pop, []any{cpuMax, memMax}
	}
	return b.consumers(b.ctx, len(tally.arrivals), q, func(ctx context.Context, st *sql.Stmt, i int) error {
		t, ok, err := scanTask(st.QueryRowContext(ctx, args...))
		if err != nil {
			return err
		}
		if !ok {
			tally.mu.Lock()
			tally.empty++
			tally.mu.Unlock()
			if mode == "poll" {
				sleepCtx(ctx, pollSleep)
			}
			return nil
		}
		tally.arrivals[i] = append(tally.arrivals[i], arrival{t, time.Now()})
		tally.mu.Lock()
		tally.taken++
		tally.mu.Unlock()
		return nil
	})
}

// produce is waitProdCons's producer: from start, it pushes rate tasks a
// second (0: as fast as it can) until the run's limits. It returns when
// it pushed each task, by id.
func (b *bencher) produce(rate int, start time.Time) (map[int64]time.Time, error) {
	pushedAt := map[int64]time.Time{}
	r := rand.New(rand.NewPCG(uint64(rate), 17))
	budget := newRowBudget(b.o.lim.ops)
	var interval time.Duration
	if rate > 0 {
		interval = time.Second / time.Duration(rate)
	}
	next := start
	for (b.o.lim.dur == 0 || time.Since(start) < b.o.lim.dur) && budget.take(1) {
		if interval > 0 {
			sleepCtx(b.ctx, time.Until(next))
			next = next.Add(interval)
		}
		prio, cpu, mem := randTask(r)
		t0 := time.Now()
		res, err := b.db.ExecContext(b.ctx, b.q.push, prio, cpu, mem, b.payload)
		if err != nil {
			return nil, err
		}
		id, err := res.LastInsertId()
		if err != nil {
			return nil, err
		}
		pushedAt[id] = t0
	}
	return pushedAt, nil
}

// awaitTaken waits until the consumers took the pushed tasks, for
// drainTimeout at most.
func (b *bencher) awaitTaken(tally *pcTally, pushed int64) error {
	deadline := time.Now().Add(drainTimeout)
	for {
		tally.mu.Lock()
		taken := tally.taken
		tally.mu.Unlock()
		if taken >= pushed {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %d tasks pushed, only %d taken %v later", errSelfCheck, pushed, taken, drainTimeout)
		}
		if err := b.ctx.Err(); err != nil {
			return err
		}
		time.Sleep(time.Millisecond)
	}
}

// checkArrivals checks what the consumers took: each task once, intact,
// and pushed by the producer. It returns each task's end-to-end latency.
func (b *bencher) checkArrivals(arrivals [][]arrival, pushedAt map[int64]time.Time) ([]time.Duration, error) {
	ids := make([][]int64, len(arrivals))
	var lat []time.Duration
	for i, as := range arrivals {
		for _, a := range as {
			if err := b.checkTask(&a.t, cpuMax, memMax); err != nil {
				return nil, err
			}
			t0, ok := pushedAt[a.t.id]
			if !ok {
				return nil, fmt.Errorf("%w: a consumer took task %d, which the producer did not push", errSelfCheck, a.t.id)
			}
			ids[i] = append(ids[i], a.t.id)
			lat = append(lat, a.at.Sub(t0))
		}
	}
	if err := checkOnce(ids, "popped"); err != nil {
		return nil, err
	}
	return lat, nil
}

// sleepCtx sleeps for d (nothing if d <= 0), or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
