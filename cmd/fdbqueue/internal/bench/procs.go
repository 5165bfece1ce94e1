package bench

// fdbqueue bench --processes N: the parent's side. The bench runs again as
// N child processes on the same file: database (child.go), which
// package kv/shared lets them share: the first to open it serves it on a
// Unix socket in its directory, the others run their transactions there.
//
// Who serves: process 0, a child, started alone and first, so that it
// opens the database first; it also runs its share of the clients, as one
// of N worker processes on a host would (the first of them to open the
// database serves it). The parent opens the database after it, as a client
// of process 0: it fills and checks through the socket, and runs no timed
// statement but the pushes of wait_wake. A parent that served would make
// every child's statement cross the socket and a fifth process hold the
// data: not what N processes sharing a database look like.
//
// The conversation: one JSON object a line, commands (procCmd) on a
// child's standard input, messages (procMsg) on its standard output; its
// standard error is the parent's. A run: the parent sends each child its
// share of the clients and of --limit-ops (the time limit is each child's
// whole), each prepares its connections and says ready; once all are, the
// parent says go; the first child to spend its share of the rows has the
// parent stop the others (so that every process runs until the run ends);
// each sends what it measured: rows, its start and end on the wall clock
// (which the processes of a host share), every statement's latency, the
// tasks it popped. The parent sums the rows over the span from the first
// start to the last end, merges the latencies, and runs the checks over
// all the processes' tasks. Closing a child's standard input ends it.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/kv/shared"
)

// procChildEnv marks a child process of fdbqueue bench --processes; its
// value is the child's index, 0 for the one that opens the database first.
const procChildEnv = "FDBQUEUE_BENCH_CHILD"

// maxProcesses bounds --processes.
const maxProcesses = 64

// procCmd is a command from the parent to a child.
type procCmd struct {
	// Op: push, pop, wait or takeover starts a run of this child's share;
	// go starts the run's clients once every child is ready; stop ends the
	// run; killed tells the takeover run's children when the serving
	// process was killed.
	Op      string `json:"op"`
	Clients int    `json:"clients,omitempty"` // push: clients; pop: consumers; wait: waiters
	Batch   int    `json:"batch,omitempty"`   // push
	Mode    string `json:"mode,omitempty"`    // pop: consumer resources
	Ops     int    `json:"ops,omitempty"`     // this child's share of --limit-ops (0: no limit)
	DurNS   int64  `json:"dur_ns,omitempty"`  // --limit-s
	AtNS    int64  `json:"at_ns,omitempty"`   // killed: when, on the wall clock
}

// procMsg is a message from a child to the parent.
type procMsg struct {
	// Kind: hello once the database is open; ready once a run's clients
	// are; done at a run's end; arrival for each task a wait_wake waiter
	// took; recovered for the first statement of the takeover run begun
	// after the kill that succeeded; error when a run failed. The parent's
	// reader adds exit when the child's output ends.
	Kind    string `json:"kind"`
	PID     int    `json:"pid,omitempty"`
	Serving bool   `json:"serving,omitempty"` // hello, done: this child serves the database
	// done
	Rows    int64   `json:"rows,omitempty"`
	Stmts   int64   `json:"stmts,omitempty"`
	Empty   int64   `json:"empty,omitempty"`
	StartNS int64   `json:"start_ns,omitempty"` // the wall clock
	EndNS   int64   `json:"end_ns,omitempty"`
	Stop    string  `json:"stop,omitempty"`
	LatNS   []int64 `json:"lat_ns,omitempty"`
	IDs     []int64 `json:"ids,omitempty"`   // the tasks popped
	Tasks   int64   `json:"tasks,omitempty"` // tasks taken that passed checkTask
	// arrival
	ID   int64 `json:"id,omitempty"`
	AtNS int64 `json:"at_ns,omitempty"`
	// recovered: from the kill to the end of that statement
	RecoveredNS int64 `json:"recovered_ns,omitempty"`
	// error
	Err       string `json:"err,omitempty"`
	SelfCheck bool   `json:"self_check,omitempty"`

	from int // the child's index, set by the parent's reader
}

// procChild is a child process, as the parent sees it.
type procChild struct {
	i       int
	cmd     *exec.Cmd
	in      io.WriteCloser
	pid     int
	serving bool // as it last said
	killed  bool // by the takeover run: its exit is expected
	gone    bool // its output ended
}

// procGroup is the parent's side of --processes.
type procGroup struct {
	o        *benchOptions
	ctx      context.Context
	children []*procChild
	msgs     chan procMsg
	quit     chan struct{} // closed by close: the readers deliver no more
	readers  sync.WaitGroup
	tasks    *atomic.Int64 // the bencher's tasksChecked
}

