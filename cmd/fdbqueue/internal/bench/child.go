package bench

// fdbqueue bench --processes N: a child's side (procs.go describes
// the conversation). A child opens the database, says hello, and runs the
// parent's commands, one run at a time, until its standard input ends. It
// prints no report: its standard output is the conversation.

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"sync"
	"time"
)

// procProfileEnv, when set, has each child write a CPU profile of its
// whole life to the file it names, with -N (the child's index) appended:
// FDBQUEUE_BENCH_CPUPROFILE=/tmp/bench.pprof gives /tmp/bench.pprof-0
// (the serving process) and so on. procTraceEnv does the same with an
// execution trace (go tool trace), which shows where statements wait.
const (
	procProfileEnv = "FDBQUEUE_BENCH_CPUPROFILE"
	procTraceEnv   = "FDBQUEUE_BENCH_TRACE"
)

// benchChild is child idx's side of fdbqueue bench --processes.
func benchChild(ctx context.Context, o *benchOptions, idx int, stdin io.Reader, stdout io.Writer) (err error) {
	stopProfile, err := childProfile(procProfileEnv, idx, pprof.StartCPUProfile, pprof.StopCPUProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	stopTrace, err := childProfile(procTraceEnv, idx, trace.Start, trace.Stop)
	if err != nil {
		return err
	}
	defer stopTrace()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	db, err := openBenchDB(o)
	if err != nil {
		return err
	}
	defer db.Close()
	conns := max(64, slices.Max(o.clients)+1, slices.Max(o.consumers)+1, slices.Max(o.waiters)+2)
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	if err := db.PingContext(ctx); err != nil {
		return err
	}
	c := &child{enc: json.NewEncoder(stdout), dir: o.cfg.Path}
	serving, err := servingHere(o.cfg.Path)
	if err != nil {
		return err
	}
	if err := c.send(procMsg{Kind: "hello", PID: os.Getpid(), Serving: serving}); err != nil {
		return err
	}
	c.b = newBencher(ctx, db, o, io.Discard, io.Discard, benchFaults{})
	c.cmds = make(chan procCmd)
	go c.read(stdin, cancel)
	for cmd := range c.cmds {
		err := c.do(ctx, cmd)
		if ctx.Err() != nil {
			break // the parent is gone, or ended the bench
		}
		if err != nil {
			if err := c.send(procMsg{Kind: "error", Err: err.Error(), SelfCheck: errors.Is(err, errSelfCheck)}); err != nil {
				return err
			}
		}
	}
	return nil
}

// childProfile starts what env asks for (start, writing to env's file
// with -idx appended); the function it returns stops it.
func childProfile(env string, idx int, start func(io.Writer) error, stop func()) (func(), error) {
	path := os.Getenv(env)
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path + "-" + strconv.Itoa(idx))
	if err != nil {
		return nil, err
	}
	if err := start(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		stop()
		f.Close()
	}, nil
}

// child is a child process's state.
type child struct {
	b    *bencher
	dir  string
	cmds chan procCmd // the commands but stop and killed

	encMu sync.Mutex // guards enc: waiters send arrivals concurrently
	enc   *json.Encoder

	mu     sync.Mutex
	halt   context.CancelFunc // ends the run in progress; nil between runs
	killed int64              // takeover: when the server was killed, Unix ns; 0 before
}

func (c *child) send(m procMsg) error {
	c.encMu.Lock()
	defer c.encMu.Unlock()
	return c.enc.Encode(m)
}

// read reads the parent's commands: stop and killed act at once, the
// others go to the main loop. The end of the input ends the child.
func (c *child) read(stdin io.Reader, cancel context.CancelFunc) {
	defer close(c.cmds)
	defer cancel()
	dec := json.NewDecoder(stdin)
	for {
		var cmd procCmd
		if err := dec.Decode(&cmd); err != nil {
			return
		}
		c.mu.Lock()
		switch cmd.Op {
		case "stop": // a stop that comes after its run ended is moot
			if c.halt != nil {
				c.halt()
			}
		case "killed":
			c.killed = cmd.AtNS
		}
		c.mu.Unlock()
		if cmd.Op != "stop" && cmd.Op != "killed" {
			c.cmds <- cmd
		}
	}
}

// startRun arms a run: its halt, what the parent's stop ends.
func (c *child) startRun(ctx context.Context) context.Context {
	halt, cancel := context.WithCancel(ctx)
	c.mu.Lock()
	c.halt = cancel
	c.mu.Unlock()
	return halt
}

func (c *child) endRun() {
	c.mu.Lock()
	if c.halt != nil {
		c.halt()
	}
	c.halt = nil
	c.mu.Unlock()
}

