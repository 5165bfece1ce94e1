package bench

// fdbqueue bench's latency workload, the seed's get_task.

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/fdbqueue/fdbqueue/internal/fdbmodel"
)

// latency is the seed's get_task benchmark: fill n tasks, then time one
// pop, --reps times. worst: the consumer has cpu 4, mem 16 and only the
// last task pushed fits it; after each pop, a fitting task is pushed again,
// untimed, so that every timed pop searches the whole queue.
func (b *bencher) latency(workload string, n int) error {
	fillS, lastID, err := b.latencyFill(workload, n)
	if err != nil {
		return err
	}
	pops, err := b.timePops(workload, n, lastID)
	if err != nil {
		return err
	}
	popped := int64(pops.found)
	if workload == "worst" {
		popped = 0 // each pop was pushed again
	}
	left, err := b.count()
	if err != nil {
		return err
	}
	if err := checkGone(int64(n), popped, left, "popped"); err != nil {
		return err
	}
	return b.reportGetTask(workload, n, fillS, pops)
}

// execer is a *sql.DB or a *sql.Conn.
type execer interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}

// pushWorstFit pushes the task the worst consumer fits, and returns its
// id.
func (b *bencher) pushWorstFit(ex execer) (int64, error) {
	res, err := ex.ExecContext(b.ctx, b.q.push, grades-1, 1, 1, b.payload)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// latencyFill fills the table with latency's n tasks. It returns the
// seconds the fill took and, for worst, the id of the one task that fits.
func (b *bencher) latencyFill(workload string, n int) (fillS float64, lastID int64, err error) {
	if err := b.reset(); err != nil {
		return 0, 0, err
	}
	t0 := time.Now()
	if workload == "worst" {
		if err := b.fill("worst", n-1); err != nil {
			return 0, 0, err
		}
		if lastID, err = b.pushWorstFit(b.db); err != nil {
			return 0, 0, err
		}
	} else if err := b.fill("random", n); err != nil {
		return 0, 0, err
	}
	fillS = time.Since(t0).Seconds()
	if b.faults.afterFill != nil {
		if err := b.faults.afterFill(b.ctx, b.db, b.o.table, workload); err != nil {
			return 0, 0, err
		}
	}
	return fillS, lastID, nil
}

// latencyPops are latency's timed pops: each one's milliseconds, their
// waits on a modeled cluster, and how many found a task.
type latencyPops struct {
	all   []float64
	waits []fdbmodel.Counts
	found int
}

// timePops times --reps pops on one connection. worst: each must pop task
// lastID, the only one that fits, which is then pushed again.
func (b *bencher) timePops(workload string, n int, lastID int64) (latencyPops, error) {
	p := latencyPops{all: make([]float64, 0, b.o.reps)}
	conn, err := b.db.Conn(b.ctx)
	if err != nil {
		return p, err
	}
	defer conn.Close()
	st, err := conn.PrepareContext(b.ctx, b.q.pop)
	if err != nil {
		return p, err
	}
	defer st.Close()
	r := rand.New(rand.NewPCG(uint64(n), 7))
	for range b.o.reps {
		cpu, mem := worstCPU, worstMem
		if workload == "random" {
			cpu, mem = consumerLimits("random", r)
		}
		var task poppedTask
		var ok bool
		t := time.Now()
		err := b.metered(b.ctx, &p.waits, func(ctx context.Context) (err error) {
			task, ok, err = b.popOne(ctx, st, cpu, mem)
			return err
		})
		d := time.Since(t)
		if err != nil {
			return p, err
		}
		p.all = append(p.all, ms(d))
		if ok {
			p.found++
		}
		if workload == "worst" {
			if !ok {
				return p, fmt.Errorf("%w: the worst consumer found no task; task %d fits it", errSelfCheck, lastID)
			}
			if task.id != lastID {
				return p, fmt.Errorf("%w: the worst consumer popped task %d, not task %d, the only one that fits it", errSelfCheck, task.id, lastID)
			}
			if lastID, err = b.pushWorstFit(conn); err != nil {
				return p, err
			}
		}
	}
	return p, nil
}

// reportGetTask reports a latency run.
func (b *bencher) reportGetTask(workload string, n int, fillS float64, p latencyPops) error {
	mean, std := meanStd(p.all)
	s := append([]float64(nil), p.all...)
	sort.Float64s(s)
	res := getTaskResult{
		Bench: "get_task", Structure: "fdbqueue-" + b.o.config, Workload: workload, Size: n,
		Reps: b.o.reps, Found: p.found, MeanMS: mean, StdMS: std,
		MinMS: s[0], MedianMS: (s[(len(s)-1)/2] + s[len(s)/2]) / 2, MaxMS: s[len(s)-1],
		AllMS: p.all, FillS: fillS, Plan: "fit index", Waits: b.newWaitStats(p.waits),
	}
	if b.fsyncMS > 0 {
		res.FsyncMS = b.fsyncMS
		res.FsyncRatio = res.MedianMS / b.fsyncMS
	}
	return b.rep.getTask(res)
}

func meanStd(x []float64) (float64, float64) {
	var sum float64
	for _, v := range x {
		sum += v
	}
	mean := sum / float64(len(x))
	if len(x) < 2 {
		return mean, 0
	}
	var ss float64
	for _, v := range x {
		ss += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(ss / float64(len(x)-1))
}
