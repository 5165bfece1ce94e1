package bench

// fdbqueue bench's results: JSON lines with the comparison harness's field
// names, or a table that grows a row a run.

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// resultMeta is on every JSON line: which system and configuration ran.
type resultMeta struct {
	System string `json:"system"` // fdbqueue
	Config string `json:"config"` // memory, file-full, file-none, fdb, fdb-model
	// Processes is --processes: the processes that ran the clients.
	Processes int `json:"processes"`
	// Model is the modeled cluster's latencies (--model).
	Model *modelMeta `json:"model,omitempty"`
}

// pushResult is one push run.
type pushResult struct {
	Bench     string  `json:"bench"` // push
	Mode      string  `json:"mode"`  // single, batch100, ...
	Clients   int     `json:"clients"`
	Batch     int     `json:"batch"`
	Rows      int64   `json:"rows"`
	Stmts     int64   `json:"stmts"`
	Seconds   float64 `json:"seconds"`
	RowsPerS  float64 `json:"rows_per_s"`
	StmtsPerS float64 `json:"stmts_per_s"`
	Samples   int64   `json:"samples"` // statements timed, behind p50_ms and p99_ms
	P50MS     float64 `json:"p50_ms"`  // per statement
	P99MS     float64 `json:"p99_ms"`
	Stop      string  `json:"stop"` // count or time
	LimitOps  int     `json:"limit_ops"`
	LimitS    float64 `json:"limit_s"`
	// Waits are the INSERTs' on the modeled cluster (--model).
	Waits *waitStats `json:"waits,omitempty"`
	// ByProcess is each process's share (--processes).
	ByProcess []procRun `json:"by_process,omitempty"`
	resultMeta
}

// popResult is one pop run.
type popResult struct {
	Bench             string  `json:"bench"` // pop
	Consumers         int     `json:"consumers"`
	ConsumerResources string  `json:"consumer_resources"` // random or any
	Prefill           int     `json:"prefill"`
	Rows              int64   `json:"rows"` // tasks popped
	EmptyPops         int64   `json:"empty_pops"`
	Seconds           float64 `json:"seconds"`
	RowsPerS          float64 `json:"rows_per_s"` // pops/s
	Samples           int64   `json:"samples"`    // pops timed, the empty ones included
	P50MS             float64 `json:"p50_ms"`
	P99MS             float64 `json:"p99_ms"`
	Stop              string  `json:"stop"`
	LimitOps          int     `json:"limit_ops"`
	LimitS            float64 `json:"limit_s"`
	// Waits are the pops' on the modeled cluster (--model), the empty
	// ones included.
	Waits *waitStats `json:"waits,omitempty"`
	// RSS is the processes' resident memory at the end of the prefill
	// (--processes).
	RSS *rssStats `json:"rss,omitempty"`
	// ByProcess is each process's share (--processes).
	ByProcess []procRun `json:"by_process,omitempty"`
	resultMeta
}

// getTaskResult is one latency workload at one size.
type getTaskResult struct {
	Bench     string    `json:"bench"`     // get_task
	Structure string    `json:"structure"` // fdbqueue-CONFIG
	Workload  string    `json:"workload"`  // random or worst
	Size      int       `json:"size"`
	Reps      int       `json:"reps"`
	Found     int       `json:"found"`
	MeanMS    float64   `json:"mean_ms"`
	StdMS     float64   `json:"std_ms"`
	MinMS     float64   `json:"min_ms"`
	MedianMS  float64   `json:"median_ms"`
	MaxMS     float64   `json:"max_ms"`
	AllMS     []float64 `json:"all_ms"`
	FillS     float64   `json:"fill_s"`
	Plan      string    `json:"plan"`
	// On file: DSNs, the median fsync and median_ms / fsync_ms.
	FsyncMS    float64 `json:"fsync_ms,omitempty"`
	FsyncRatio float64 `json:"fsync_ratio,omitempty"`
	// Waits are the timed pops' on the modeled cluster (--model).
	Waits *waitStats `json:"waits,omitempty"`
	resultMeta
}

