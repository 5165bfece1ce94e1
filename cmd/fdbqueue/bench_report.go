package main

// fdbqueue bench's results: JSON lines with the comparison harness's field
// names, or a table that grows a row a run.

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// resultMeta is on every JSON line: which system and configuration ran.
type resultMeta struct {
	System string `json:"system"` // fdbqueue
	Config string `json:"config"` // memory, file-full, file-none, fdb
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
	P50MS     float64 `json:"p50_ms"` // per statement
	P99MS     float64 `json:"p99_ms"`
	Stop      string  `json:"stop"` // count or time
	LimitOps  int     `json:"limit_ops"`
	LimitS    float64 `json:"limit_s"`
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
	P50MS             float64 `json:"p50_ms"`
	P99MS             float64 `json:"p99_ms"`
	Stop              string  `json:"stop"`
	LimitOps          int     `json:"limit_ops"`
	LimitS            float64 `json:"limit_s"`
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
	resultMeta
}

// fsyncResult is the fsync probe.
type fsyncResult struct {
	Bench    string  `json:"bench"` // fsync
	Reps     int     `json:"reps"`
	Bytes    int     `json:"bytes"` // appended before each fsync
	MedianMS float64 `json:"median_ms"`
	P99MS    float64 `json:"p99_ms"`
	MinMS    float64 `json:"min_ms"`
	MaxMS    float64 `json:"max_ms"`
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
}

func newBenchReport(w io.Writer, o *benchOptions) *benchReport {
	r := &benchReport{w: w, o: o, meta: resultMeta{System: "fdbqueue", Config: o.config}}
	if o.json {
		r.enc = json.NewEncoder(w)
	}
	return r
}

// header prints what runs where, and the limits (table only).
func (r *benchReport) header(env string) error {
	if r.enc != nil {
		return nil
	}
	o := r.o
	var b strings.Builder
	fmt.Fprintf(&b, "fdbqueue bench %s (%s), table %s\n%s, %s\n", o.dsn, o.config, o.table, env, time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	if o.runs("push") || o.runs("pop") {
		var lim []string
		if o.lim.ops > 0 {
			lim = append(lim, fmt.Sprintf("%d rows", o.lim.ops))
		}
		if o.lim.dur > 0 {
			lim = append(lim, fmt.Sprint(o.lim.dur))
		}
		fmt.Fprintf(&b, "push and pop runs stop at %s", strings.Join(lim, " or "))
		if o.runs("pop") {
			fmt.Fprintf(&b, "; pop runs start on %d tasks", o.prefill)
		}
		b.WriteString("\n")
	}
	if o.runs("latency") {
		fmt.Fprintf(&b, "get_task: latency of one pop, %d times a workload and size\n", o.reps)
	}
	_, err := io.WriteString(r.w, b.String())
	return err
}

// row prints a table row under its section's header, or a JSON line.
func (r *benchReport) row(section, head string, v any, line string) error {
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

func (r *benchReport) push(v pushResult) error {
	v.resultMeta = r.meta
	return r.row("push",
		fmt.Sprintf("%-9s %7s %9s %9s %11s %10s %9s %9s  %s", "push", "clients", "rows", "stmts", "rows/s", "stmts/s", "p50 ms", "p99 ms", "stop"), v,
		fmt.Sprintf("%-9s %7d %9d %9d %11.0f %10.0f %9.3f %9.3f  %s", v.Mode, v.Clients, v.Rows, v.Stmts, v.RowsPerS, v.StmtsPerS, v.P50MS, v.P99MS, v.Stop))
}

func (r *benchReport) pop(v popResult) error {
	v.resultMeta = r.meta
	return r.row("pop",
		fmt.Sprintf("%-9s %9s %9s %9s %11s %9s %9s %7s  %s", "pop", "consumers", "prefill", "pops", "pops/s", "p50 ms", "p99 ms", "empty", "stop"), v,
		fmt.Sprintf("%-9s %9d %9d %9d %11.0f %9.3f %9.3f %7d  %s", v.ConsumerResources, v.Consumers, v.Prefill, v.Rows, v.RowsPerS, v.P50MS, v.P99MS, v.EmptyPops, v.Stop))
}

func (r *benchReport) getTask(v getTaskResult) error {
	v.resultMeta = r.meta
	head := fmt.Sprintf("%-9s %9s %5s %5s %10s %9s %9s %9s %8s", "get_task", "size", "reps", "found", "median ms", "mean ms", "min ms", "max ms", "fill s")
	line := fmt.Sprintf("%-9s %9d %5d %5d %10.3f %9.3f %9.3f %9.3f %8.1f", v.Workload, v.Size, v.Reps, v.Found, v.MedianMS, v.MeanMS, v.MinMS, v.MaxMS, v.FillS)
	if r.o.runs("fsync") {
		head += "  median/fsync"
		line += fmt.Sprintf("  %12.2fx", v.FsyncRatio)
	}
	return r.row("get_task", head, v, line)
}

func (r *benchReport) fsync(v fsyncResult) error {
	v.resultMeta = r.meta
	return r.row("fsync",
		fmt.Sprintf("%-9s %9s %5s %10s %9s %9s %9s", "fsync", "bytes", "reps", "median ms", "p99 ms", "min ms", "max ms"), v,
		fmt.Sprintf("%-9s %9d %5d %10.3f %9.3f %9.3f %9.3f", "append", v.Bytes, v.Reps, v.MedianMS, v.P99MS, v.MinMS, v.MaxMS))
}