// childError is a child's failure, as it reported it: a failed self-check
// stays one (errors.Is errSelfCheck).
type childError struct {
	msg       string
	selfCheck bool
}

func (e *childError) Error() string     { return e.msg }
func (e *childError) Is(err error) bool { return e.selfCheck && err == errSelfCheck }

// startProcs starts the child processes: process 0 alone until it has
// opened the database (and so serves it, unless a process outside the
// bench does), then the others.
func startProcs(ctx context.Context, o *benchOptions, stderr io.Writer) (*procGroup, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("bench --processes: finding this program to run it again: %w", err)
	}
	g := &procGroup{o: o, ctx: ctx, msgs: make(chan procMsg), quit: make(chan struct{})}
	for i := range o.processes {
		if err := g.start(exe, i, stderr); err != nil {
			return g, err
		}
		if i == 0 || i == o.processes-1 {
			// Process 0 opens the database first; then the others, at
			// once.
			from := []int{0}
			if i > 0 {
				from = g.indexes(1, o.processes)
			}
			if err := g.await("hello", from, func(m procMsg) {
				c := g.children[m.from]
				c.pid, c.serving = m.PID, m.Serving
			}); err != nil {
				return g, err
			}
		}
	}
	return g, nil
}

// start runs child i: this program, with the parent's arguments.
func (g *procGroup) start(exe string, i int, stderr io.Writer) error {
	cmd := exec.Command(exe, append([]string{"bench"}, g.o.args...)...)
	cmd.Env = append(os.Environ(), procChildEnv+"="+strconv.Itoa(i))
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("bench --processes: starting process %d: %w", i, err)
	}
	c := &procChild{i: i, cmd: cmd, in: in, pid: cmd.Process.Pid}
	g.children = append(g.children, c)
	g.readers.Add(1)
	go func() {
		defer g.readers.Done()
		dec := json.NewDecoder(out)
		for {
			var m procMsg
			if err := dec.Decode(&m); err != nil {
				if !errors.Is(err, io.EOF) {
					_, _ = io.Copy(io.Discard, out)
				}
				exit := procMsg{Kind: "exit", from: i}
				if werr := cmd.Wait(); werr != nil {
					exit.Err = werr.Error()
				} else if !errors.Is(err, io.EOF) {
					exit.Err = "its output: " + err.Error()
				}
				g.deliver(exit)
				return
			}
			m.from = i
			if !g.deliver(m) {
				return
			}
		}
	}()
	return nil
}

// deliver hands m to the parent; false once the group is closed.
func (g *procGroup) deliver(m procMsg) bool {
	select {
	case g.msgs <- m:
		return true
	case <-g.quit:
		return false
	}
}

// indexes lists the children from lo to hi-1.
func (g *procGroup) indexes(lo, hi int) []int {
	var out []int
	for i := lo; i < hi; i++ {
		out = append(out, i)
	}
	return out
}

// send sends cmd to child i.
func (g *procGroup) send(i int, cmd procCmd) error {
	b, err := json.Marshal(cmd)
	if err != nil {
		return err
	}
	if _, err := g.children[i].in.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("bench process %d (pid %d): %w", i, g.children[i].pid, err)
	}
	return nil
}

// sendAll sends cmd to the children in to.
func (g *procGroup) sendAll(to []int, cmd procCmd) error {
	for _, i := range to {
		if err := g.send(i, cmd); err != nil {
			return err
		}
	}
	return nil
}

// next is the next message of a child, before ctx ends; a child's error
// or unexpected exit is returned as an error.
func (g *procGroup) next(ctx context.Context) (procMsg, error) {
	for {
		select {
		case m := <-g.msgs:
			c := g.children[m.from]
			switch m.Kind {
			case "error":
				return m, &childError{fmt.Sprintf("process %d: %s", m.from, m.Err), m.SelfCheck}
			case "exit":
				c.gone = true
				if c.killed {
					continue
				}
				why := "exited"
				if m.Err != "" {
					why += ": " + m.Err
				}
				return m, fmt.Errorf("bench process %d (pid %d) %s", m.from, c.pid, why)
			}
			return m, nil
		case <-ctx.Done():
			return procMsg{}, ctx.Err()
		}
	}
}

