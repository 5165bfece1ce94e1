package bench

// fdbqueue bench's takeover workload (--processes only): how long the
// processes sharing a file: database stand still when the one that serves
// it dies.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"
)

const (
	// takeoverWarm is how long the surviving processes pop before the
	// kill.
	takeoverWarm = 300 * time.Millisecond
	// takeoverTimeout bounds the wait for every survivor to go on.
	takeoverTimeout = 2 * time.Minute
)

// takeover fills --prefill tasks, has every child that does not serve pop
// (any task fits) in a loop on one connection, and kills the serving
// child with SIGKILL: a survivor (or this process, a client too) opens the
// database, which recovers its log, and serves it; the others connect to
// it. Each survivor's figure is from the kill to the end of its first pop
// begun after it. Checked: no task popped twice, popped + left = filled
// (the killed child popped nothing). Its resident memory is read after the
// fill, and the new server's once the survivors went on.
func (b *bencher) takeover() error {
	g := b.procs
	if err := b.reset(); err != nil {
		return err
	}
	if err := b.fill("random", b.o.prefill); err != nil {
		return err
	}
	rss := g.rss()
	srv := g.server()
	if srv == nil {
		return errors.New("no process of the bench serves the database: there is none to kill")
	}
	var survivors []int
	for _, c := range g.children {
		if c != srv && !c.gone {
			survivors = append(survivors, c.i)
		}
	}
	if err := g.sendAll(survivors, procCmd{Op: "takeover"}); err != nil {
		return err
	}
	if err := g.await("ready", survivors, nil); err != nil {
		return err
	}
	sleepCtx(b.ctx, takeoverWarm)
	srv.killed = true
	killed := time.Now()
	if err := srv.cmd.Process.Kill(); err != nil {
		return fmt.Errorf("killing process %d (pid %d): %w", srv.i, srv.pid, err)
	}
	srv.serving = false
	if err := g.sendAll(survivors, procCmd{Op: "killed", AtNS: killed.UnixNano()}); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(b.ctx, takeoverTimeout)
	defer cancel()
	var rec []time.Duration
	want := map[int]bool{}
	for _, i := range survivors {
		want[i] = true
	}
	for len(want) > 0 {
		m, err := g.next(ctx)
		if err != nil {
			if ctx.Err() != nil && b.ctx.Err() == nil {
				return fmt.Errorf("%w: %d of %d surviving processes ran no statement within %v of the kill", errSelfCheck, len(want), len(survivors), takeoverTimeout)
			}
			return err
		}
		if m.Kind != "recovered" || !want[m.from] {
			return fmt.Errorf("bench process %d said %q, not recovered", m.from, m.Kind)
		}
		delete(want, m.from)
		rec = append(rec, time.Duration(m.RecoveredNS))
	}
	if err := g.sendAll(survivors, procCmd{Op: "stop"}); err != nil {
		return err
	}
	var ids [][]int64
	var popped int64
	if err := g.await("done", survivors, func(m procMsg) {
		ids = append(ids, m.IDs)
		popped += m.Rows
		g.children[m.from].serving = m.Serving
		g.tasks.Add(m.Tasks)
	}); err != nil {
		return err
	}
	res := takeoverResult{Bench: "takeover", Prefill: b.o.prefill, Survivors: len(survivors), Rows: popped, RSS: rss}
	if err := b.checkTaken(ids, int64(b.o.prefill), popped); err != nil {
		return err
	}
	// Who took over: a survivor said so when it stopped, or it is this
	// process.
	if s := g.server(); s != nil {
		res.TakenOverBy = fmt.Sprintf("process %d", s.i)
		res.NewServerMB, _ = vmRSS(s.pid)
	} else if here, err := servingHere(b.o.cfg.Path); err != nil {
		return err
	} else if here {
		res.TakenOverBy = "parent"
		res.NewServerMB, _ = vmRSS(os.Getpid())
	}
	if res.TakenOverBy == "" {
		return fmt.Errorf("%w: after the kill, no process of the bench serves the database", errSelfCheck)
	}
	slices.Sort(rec)
	for _, d := range rec {
		res.AllMS = append(res.AllMS, ms(d))
	}
	res.MaxMS = res.AllMS[len(res.AllMS)-1]
	res.P50MS = pct(rec, 50)
	return b.rep.takeover(res)
}
