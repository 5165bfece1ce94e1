package bench

// fdbqueue bench's pop workload.

import (
	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
)

// consumerLimits is what a consumer offers for one pop.
func consumerLimits(mode string, r *rand.Rand) (cpu, mem int) {
	if mode == "random" {
		return 1 + r.IntN(cpuMax), 1 + r.IntN(memMax)
	}
	return cpuMax, memMax
}

// popOne pops the first task that fits cpu and mem with st, and checks it;
// ok is false when no task fits.
func (b *bencher) popOne(ctx context.Context, st *sql.Stmt, cpu, mem int) (t poppedTask, ok bool, err error) {
	err = st.QueryRowContext(ctx, cpu, mem).Scan(&t.id, &t.cpu, &t.mem, &t.payload)
	if errors.Is(err, sql.ErrNoRows) {
		return t, false, nil
	}
	if err != nil {
		return t, false, err
	}
	return t, true, b.checkTask(&t, cpu, mem)
}

// pop times FOR POP by consumers consumers on --prefill random tasks, then
// checks what they popped against what is left.
func (b *bencher) pop(consumers int, mode string) error {
	res, err := b.popRun(consumers, mode)
	if err != nil {
		return err
	}
	return b.rep.pop(res)
}

// popRun is a pop run, checked, and what it measured; the lease runs
// compare with it.
func (b *bencher) popRun(consumers int, mode string) (popResult, error) {
	if err := b.reset(); err != nil {
		return popResult{}, err
	}
	if err := b.fill("random", b.o.prefill); err != nil {
		return popResult{}, err
	}
	var res runResult
	var rss *rssStats
	var err error
	if b.procs != nil {
		rss = b.procs.rss()
		res, err = b.procs.run(procCmd{Op: "pop", Clients: consumers, Mode: mode})
	} else {
		res, err = b.popClients(consumers, mode)
	}
	if err != nil {
		return popResult{}, err
	}
	if err := b.checkTaken(res.ids, int64(b.o.prefill), res.rows); err != nil {
		return popResult{}, err
	}
	sec := res.elapsed.Seconds()
	return popResult{
		Bench: "pop", Consumers: consumers, ConsumerResources: mode, Prefill: b.o.prefill,
		Rows: res.rows, EmptyPops: res.empty, Seconds: sec, RowsPerS: perSecond(res.rows, sec),
		Samples: int64(len(res.lat)), P50MS: pct(res.lat, 50), P99MS: pct(res.lat, 99),
		Stop: res.stop, LimitOps: b.o.lim.ops, LimitS: b.o.lim.dur.Seconds(),
		Waits: b.newWaitStats(res.waits), RSS: rss, ByProcess: res.byProcess,
	}, nil
}

// popClients runs the consumers of a pop run, on the table as filled: in
// this process, or in a child process its share of them. res.ids are the
// tasks each consumer popped, checked (checkTask).
func (b *bencher) popClients(consumers int, mode string) (runResult, error) {
	ids := make([][]int64, consumers)
	res, err := b.workers(consumers, 1, func(c *sql.Conn, i int) (opFn, error) {
		st, err := c.PrepareContext(b.ctx, b.q.pop)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, r *rand.Rand) (int, error) {
			cpu, mem := consumerLimits(mode, r)
			t, ok, err := b.popOne(ctx, st, cpu, mem)
			if err != nil || !ok {
				return 0, err
			}
			ids[i] = append(ids[i], t.id)
			return 1, nil
		}, nil
	})
	res.ids = ids
	return res, err
}