// await reads messages until each child in from has sent one of kind,
// passed to fn; any other message is an error.
func (g *procGroup) await(kind string, from []int, fn func(procMsg)) error {
	want := map[int]bool{}
	for _, i := range from {
		want[i] = true
	}
	for len(want) > 0 {
		m, err := g.next(g.ctx)
		if err != nil {
			return err
		}
		if m.Kind != kind || !want[m.from] {
			return fmt.Errorf("bench process %d said %q, not %q", m.from, m.Kind, kind)
		}
		delete(want, m.from)
		if fn != nil {
			fn(m)
		}
	}
	return nil
}

// split divides n into k shares, as even as they go, the larger first.
func split(n, k int) []int {
	out := make([]int, k)
	for i := range out {
		out[i] = n / k
		if i < n%k {
			out[i]++
		}
	}
	return out
}

// run runs a push or pop run across the children: cmd.Clients split
// between them, and the run's limits.
func (g *procGroup) run(cmd procCmd) (runResult, error) {
	all := g.indexes(0, len(g.children))
	clients := split(cmd.Clients, len(all))
	ops := split(g.o.lim.ops, len(all))
	for i := range all {
		c := cmd
		c.Clients, c.Ops, c.DurNS = clients[i], ops[i], int64(g.o.lim.dur)
		if err := g.send(i, c); err != nil {
			return runResult{}, err
		}
	}
	if err := g.await("ready", all, nil); err != nil {
		return runResult{}, err
	}
	if err := g.sendAll(all, procCmd{Op: "go"}); err != nil {
		return runResult{}, err
	}
	var res runResult
	var first, last int64
	stops := map[string]bool{}
	halted := false
	err := g.await("done", all, func(m procMsg) {
		if m.Stop == "count" && !halted {
			// Every process runs until the run ends: the others stop
			// when the first has spent its rows (one that has too
			// ignores the stop).
			halted = true
			_ = g.sendAll(all, procCmd{Op: "stop"})
		}
		stops[m.Stop] = true
		lat := make([]time.Duration, len(m.LatNS))
		for i, ns := range m.LatNS {
			lat[i] = time.Duration(ns)
		}
		res.byProcess = append(res.byProcess, procRun{Process: m.from, Serving: g.children[m.from].serving,
			Clients: clients[m.from], Rows: m.Rows, Stmts: m.Stmts, Seconds: time.Duration(m.EndNS - m.StartNS).Seconds(),
			P50MS: pct(lat, 50), P99MS: pct(lat, 99), Stop: m.Stop})
		res.lat = append(res.lat, lat...)
		res.rows += m.Rows
		res.stmts += m.Stmts
		res.empty += m.Empty
		if first == 0 || m.StartNS < first {
			first = m.StartNS
		}
		last = max(last, m.EndNS)
		res.ids = append(res.ids, m.IDs)
		g.tasks.Add(m.Tasks)
	})
	if err != nil {
		return runResult{}, err
	}
	res.start, res.elapsed = time.Unix(0, first), time.Duration(last-first)
	slices.SortFunc(res.byProcess, func(a, b procRun) int { return a.Process - b.Process })
	switch {
	case stops["count"]:
		res.stop = "count"
	default:
		res.stop = "time"
	}
	return res, nil
}

// procRun is one process's share of a run across processes (JSON
// by_process).
type procRun struct {
	Process int     `json:"process"`
	Serving bool    `json:"serving"`
	Clients int     `json:"clients"`
	Rows    int64   `json:"rows"`
	Stmts   int64   `json:"stmts"`
	Seconds float64 `json:"seconds"`
	P50MS   float64 `json:"p50_ms"`
	P99MS   float64 `json:"p99_ms"`
	Stop    string  `json:"stop"` // count, time, or halt: another process's count
}

// servingHere reports whether this process serves the file database in
// dir, which it has open.
func servingHere(dir string) (bool, error) {
	// A second handle shares the process's (package shared).
	db, err := shared.Open(dir, embedded.FileConfig{Mode: embedded.ReadWrite})
	if err != nil {
		return false, err
	}
	defer db.Close()
	return db.Serving(), nil
}

// server is the child that serves the database, or nil.
func (g *procGroup) server() *procChild {
	for _, c := range g.children {
		if c.serving && !c.gone {
			return c
		}
	}
	return nil
}

// describe says who the processes are, for the report's header.
func (g *procGroup) describe() string {
	var pids []string
	for _, c := range g.children {
		pids = append(pids, strconv.Itoa(c.pid))
	}
	who := "none of them serves the database: a process outside the bench does"
	if s := g.server(); s != nil {
		who = fmt.Sprintf("process %d serves the database (it opened it first) and runs its share of the clients, the others are its clients", s.i)
	}
	return fmt.Sprintf("%d processes (pids %s): %s; this one (pid %d), a client too, fills and checks, and times nothing but wait_wake's pushes\n",
		len(g.children), strings.Join(pids, ", "), who, os.Getpid())
}