// fsyncResult is the fsync probe.
type fsyncResult struct {
	Bench    string  `json:"bench"` // fsync
	Reps     int     `json:"reps"`
	Samples  int64   `json:"samples"` // fsyncs timed: reps
	Bytes    int     `json:"bytes"`   // written before each fsync
	MedianMS float64 `json:"median_ms"`
	P99MS    float64 `json:"p99_ms"`
	MinMS    float64 `json:"min_ms"`
	MaxMS    float64 `json:"max_ms"`
	resultMeta
}

// waitWakeResult is one wake-up run (wait.go).
type waitWakeResult struct {
	Bench     string  `json:"bench"` // wait_wake
	Waiters   int     `json:"waiters"`
	Pushes    int     `json:"pushes"`
	Samples   int64   `json:"samples"` // wake-ups timed: pushes
	P50MS     float64 `json:"p50_ms"`  // from the push's start to the task in a waiter's hands
	P99MS     float64 `json:"p99_ms"`
	PushP50MS float64 `json:"push_p50_ms"` // the push statement alone
	resultMeta
}

// waitIdleResult is one idle run.
type waitIdleResult struct {
	Bench     string  `json:"bench"` // wait_idle
	Mode      string  `json:"mode"`  // wait or poll
	Consumers int     `json:"consumers"`
	Seconds   float64 `json:"seconds"`
	CPUMS     float64 `json:"cpu_ms"`  // the process's, user and system; -1: not measured here
	CPUPct    float64 `json:"cpu_pct"` // of one core
	Stmts     int64   `json:"stmts"`   // pops the consumers ran meanwhile
	StmtsPerS float64 `json:"stmts_per_s"`
	resultMeta
}

// waitPCResult is one producer/consumer run.
type waitPCResult struct {
	Bench       string  `json:"bench"` // wait_pc
	Mode        string  `json:"mode"`  // wait or poll
	Consumers   int     `json:"consumers"`
	Rate        int     `json:"rate"` // tasks a second the producer aimed at; 0: as fast as it could
	Rows        int64   `json:"rows"`
	Seconds     float64 `json:"seconds"` // until the last task was taken
	RowsPerS    float64 `json:"rows_per_s"`
	Samples     int64   `json:"samples"` // tasks timed from push to consumer: rows
	P50MS       float64 `json:"p50_ms"`  // from the push's start to the task in a consumer's hands
	P99MS       float64 `json:"p99_ms"`
	EmptyPops   int64   `json:"empty_pops"`
	CPUMS       float64 `json:"cpu_ms"`
	CPUMSPerRow float64 `json:"cpu_ms_per_row"`
	resultMeta
}

// leaseResult is one lease run, beside the pop run on the same prefill
// (lease.go).
type leaseResult struct {
	Bench             string  `json:"bench"` // lease
	Consumers         int     `json:"consumers"`
	ConsumerResources string  `json:"consumer_resources"` // random or any
	Prefill           int     `json:"prefill"`
	Rows              int64   `json:"rows"` // tasks leased and acked
	EmptyLeases       int64   `json:"empty_leases"`
	Seconds           float64 `json:"seconds"`
	RowsPerS          float64 `json:"rows_per_s"`    // tasks leased and acked a second
	LeaseSamples      int64   `json:"lease_samples"` // leases timed, the empty ones included
	LeaseP50MS        float64 `json:"lease_p50_ms"`
	LeaseP99MS        float64 `json:"lease_p99_ms"`
	AckSamples        int64   `json:"ack_samples"` // acks timed
	AckP50MS          float64 `json:"ack_p50_ms"`
	AckP99MS          float64 `json:"ack_p99_ms"`
	PopRowsPerS       float64 `json:"pop_rows_per_s"` // the pop run's
	PopSamples        int64   `json:"pop_samples"`
	PopP50MS          float64 `json:"pop_p50_ms"`
	PopP99MS          float64 `json:"pop_p99_ms"`
	LeaseOverPop      float64 `json:"lease_pop_p50_ratio"` // lease p50 / pop p50
	TaskOverPop       float64 `json:"task_pop_ratio"`      // pop rows/s / lease rows/s: a task's lease and ack against a pop
	Stop              string  `json:"stop"`
	LimitOps          int     `json:"limit_ops"`
	LimitS            float64 `json:"limit_s"`
	// LeaseWaits and AckWaits are the leases' (the empty ones included)
	// and the acks' on the modeled cluster (--model).
	LeaseWaits *waitStats `json:"lease_waits,omitempty"`
	AckWaits   *waitStats `json:"ack_waits,omitempty"`
	resultMeta
}