// ready says that the run's clients are ready, and waits for go.
func (c *child) ready(ctx context.Context) error {
	if err := c.send(procMsg{Kind: "ready"}); err != nil {
		return err
	}
	select {
	case cmd, ok := <-c.cmds:
		if !ok {
			return context.Canceled
		}
		if cmd.Op != "go" {
			return fmt.Errorf("the parent said %q, not go", cmd.Op)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// do runs one command.
func (c *child) do(ctx context.Context, cmd procCmd) error {
	b := c.b
	tasks := b.tasksChecked.Load()
	halt := c.startRun(ctx)
	defer c.endRun()
	switch cmd.Op {
	case "push", "pop":
		b.o.lim = limits{ops: cmd.Ops, dur: time.Duration(cmd.DurNS)}
		b.gate = func() error { return c.ready(ctx) }
		b.halt = halt
		defer func() { b.gate, b.halt = nil, nil }()
		var res runResult
		var err error
		if cmd.Op == "push" {
			res, err = b.pushClients(cmd.Clients, cmd.Batch)
		} else {
			res, err = b.popClients(cmd.Clients, cmd.Mode)
		}
		if err != nil {
			return err
		}
		m := procMsg{Kind: "done", Rows: res.rows, Stmts: res.stmts, Empty: res.empty,
			StartNS: res.start.UnixNano(), EndNS: res.start.Add(res.elapsed).UnixNano(), Stop: res.stop,
			IDs: slices.Concat(res.ids...), Tasks: b.tasksChecked.Load() - tasks}
		m.LatNS = make([]int64, len(res.lat))
		for i, d := range res.lat {
			m.LatNS[i] = int64(d)
		}
		return c.send(m)
	case "wait":
		if err := c.wait(ctx, halt, cmd.Clients); err != nil {
			return err
		}
	case "takeover":
		ids, err := c.takeover(ctx, halt)
		if err != nil {
			return err
		}
		serving, err := servingHere(c.dir)
		if err != nil {
			return err
		}
		return c.send(procMsg{Kind: "done", IDs: ids, Rows: int64(len(ids)), Serving: serving, Tasks: b.tasksChecked.Load() - tasks})
	default:
		return fmt.Errorf("the parent said %q", cmd.Op)
	}
	return c.send(procMsg{Kind: "done", Tasks: b.tasksChecked.Load() - tasks})
}

// wait runs waiters of wait_wake until the parent's stop: each task one
// takes is checked and sent to the parent with when it came, on the wall
// clock.
func (c *child) wait(ctx, halt context.Context, waiters int) error {
	b := c.b
	failed := make(chan error, 1)
	stop, err := b.consumers(ctx, waiters, b.q.popWait, func(ctx context.Context, st *sql.Stmt, _ int) error {
		err := func() error {
			t, ok, err := scanTask(st.QueryRowContext(ctx, cpuMax, memMax, waitFor))
			if !ok {
				return err
			}
			at := time.Now()
			if err := b.checkTask(&t, cpuMax, memMax); err != nil {
				return err
			}
			return c.send(procMsg{Kind: "arrival", ID: t.id, AtNS: at.UnixNano()})
		}()
		if err != nil && ctx.Err() == nil {
			select {
			case failed <- err:
			default:
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	if err := c.send(procMsg{Kind: "ready"}); err != nil {
		_ = stop()
		return err
	}
	select {
	case <-halt.Done():
	case <-failed:
	}
	return stop()
}

// takeover pops (any task fits) in a loop on one connection until the
// parent's stop, and returns the tasks it popped. Once the parent said
// when it killed the serving process, the first pop begun after that
// which succeeds (empty or not) is sent: from the kill to its end.
func (c *child) takeover(ctx, halt context.Context) ([]int64, error) {
	b := c.b
	conn, err := b.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	st, err := conn.PrepareContext(ctx, b.q.pop)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if err := c.send(procMsg{Kind: "ready"}); err != nil {
		return nil, err
	}
	var ids []int64
	reported := false
	for halt.Err() == nil {
		t0 := time.Now()
		t, ok, err := b.popOne(ctx, st, cpuMax, memMax)
		if err != nil {
			return ids, err
		}
		end := time.Now()
		if ok {
			ids = append(ids, t.id)
		}
		c.mu.Lock()
		killed := c.killed
		c.mu.Unlock()
		if killed != 0 && !reported && t0.UnixNano() > killed {
			reported = true
			if err := c.send(procMsg{Kind: "recovered", RecoveredNS: end.UnixNano() - killed}); err != nil {
				return ids, err
			}
		}
	}
	return ids, nil
}