// close ends the children: those that do not serve first, then the
// server (so that no client takes the database over from it), and waits
// for them, killing any still there after closeTimeout.
func (g *procGroup) close() error {
	var errs []error
	var last []*procChild
	end := func(cs []*procChild) {
		for _, c := range cs {
			c.in.Close()
		}
		deadline := time.After(closeTimeout)
		for _, c := range cs {
			for !c.gone {
				select {
				case m := <-g.msgs:
					d := g.children[m.from]
					switch m.Kind {
					case "exit":
						d.gone = true
						if m.Err != "" && !d.killed {
							errs = append(errs, fmt.Errorf("bench process %d (pid %d) exited: %s", d.i, d.pid, m.Err))
						}
					case "error":
						errs = append(errs, fmt.Errorf("bench process %d: %s", d.i, m.Err))
					}
				case <-deadline:
					for _, c := range cs {
						if !c.gone {
							_ = c.cmd.Process.Kill()
						}
					}
					deadline = nil
				}
			}
		}
	}
	var first []*procChild
	for _, c := range g.children {
		if c.serving {
			last = append(last, c)
		} else {
			first = append(first, c)
		}
	}
	end(first)
	end(last)
	close(g.quit)
	g.readers.Wait()
	return errors.Join(errs...)
}

// closeTimeout bounds how long close waits for the children to exit.
const closeTimeout = time.Minute

// rssStats is the resident memory (VmRSS) of the bench's processes at
// the end of a prefill.
type rssStats struct {
	ServerMB  float64   `json:"server_mb"`  // the process that serves: it holds the data
	ClientsMB []float64 `json:"clients_mb"` // the other children
	ParentMB  float64   `json:"parent_mb"`  // this one, a client that filled the table
}

// rss reads the processes' resident memory; nil where /proc does not
// tell (not Linux).
func (g *procGroup) rss() *rssStats {
	var s rssStats
	var err error
	if s.ParentMB, err = vmRSS(os.Getpid()); err != nil {
		return nil
	}
	for _, c := range g.children {
		if c.gone {
			continue
		}
		mb, err := vmRSS(c.pid)
		if err != nil {
			return nil
		}
		if c.serving {
			s.ServerMB = mb
		} else {
			s.ClientsMB = append(s.ClientsMB, mb)
		}
	}
	return &s
}

// vmRSS is the resident memory of process pid in MB (10^6 bytes), from
// /proc/PID/status.
func vmRSS(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/%d/status: VmRSS %q", pid, v)
			}
			return float64(kb) * 1024 / 1e6, nil
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no VmRSS", pid)
}

// waiters starts wait_wake's waiters in the children that do not serve
// (spread over them, the first ones first): what each takes comes on got,
// with when it came on the wall clock; got is closed if one fails. stop
// stops them, and returns the first failure.
func (g *procGroup) waiters(n int) (stop func() error, got <-chan arrival, err error) {
	var to []int
	for _, c := range g.children {
		if !c.serving && !c.gone {
			to = append(to, c.i)
		}
	}
	if len(to) == 0 {
		return nil, nil, errors.New("wait_wake across processes: every child serves or is gone")
	}
	shares := split(n, len(to))
	var busy []int
	for k, i := range to {
		if shares[k] == 0 {
			continue
		}
		busy = append(busy, i)
		if err := g.send(i, procCmd{Op: "wait", Clients: shares[k]}); err != nil {
			return nil, nil, err
		}
	}
	if err := g.await("ready", busy, nil); err != nil {
		return nil, nil, err
	}
	ch := make(chan arrival)
	quit := make(chan struct{})
	var failure error
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		done := 0
		for done < len(busy) {
			m, err := g.next(g.ctx)
			if err != nil {
				failure = err
				close(ch)
				return
			}
			switch m.Kind {
			case "arrival":
				select {
				case ch <- arrival{poppedTask{id: m.ID}, time.Unix(0, m.AtNS)}:
				case <-quit:
				}
			case "done":
				done++
				g.tasks.Add(m.Tasks)
			default:
				failure = fmt.Errorf("bench process %d said %q during wait_wake", m.from, m.Kind)
				close(ch)
				return
			}
		}
	}()
	var once sync.Once
	stop = func() error {
		once.Do(func() {
			close(quit)
			serr := g.sendAll(busy, procCmd{Op: "stop"})
			<-finished
			if failure == nil {
				failure = serr
			}
		})
		return failure
	}
	return stop, ch, nil
}

// syncWriter serializes writes to w: the parent's and its children's
// standard error.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
