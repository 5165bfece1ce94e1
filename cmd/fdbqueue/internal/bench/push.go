package bench

// fdbqueue bench's push workload.

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
)

func pushMode(batch int) string {
	if batch == 1 {
		return "single"
	}
	return fmt.Sprintf("batch%d", batch)
}

// push times INSERTs of batch rows by clients clients, then checks that the
// table holds the rows they pushed.
func (b *bencher) push(clients, batch int) error {
	if err := b.reset(); err != nil {
		return err
	}
	var res runResult
	var err error
	if b.procs != nil {
		res, err = b.procs.run(procCmd{Op: "push", Clients: clients, Batch: batch})
	} else {
		res, err = b.pushClients(clients, batch)
	}
	if err != nil {
		return err
	}
	if err := b.afterRun(); err != nil {
		return err
	}
	n, err := b.count()
	if err != nil {
		return err
	}
	if err := checkPushed(res.rows, n); err != nil {
		return err
	}
	sec := res.elapsed.Seconds()
	return b.rep.push(pushResult{
		Bench: "push", Mode: pushMode(batch), Clients: clients, Batch: batch,
		Rows: res.rows, Stmts: res.stmts, Seconds: sec,
		RowsPerS: perSecond(res.rows, sec), StmtsPerS: perSecond(res.stmts, sec),
		Samples: int64(len(res.lat)), P50MS: pct(res.lat, 50), P99MS: pct(res.lat, 99),
		Stop: res.stop, LimitOps: b.o.lim.ops, LimitS: b.o.lim.dur.Seconds(),
		Waits: b.newWaitStats(res.waits), ByProcess: res.byProcess,
	})
}

// pushClients runs the clients of a push run: in this process, or in a
// child process its share of them.
func (b *bencher) pushClients(clients, batch int) (runResult, error) {
	q := b.q.batch(batch)
	return b.workers(clients, batch, func(c *sql.Conn, _ int) (opFn, error) {
		st, err := c.PrepareContext(b.ctx, q)
		if err != nil {
			return nil, err
		}
		args := make([]any, 0, 4*batch)
		return func(ctx context.Context, r *rand.Rand) (int, error) {
			args = args[:0]
			for range batch {
				p, cpu, mem := randTask(r)
				args = append(args, p, cpu, mem, b.payload)
			}
			_, err := st.ExecContext(ctx, args...)
			return batch, err
		}, nil
	})
}
