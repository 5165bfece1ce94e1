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
	if err := b.reset(); err != nil {
		return err
	}
	t0 := time.Now()
	filled := n
	var lastID int64
	pushLast := func(ex interface {
		ExecContext(context.Context, string, ...any) (sql.Result, error)
	}) error {
		res, err := ex.ExecContext(b.ctx, b.q.push, grades-1, 1, 1, b.payload)
		if err != nil {
			return err
		}
		lastID, err = res.LastInsertId()
		return err
	}
	if workload == "worst" {
		if err := b.fill("worst", n-1); err != nil {
			return err
		}
		if err := pushLast(b.db); err != nil {
			return err
		}
	} else if err := b.fill("random", n); err != nil {
		return err
	}
	fillS := time.Since(t0).Seconds()
	if b.faults.afterFill != nil {
		if err := b.faults.afterFill(b.ctx, b.db, b.o.table, workload); err != nil {
			return err
		}
	}

	conn, err := b.db.Conn(b.ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	st, err := conn.PrepareContext(b.ctx, b.q.pop)
	if err != nil {
		return err
	}
	defer st.Close()
	r := rand.New(rand.NewPCG(uint64(n), 7))
	all := make([]float64, 0, b.o.reps)
	var waits []fdbmodel.Counts
	found := 0
	for range b.o.reps {
		cpu, mem := worstCPU, worstMem
		if workload == "random" {
			cpu, mem = consumerLimits("random", r)
		}
		var task poppedTask
		var ok bool
		t := time.Now()
		err := b.metered(b.ctx, &waits, func(ctx context.Context) (err error) {
			task, ok, err = b.popOne(ctx, st, cpu, mem)
			return err
		})
		d := time.Since(t)
		if err != nil {
			return err
		}
		all = append(all, ms(d))
		if ok {
			found++
		}
		if workload == "worst" {
			if !ok {
				return fmt.Errorf("%w: the worst consumer found no task; task %d fits it", errSelfCheck, lastID)
			}
			if task.id != lastID {
				return fmt.Errorf("%w: the worst consumer popped task %d, not task %d, the only one that fits it", errSelfCheck, task.id, lastID)
			}
			if err := pushLast(conn); err != nil {
				return err
			}
		}
	}
	popped := int64(found)
	if workload == "worst" {
		popped = 0 // each pop was pushed again
	}
	left, err := b.count()
	if err != nil {
		return err
	}
	if err := checkPopped(int64(filled), popped, left); err != nil {
		return err
	}
	mean, std := meanStd(all)
	s := append([]float64(nil), all...)
	sort.Float64s(s)
	res := getTaskResult{
		Bench: "get_task", Structure: "fdbqueue-" + b.o.config, Workload: workload, Size: n,
		Reps: b.o.reps, Found: found, MeanMS: mean, StdMS: std,
		MinMS: s[0], MedianMS: (s[(len(s)-1)/2] + s[len(s)/2]) / 2, MaxMS: s[len(s)-1],
		AllMS: all, FillS: fillS, Plan: "fit index", Waits: b.newWaitStats(waits),
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