// leaseKillResult is the run whose consumers die holding leases.
type leaseKillResult struct {
	Bench       string  `json:"bench"` // lease_kill
	Consumers   int     `json:"consumers"`
	Dead        int     `json:"dead"` // consumers that died
	LeaseS      float64 `json:"lease_s"`
	Tasks       int     `json:"tasks"`
	Acked       int64   `json:"acked"`       // acks that removed their row: tasks, once the check passed
	Abandoned   int     `json:"abandoned"`   // leases the dead consumers held when they died
	Redelivered int     `json:"redelivered"` // tasks leased more than once
	MaxLeases   int     `json:"max_leases"`  // the most times one task was leased
	LostAcks    int64   `json:"lost_acks"`   // acks that removed nothing: their lease had expired
	Seconds     float64 `json:"seconds"`     // until the table was empty
	RowsPerS    float64 `json:"rows_per_s"`
	resultMeta
}

// takeoverResult is the run that kills the serving process
// (takeover.go).
type takeoverResult struct {
	Bench     string `json:"bench"` // takeover
	Prefill   int    `json:"prefill"`
	Survivors int    `json:"survivors"` // processes that pop through the kill
	Rows      int64  `json:"rows"`      // tasks they popped, before and after it
	// From the kill to the end of each survivor's first pop begun after
	// it: their median, their slowest, and each, from the fastest.
	P50MS float64   `json:"p50_ms"`
	MaxMS float64   `json:"max_ms"`
	AllMS []float64 `json:"all_ms"`
	// TakenOverBy is the process that serves the database after the
	// kill: process N, or parent (this one).
	TakenOverBy string    `json:"taken_over_by"`
	RSS         *rssStats `json:"rss,omitempty"` // at the end of the prefill, before the kill
	// NewServerMB is the resident memory of the process that took over,
	// once every survivor went on.
	NewServerMB float64 `json:"new_server_mb"`
	resultMeta
}

// checksResult closes the output: the verdict of the runs' self-checks.
type checksResult struct {
	Bench  string `json:"bench"` // checks
	Passed bool   `json:"passed"`
	Runs   int    `json:"runs"`  // runs whose checks passed
	Tasks  int64  `json:"tasks"` // tasks taken that fit their consumer, with their payload intact
	// Failure is the check that failed, with its run; the bench stopped
	// there.
	Failure string `json:"failure,omitempty"`
	resultMeta
}

// benchReport prints the results as they come.
type benchReport struct {
	w    io.Writer
	o    *benchOptions
	meta resultMeta
	enc  *json.Encoder // nil: the table
	// section is the kind of the last row printed: a new kind prints
	// its header first.
	section string
	// checked counts the runs reported: each checked its result before
	// its row, but the fsync probe, which has nothing to check.
	checked int
}

func newBenchReport(w io.Writer, o *benchOptions) *benchReport {
	r := &benchReport{w: w, o: o, meta: resultMeta{System: "fdbqueue", Config: o.config, Processes: o.processes, Model: newModelMeta(o)}}
	if o.json {
		r.enc = json.NewEncoder(w)
	}
	return r
}

// String says when a run stops: "20000 rows or 5s".
func (l limits) String() string {
	var lim []string
	if l.ops > 0 {
		lim = append(lim, fmt.Sprintf("%d rows", l.ops))
	}
	if l.dur > 0 {
		lim = append(lim, fmt.Sprint(l.dur))
	}
	return strings.Join(lim, " or ")
}

// header prints what runs where, and the limits (table only); procs says
// who the processes are (--processes).
func (r *benchReport) header(env, procs string) error {
	if r.enc != nil {
		return nil
	}
	o := r.o
	var b strings.Builder
	fmt.Fprintf(&b, "fdbqueue bench %s (%s), table %s\n%s, %s\n", o.dsn, o.config, o.table, env, time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	b.WriteString(modelHeader(o))
	b.WriteString(procs)
	if o.runs("push") || o.runs("pop") {
		fmt.Fprintf(&b, "push and pop runs stop at %s", o.lim)
		if o.runs("pop") {
			fmt.Fprintf(&b, "; pop runs start on %d tasks", o.prefill)
		}
		b.WriteString("\n")
	}
	if o.runs("latency") {
		fmt.Fprintf(&b, "get_task: latency of one pop, %d times a workload and size\n", o.reps)
	}
	if o.runs("push") || o.runs("pop") || o.runs("fsync") || o.runs("wait") || o.runs("lease") {
		fmt.Fprintf(&b, "p50, p99: nearest-rank percentiles of the n timings beside them; a p99 of fewer than %d is their slowest, marked *\n", minP99)
	}
	if o.runs("lease") {
		fmt.Fprintf(&b, "lease: each lease run after a pop run on the same prefill; lease_kill: %d tasks, %d consumers, %d die, leases of %v\n", o.killTasks, o.killConsumers, deadConsumers(o.killConsumers, o.killShare), o.leaseDur)
	}
	if o.runs("wait") && o.processes > 1 {
		fmt.Fprintf(&b, "wait: %d timed pushes a wake run, by this process; the waiters spread over the processes that do not serve\n", o.waitReps)
	} else if o.runs("wait") {
		fmt.Fprintf(&b, "wait: %d timed pushes a wake run; %d idle consumers for %v; producers stop at %s\n", o.waitReps, o.idleConsumers, o.idleDur, o.lim)
	}
	if o.runs("takeover") {
		fmt.Fprintf(&b, "takeover: the processes that do not serve pop, one connection each, on %d tasks; %v later the serving one is killed (SIGKILL): ms from the kill to each one's first pop begun after it\n", o.prefill, takeoverWarm)
	}
	_, err := io.WriteString(r.w, b.String())
	return err
}

// row prints a table row under its section's header, or a JSON line.
func (r *benchReport) row(section, head string, v any, line string) error {
	if section != "fsync" {
		r.checked++
	}
	if r.enc != nil {
		return r.enc.Encode(v)
	}
	if section != r.section {
		r.section = section
		if _, err := fmt.Fprintf(r.w, "\n%s\n", head); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(r.w, line)
	return err
}

// procsHead and procsCell are the procs column (--processes), after a
// row's first.
func (r *benchReport) procsHead() string {
	if r.o.processes == 1 {
		return ""
	}
	return fmt.Sprintf(" %5s", "procs")
}

func (r *benchReport) procsCell() string {
	if r.o.processes == 1 {
		return ""
	}
	return fmt.Sprintf(" %5d", r.o.processes)
}

// rssHead and rssCells are the resident memory columns of the runs that
// fill (--processes): the serving process's, the largest of the others.
func (r *benchReport) rssHead() string {
	if r.o.processes == 1 {
		return ""
	}
	return fmt.Sprintf(" %7s %7s", "srv MB", "cli MB")
}

func (r *benchReport) rssCells(s *rssStats) string {
	switch {
	case r.o.processes == 1:
		return ""
	case s == nil:
		return fmt.Sprintf(" %7s %7s", "-", "-")
	}
	return fmt.Sprintf(" %7.1f %7.1f", s.ServerMB, slices.Max(append([]float64{0}, s.ClientsMB...)))
}

func (r *benchReport) push(v pushResult) error {
	v.resultMeta = r.meta
	return r.row("push",
		fmt.Sprintf("%-9s%s %7s %9s %9s %11s %10s %7s %9s %9s%s  %s", "push", r.procsHead(), "clients", "rows", "stmts", "rows/s", "stmts/s", "n", "p50 ms", "p99 ms", r.waitsHead(""), "stop"), v,
		fmt.Sprintf("%-9s%s %7d %9d %9d %11.0f %10.0f %7d %9.3f %s%s  %s", v.Mode, r.procsCell(), v.Clients, v.Rows, v.Stmts, v.RowsPerS, v.StmtsPerS, v.Samples, v.P50MS, p99Cell(v.P99MS, v.Samples), r.waitsCells("", v.Waits), v.Stop))
}

func (r *benchReport) pop(v popResult) error {
	v.resultMeta = r.meta
	return r.row("pop",
		fmt.Sprintf("%-9s%s %9s %9s %9s %11s %7s %9s %9s%s %7s%s  %s", "pop", r.procsHead(), "consumers", "prefill", "pops", "pops/s", "n", "p50 ms", "p99 ms", r.waitsHead(""), "empty", r.rssHead(), "stop"), v,
		fmt.Sprintf("%-9s%s %9d %9d %9d %11.0f %7d %9.3f %s%s %7d%s  %s", v.ConsumerResources, r.procsCell(), v.Consumers, v.Prefill, v.Rows, v.RowsPerS, v.Samples, v.P50MS, p99Cell(v.P99MS, v.Samples), r.waitsCells("", v.Waits), v.EmptyPops, r.rssCells(v.RSS), v.Stop))
}

func (r *benchReport) getTask(v getTaskResult) error {
	v.resultMeta = r.meta
	head := fmt.Sprintf("%-9s %9s %5s %5s %10s %9s %9s %9s %8s%s", "get_task", "size", "reps", "found", "median ms", "mean ms", "min ms", "max ms", "fill s", r.waitsHead(""))
	line := fmt.Sprintf("%-9s %9d %5d %5d %10.3f %9.3f %9.3f %9.3f %8.1f%s", v.Workload, v.Size, v.Reps, v.Found, v.MedianMS, v.MeanMS, v.MinMS, v.MaxMS, v.FillS, r.waitsCells("", v.Waits))
	if r.o.runs("fsync") {
		head += "  median/fsync"
		line += fmt.Sprintf("  %12.2fx", v.FsyncRatio)
	}
	return r.row("get_task", head, v, line)
}

func (r *benchReport) fsync(v fsyncResult) error {
	v.resultMeta = r.meta
	return r.row("fsync",
		fmt.Sprintf("%-9s %9s %7s %10s %9s %9s %9s", "fsync", "bytes", "n", "median ms", "p99 ms", "min ms", "max ms"), v,
		fmt.Sprintf("%-9s %9d %7d %10.3f %s %9.3f %9.3f", "write", v.Bytes, v.Samples, v.MedianMS, p99Cell(v.P99MS, v.Samples), v.MinMS, v.MaxMS))
}

func (r *benchReport) waitWake(v waitWakeResult) error {
	v.resultMeta = r.meta
	return r.row("wait_wake",
		fmt.Sprintf("%-9s%s %9s %7s %9s %9s %11s", "wait_wake", r.procsHead(), "waiters", "n", "p50 ms", "p99 ms", "push p50 ms"), v,
		fmt.Sprintf("%-9s%s %9d %7d %9.3f %s %11.3f", "", r.procsCell(), v.Waiters, v.Samples, v.P50MS, p99Cell(v.P99MS, v.Samples), v.PushP50MS))
}

func (r *benchReport) waitIdle(v waitIdleResult) error {
	v.resultMeta = r.meta
	return r.row("wait_idle",
		fmt.Sprintf("%-9s %9s %9s %9s %9s %9s", "wait_idle", "consumers", "seconds", "cpu ms", "cpu %", "pops/s"), v,
		fmt.Sprintf("%-9s %9d %9.1f %9.1f %9.2f %9.1f", v.Mode, v.Consumers, v.Seconds, v.CPUMS, v.CPUPct, v.StmtsPerS))
}

func (r *benchReport) waitPC(v waitPCResult) error {
	v.resultMeta = r.meta
	rate := fmt.Sprint(v.Rate)
	if v.Rate == 0 {
		rate = "max"
	}
	return r.row("wait_pc",
		fmt.Sprintf("%-9s %9s %6s %7s %9s %7s %9s %9s %7s %10s", "wait_pc", "consumers", "rate", "rows", "rows/s", "n", "p50 ms", "p99 ms", "empty", "cpu ms/row"), v,
		fmt.Sprintf("%-9s %9d %6s %7d %9.0f %7d %9.3f %s %7d %10.3f", v.Mode, v.Consumers, rate, v.Rows, v.RowsPerS, v.Samples, v.P50MS, p99Cell(v.P99MS, v.Samples), v.EmptyPops, v.CPUMSPerRow))
}

func (r *benchReport) lease(v leaseResult) error {
	v.resultMeta = r.meta
	return r.row("lease",
		fmt.Sprintf("%-9s %9s %9s %9s %9s %7s %9s %9s %7s %9s %9s %9s %7s %9s %11s %10s%s%s  %s", "lease", "consumers", "prefill", "tasks", "tasks/s", "lease n", "lease p50", "lease p99", "ack n", "ack p50", "ack p99", "pops/s", "pop n", "pop p50", "lease/pop", "pop/task", r.waitsHead("lease "), r.waitsHead("ack "), "stop"), v,
		fmt.Sprintf("%-9s %9d %9d %9d %9.0f %7d %9.3f %s %7d %9.3f %s %9.0f %7d %9.3f %10.2fx %9.2fx%s%s  %s", v.ConsumerResources, v.Consumers, v.Prefill, v.Rows, v.RowsPerS, v.LeaseSamples, v.LeaseP50MS, p99Cell(v.LeaseP99MS, v.LeaseSamples), v.AckSamples, v.AckP50MS, p99Cell(v.AckP99MS, v.AckSamples), v.PopRowsPerS, v.PopSamples, v.PopP50MS, v.LeaseOverPop, v.TaskOverPop, r.waitsCells("lease ", v.LeaseWaits), r.waitsCells("ack ", v.AckWaits), v.Stop))
}

func (r *benchReport) leaseKill(v leaseKillResult) error {
	v.resultMeta = r.meta
	return r.row("lease_kill",
		fmt.Sprintf("%-10s %9s %5s %7s %7s %7s %9s %11s %10s %9s %8s %9s", "lease_kill", "consumers", "dead", "lease s", "tasks", "acked", "abandoned", "redelivered", "max leases", "lost acks", "seconds", "tasks/s"), v,
		fmt.Sprintf("%-10s %9d %5d %7.2f %7d %7d %9d %11d %10d %9d %8.2f %9.0f", "", v.Consumers, v.Dead, v.LeaseS, v.Tasks, v.Acked, v.Abandoned, v.Redelivered, v.MaxLeases, v.LostAcks, v.Seconds, v.RowsPerS))
}

func (r *benchReport) takeover(v takeoverResult) error {
	v.resultMeta = r.meta
	all := make([]string, len(v.AllMS))
	for i, m := range v.AllMS {
		all[i] = fmt.Sprintf("%.1f", m)
	}
	return r.row("takeover",
		fmt.Sprintf("%-9s%s %9s %9s %9s %9s %9s%s %10s  %s", "takeover", r.procsHead(), "prefill", "survivors", "pops", "p50 ms", "max ms", r.rssHead(), "new srv MB", "taken over by; each survivor's ms"), v,
		fmt.Sprintf("%-9s%s %9d %9d %9d %9.1f %9.1f%s %10.1f  %s; %s", "", r.procsCell(), v.Prefill, v.Survivors, v.Rows, v.P50MS, v.MaxMS, r.rssCells(v.RSS), v.NewServerMB, v.TakenOverBy, strings.Join(all, ", ")))
}

// checks prints the verdict of the self-checks: failed is the error of the
// check that stopped the bench, nil when every run passed. Nothing when no
// run had a check (the fsync probe alone).
func (r *benchReport) checks(tasks int64, failed error) error {
	v := checksResult{Bench: "checks", Passed: failed == nil, Runs: r.checked, Tasks: tasks, resultMeta: r.meta}
	if failed != nil {
		v.Failure = failed.Error()
	} else if r.checked == 0 {
		return nil
	}
	if r.enc != nil {
		return r.enc.Encode(v)
	}
	var err error
	if v.Passed {
		_, err = fmt.Fprintf(r.w, "\nself-checks passed: %s, %d tasks taken (what a run checks: fdbqueue bench --help)\n", runs(v.Runs), v.Tasks)
	} else {
		_, err = fmt.Fprintf(r.w, "\nself-checks FAILED after %s passed theirs: %s\n", runs(v.Runs), v.Failure)
	}
	return err
}

// runs is "1 run", "2 runs".
func runs(n int) string {
	if n == 1 {
		return "1 run"
	}
	return fmt.Sprintf("%d runs", n)
}
