package bench

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/cmd/fdbqueue/internal/shell"
)

// TestMain lets fdbqueue bench --processes run this binary as its
// processes: the parent starts "this-program bench ARGS" with procChildEnv
// set (procs.go), as cmd/fdbqueue would run them.
func TestMain(m *testing.M) {
	if _, ok := os.LookupEnv(procChildEnv); ok {
		os.Exit(Main(context.Background(), os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// shellRun runs the fdbqueue command in-process, as cmd/fdbqueue does:
// fdbqueue bench ARGS, or the shell, which the tests use to set up and
// look at a database. It returns stdout, stderr and the exit status.
func shellRun(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	var code int
	if len(args) > 0 && args[0] == "bench" {
		code = Main(context.Background(), args[1:], strings.NewReader(stdin), &out, &errb)
	} else {
		code = shell.Main(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	}
	return out.String(), errb.String(), code
}

// tinyBench are limits that make a whole fdbqueue bench take milliseconds.
var tinyBench = []string{"--limit-ops", "20", "--limit-s", "60", "--prefill", "40", "--sizes", "1,30",
	"--reps", "3", "--fsync-reps", "3", "--clients", "1,2", "--consumers", "1,3", "--batch", "1,5"}

// tinyWait are the wait workloads at sizes that take a second or so.
var tinyWait = []string{"--bench", "wait", "--waiters", "1,3", "--wait-reps", "3", "--idle-consumers", "3",
	"--idle-s", "0.05", "--wait-rate", "200,0", "--wait-consumers", "2"}

func benchArgs(extra ...string) []string {
	return append(append([]string{"bench"}, tinyBench...), extra...)
}

// benchTables lists the tables of a file: database.
func benchTables(t *testing.T, dsn string) []string {
	t.Helper()
	out, errs, code := shellRun(t, "", "--format", "csv", "-c", `\dt`, dsn)
	require.Equal(t, 0, code, errs)
	lines := strings.Split(strings.TrimSpace(out), "\n")[1:]
	for i, l := range lines {
		lines[i], _, _ = strings.Cut(l, ",")
	}
	return lines
}

func TestBenchTable(t *testing.T) {
	t.Parallel()
	out, errs, code := shellRun(t, "", benchArgs("memory:")...)
	require.Equal(t, 0, code, errs)
	require.Empty(t, errs, "no progress line when standard error is not a terminal")
	require.Contains(t, out, "fdbqueue bench memory: (memory), table fdbqueue_bench\n")
	require.Contains(t, out, "push and pop runs stop at 20 rows or 1m0s; pop runs start on 40 tasks\n")
	require.NotContains(t, out, "fsync", "no fsync probe, nor column, without a file: DSN")
	require.Contains(t, out, "\np50, p99: nearest-rank percentiles of the n timings beside them; a p99 of fewer than 100 is their slowest, marked *\n")

	// row is a regular expression for a table row of these fields.
	row := func(fields ...string) string { return `^` + strings.Join(fields, ` +`) + `\b.*\n` }
	// slowest: a p99 of fewer than 100 timings (20 rows at most here), marked
	// as their slowest.
	n, ms, slowest := `\d+`, `\d+\.\d{3}`, `\d+\.\d{3}\*`
	for _, want := range []string{
		row("push", "clients", "rows", "stmts", "rows/s", "stmts/s", "n", "p50 ms", "p99 ms", "stop") +
			row("single", "1", "20", "20", n, n, "20", ms, slowest, "count") +
			row("single", "2", "20", "20", n, n, "20", ms, slowest, "count") +
			row("batch5", "1", "20", "4", n, n, "4", ms, slowest, "count") +
			row("batch5", "2", "20", "4", n, n, "4", ms, slowest, "count"),
		// n: the pops timed, the empty ones included.
		row("pop", "consumers", "prefill", "pops", "pops/s", "n", "p50 ms", "p99 ms", "empty", "stop") +
			row("random", "1", "40", "20", n, `2\d`, ms, slowest, n, "count") +
			row("random", "3", "40", "20", n, `2\d`, ms, slowest, n, "count") +
			row("any", "1", "40", "20", n, "20", ms, slowest, "0", "count") +
			row("any", "3", "40", "20", n, "20", ms, slowest, "0", "count"),
		row("get_task", "size", "reps", "found", "median ms", "mean ms", "min ms", "max ms", "fill s") +
			row("random", "1", "3", `[01]`, ms, ms, ms, ms, `\d+\.\d`) + // one task: a random consumer may not fit it
			row("worst", "1", "3", "3", ms, ms, ms, ms, `\d+\.\d`) +
			row("random", "30", "3", `[0-3]`, ms, ms, ms, ms, `\d+\.\d`) +
			row("worst", "30", "3", "3", ms, ms, ms, ms, `\d+\.\d`),
	} {
		require.Regexp(t, regexp.MustCompile(`(?m)`+want), out)
	}
	// The last line: the checks of 12 runs passed, with the 80 tasks of
	// the pop runs and the worst consumer's 6, at least.
	require.Regexp(t, `\n\nself-checks passed: 12 runs, (8[6-9]|9[0-2]) tasks taken \(what a run checks: fdbqueue bench --help\)\n$`, out)

	// From 100 timings on, the p99 is not marked.
	out, errs, code = shellRun(t, "", "bench", "--bench", "push", "--batch", "1", "--clients", "1", "--limit-ops", "100", "memory:")
	require.Equal(t, 0, code, errs)
	require.Regexp(t, regexp.MustCompile(`(?m)`+row("single", "1", "100", "100", n, n, "100", ms, ms+" ", "count")), out)
	require.Contains(t, out, "\nself-checks passed: 1 run, 0 tasks taken")
}

// The JSON lines carry the comparison harness's fields, no fewer.
var benchFields = map[string][]string{
	"push":     {"bench", "mode", "clients", "batch", "rows", "stmts", "seconds", "rows_per_s", "stmts_per_s", "samples", "p50_ms", "p99_ms", "stop", "limit_ops", "limit_s", "system", "config"},
	"pop":      {"bench", "consumers", "consumer_resources", "prefill", "rows", "empty_pops", "seconds", "rows_per_s", "samples", "p50_ms", "p99_ms", "stop", "limit_ops", "limit_s", "system", "config"},
	"get_task": {"bench", "structure", "workload", "size", "reps", "found", "mean_ms", "std_ms", "min_ms", "median_ms", "max_ms", "all_ms", "fill_s", "plan", "system", "config"},
	"fsync":    {"bench", "reps", "samples", "bytes", "median_ms", "p99_ms", "min_ms", "max_ms", "system", "config"},
	"checks":   {"bench", "passed", "runs", "tasks", "system", "config"},
}

func TestBenchJSONOnFile(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "db")
	dsn := "file:" + dir + "?sync=full"
	// Flags after the DSN count too.
	out, errs, code := shellRun(t, "", append(benchArgs(dsn), "--json", "--sizes", "30")...)
	require.Equal(t, 0, code, errs)
	var kinds []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var v map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &v), line)
		kind := v["bench"].(string)
		kinds = append(kinds, kind)
		for _, f := range benchFields[kind] {
			require.Contains(t, v, f, "%s: %s", kind, line)
		}
		require.Equal(t, "fdbqueue", v["system"])
		require.Equal(t, "file-full", v["config"])
		switch kind {
		case "push", "pop":
			require.EqualValues(t, 20, v["rows"], line)
			require.Equal(t, "count", v["stop"], line)
			require.Positive(t, v["rows_per_s"], line)
			require.GreaterOrEqual(t, v["p99_ms"], v["p50_ms"], line)
			if kind == "push" {
				require.Equal(t, v["stmts"], v["samples"], "every statement timed: %s", line)
			} else {
				require.Equal(t, v["rows"].(float64)+v["empty_pops"].(float64), v["samples"], "every pop timed: %s", line)
			}
		case "get_task":
			require.Equal(t, "fdbqueue-file-full", v["structure"])
			require.Len(t, v["all_ms"], 3)
			require.Positive(t, v["fsync_ms"], "on file:, the ratio to one fsync: %s", line)
			require.InDelta(t, v["median_ms"].(float64)/v["fsync_ms"].(float64), v["fsync_ratio"], 1e-9)
		case "fsync":
			require.EqualValues(t, 3, v["reps"])
			require.EqualValues(t, 3, v["samples"])
			require.Positive(t, v["median_ms"])
		case "checks":
			require.Equal(t, true, v["passed"], line)
			require.EqualValues(t, 10, v["runs"], "every run but fsync: %s", line)
			require.NotContains(t, v, "failure")
		}
	}
	require.Equal(t, []string{"fsync", "push", "push", "push", "push", "pop", "pop", "pop", "pop", "get_task", "get_task", "checks"}, kinds)

	// It leaves the database as it found it: no table, no probe file.
	require.Empty(t, benchTables(t, dsn))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		require.Regexp(t, `^(LOCK|wal-\d+\.log|ckpt-.*)$`, e.Name())
	}
}

// TestBenchOwnTableOnly: the bench drops its table; one it did not create
// it leaves alone, unless --force.
func TestBenchOwnTableOnly(t *testing.T) {
	t.Parallel()
	dsn := "file:" + t.TempDir() + "?sync=none"
	_, errs, code := shellRun(t, "", "-c", "CREATE TABLE fdbqueue_bench (v TEXT); INSERT INTO fdbqueue_bench VALUES ('mine')", dsn)
	require.Equal(t, 0, code, errs)

	out, errs, code := shellRun(t, "", "bench", "--bench", "latency", "--sizes", "5", dsn)
	require.Equal(t, 1, code)
	require.Empty(t, out)
	require.Contains(t, errs, "fdbqueue: bench: its table exists: fdbqueue_bench in "+dsn+"; ")
	require.Contains(t, errs, "--table NAME")
	require.Contains(t, errs, "--force")
	out, _, code = shellRun(t, "", "--format", "csv", "-c", "SELECT v FROM fdbqueue_bench", dsn)
	require.Equal(t, 0, code)
	require.Equal(t, "v\nmine\n", out, "untouched")

	_, errs, code = shellRun(t, "", "bench", "--bench", "latency", "--sizes", "5", "--table", "other", dsn)
	require.Equal(t, 0, code, errs)
	require.Equal(t, []string{"fdbqueue_bench"}, benchTables(t, dsn), "other is gone, the user's table stays")

	_, errs, code = shellRun(t, "", "bench", "--bench", "latency", "--sizes", "5", "--force", dsn)
	require.Equal(t, 0, code, errs)
	require.Empty(t, benchTables(t, dsn), "--force: dropped")
}

// runBenchFaults runs fdbqueue bench with faults and returns its error.
func runBenchFaults(t *testing.T, faults benchFaults, args ...string) error {
	t.Helper()
	_, err := runBenchOut(t, faults, args...)
	return err
}

// runBenchOut runs fdbqueue bench with faults and returns its standard
// output and error.
func runBenchOut(t *testing.T, faults benchFaults, args ...string) (string, error) {
	t.Helper()
	o, code := parseBenchFlags(append(append([]string{}, tinyBench...), args...), io.Discard)
	require.NotNil(t, o, "exit status %d", code)
	var out bytes.Buffer
	err := benchMain(context.Background(), o, &out, io.Discard, faults)
	return out.String(), err
}

// addRow pushes a task behind the bench's back.
func addRow(prio, cpu, mem int) func(context.Context, *sql.DB, string) error {
	return func(ctx context.Context, db *sql.DB, table string) error {
		_, err := db.ExecContext(ctx, "INSERT INTO "+table+" (priority, cpu, mem, payload) VALUES (?, ?, ?, ?)", prio, cpu, mem, benchPayload())
		return err
	}
}

// onRun runs fn after the n-th run only (1-based).
func onRun(n int, fn func(context.Context, *sql.DB, string) error) func(context.Context, *sql.DB, string) error {
	var runs atomic.Int64
	return func(ctx context.Context, db *sql.DB, table string) error {
		if runs.Add(1) != int64(n) {
			return nil
		}
		return fn(ctx, db, table)
	}
}

// onPop alters the tasks popped from the n-th check on.
func onPop(n int, fn func(*poppedTask)) func(*poppedTask) {
	var pops atomic.Int64
	return func(p *poppedTask) {
		if pops.Add(1) >= int64(n) {
			fn(p)
		}
	}
}

// onFill runs fn after the fills of one latency workload.
func onFill(workload string, fn func(context.Context, *sql.DB, string) error) func(context.Context, *sql.DB, string, string) error {
	return func(ctx context.Context, db *sql.DB, table, w string) error {
		if w != workload {
			return nil
		}
		return fn(ctx, db, table)
	}
}

// TestBenchSelfChecksFail breaks each invariant a run checks, and sees the
// run fail: a check that cannot fail checks nothing.
func TestBenchSelfChecksFail(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		faults benchFaults
		args   []string
		want   string
	}{
		{"push count", benchFaults{afterRun: addRow(0, 1, 1)},
			[]string{"--bench", "push", "--batch", "5", "--clients", "2"},
			"bench push batch5 clients=2: self-check failed: 20 rows pushed, 21 in the table"},
		{"pop count", benchFaults{afterRun: addRow(0, 1, 1)},
			[]string{"--bench", "pop", "--consumers", "2"},
			"bench pop random consumers=2: self-check failed: 40 rows filled, 20 popped, so 20 should be left; 21 are"},
		{"pop fit", benchFaults{popped: func(p *poppedTask) { p.cpu = cpuMax + 1 }},
			[]string{"--bench", "pop", "--consumer-resources", "any"},
			"does not fit"},
		{"pop fit mem", benchFaults{popped: func(p *poppedTask) { p.mem = memMax + 1 }},
			[]string{"--bench", "pop", "--consumer-resources", "any"},
			"does not fit"},
		{"payload length", benchFaults{popped: func(p *poppedTask) { p.payload = p.payload[1:] }},
			[]string{"--bench", "pop"},
			"has a payload of 63 bytes, not 64"},
		{"payload bytes", benchFaults{popped: func(p *poppedTask) { p.payload = append([]byte{}, p.payload...); p.payload[0]++ }},
			[]string{"--bench", "pop"},
			"payload is not the one pushed"},
		{"popped twice", benchFaults{popped: func(p *poppedTask) { p.id = 7 }},
			[]string{"--bench", "pop", "--consumers", "3"},
			"self-check failed: task 7 was popped twice"},
		{"latency count", benchFaults{afterFill: onFill("random", addRow(9, 8, 32))},
			[]string{"--bench", "latency", "--sizes", "30"},
			"bench get_task random size=30: self-check failed: 30 rows filled"},
		{"latency fit", benchFaults{popped: func(p *poppedTask) { p.cpu = cpuMax + 1 }},
			[]string{"--bench", "latency", "--sizes", "30"},
			"does not fit"},
		{"worst pops another task", benchFaults{afterFill: onFill("worst", addRow(0, 1, 1))},
			[]string{"--bench", "latency", "--sizes", "30"},
			"bench get_task worst size=30: self-check failed: the worst consumer popped task "},
		{"worst finds nothing", benchFaults{afterFill: onFill("worst", func(ctx context.Context, db *sql.DB, table string) error {
			_, err := db.ExecContext(ctx, "SELECT id FROM "+table+" WHERE cpu <= 4 AND mem <= 16 ORDER BY priority LIMIT 1 FOR POP")
			return err
		})},
			[]string{"--bench", "latency", "--sizes", "30"},
			"self-check failed: the worst consumer found no task"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := runBenchFaults(t, tc.faults, append(tc.args, "memory:")...)
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, "self-check failed")
		})
	}
	// The wait workloads: each run's check fails.
	for _, tc := range []struct {
		name   string
		faults benchFaults
		args   []string
		want   string
	}{
		{"wake count", benchFaults{afterRun: addRow(0, 1, 1)}, nil,
			"bench wait_wake waiters=1: self-check failed: 3 rows filled, 3 popped, so 0 should be left; 1 are"},
		{"wake payload", benchFaults{popped: func(p *poppedTask) { p.payload = p.payload[1:] }}, nil,
			"bench wait_wake waiters=1: self-check failed: task"},
		{"idle count", benchFaults{afterRun: onRun(2, addRow(0, 1, 1))}, []string{"--waiters", "1"},
			"bench wait_idle wait: self-check failed: 0 rows filled, 0 popped, so 0 should be left; 1 are"},
		{"producer/consumer count", benchFaults{afterRun: onRun(4, addRow(0, 1, 1))}, []string{"--waiters", "1"},
			"bench wait_pc wait rate=200: self-check failed: 20 rows filled, 20 popped, so 0 should be left; 1 are"},
		{"producer/consumer unknown task", benchFaults{popped: onPop(2, func(p *poppedTask) { p.id = 1 << 61 })}, []string{"--waiters", "1", "--wait-reps", "1"},
			"bench wait_pc wait rate=200: self-check failed: a consumer took task 2305843009213693952, which the producer did not push"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := runBenchFaults(t, tc.faults, append(append(append([]string{}, tinyWait...), tc.args...), "memory:")...)
			require.ErrorContains(t, err, tc.want)
		})
	}
	// Without a fault, the same runs pass.
	require.NoError(t, runBenchFaults(t, benchFaults{}, "--bench", "push,pop,latency", "memory:"))
	require.NoError(t, runBenchFaults(t, benchFaults{}, append(tinyWait, "memory:")...))
}

// TestBenchChecksVerdict: the output ends with the checks' verdict; a
// failed check is named there, after the runs that passed theirs, as a
// table line or a JSON object. An error that is not a check's gets none.
func TestBenchChecksVerdict(t *testing.T) {
	t.Parallel()
	fault := benchFaults{afterRun: onRun(3, addRow(0, 1, 1))}
	out, err := runBenchOut(t, fault, "--bench", "push", "memory:")
	require.ErrorIs(t, err, errSelfCheck)
	require.True(t, strings.HasSuffix(out, "\nself-checks FAILED after 2 runs passed theirs: bench push batch5 clients=1: self-check failed: 20 rows pushed, 21 in the table\n"), out)

	fault = benchFaults{afterRun: onRun(3, addRow(0, 1, 1))}
	out, err = runBenchOut(t, fault, "--bench", "push", "--json", "memory:")
	require.ErrorIs(t, err, errSelfCheck)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3)
	var v checksResult
	require.NoError(t, json.Unmarshal([]byte(lines[2]), &v))
	require.Equal(t, checksResult{Bench: "checks", Passed: false, Runs: 2,
		Failure:    "bench push batch5 clients=1: self-check failed: 20 rows pushed, 21 in the table",
		resultMeta: resultMeta{System: "fdbqueue", Config: "memory", Processes: 1}}, v)

	out, err = runBenchOut(t, benchFaults{}, "--bench", "pop", "--consumers", "2", "--consumer-resources", "any", "--json", "memory:")
	require.NoError(t, err)
	lines = strings.Split(strings.TrimSpace(out), "\n")
	v = checksResult{}
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &v))
	require.Equal(t, checksResult{Bench: "checks", Passed: true, Runs: 1, Tasks: 20, resultMeta: resultMeta{System: "fdbqueue", Config: "memory", Processes: 1}}, v)

	fault = benchFaults{afterRun: onRun(2, func(context.Context, *sql.DB, string) error { return errors.New("disk on fire") })}
	out, err = runBenchOut(t, fault, "--bench", "push", "memory:")
	require.ErrorContains(t, err, "disk on fire")
	require.NotContains(t, out, "self-checks")
}

// TestBenchDropsTableOnFailure: a failed run leaves no table behind either.
func TestBenchDropsTableOnFailure(t *testing.T) {
	t.Parallel()
	dsn := "file:" + t.TempDir() + "?sync=none"
	err := runBenchFaults(t, benchFaults{afterRun: addRow(0, 1, 1)}, "--bench", "push", dsn)
	require.ErrorContains(t, err, "self-check failed")
	require.Empty(t, benchTables(t, dsn))

	// Interrupted (Ctrl-C cancels the context) in the middle of a run.
	o, code := parseBenchFlags(append(tinyBench, "--bench", "latency", dsn), io.Discard)
	require.NotNil(t, o, "exit %d", code)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err = benchMain(ctx, o, io.Discard, io.Discard, benchFaults{afterFill: func(context.Context, *sql.DB, string, string) error {
		cancel()
		return nil
	}})
	require.ErrorIs(t, err, context.Canceled)
	require.Empty(t, benchTables(t, dsn))
}

func TestBenchBadFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "fdbqueue: bench: give the DSN to measure"},
		{[]string{"memory:", "file:/x"}, `one DSN; got ["memory:" "file:/x"]`},
		{[]string{"--bench", "push,nope", "memory:"}, `--bench "push,nope": "nope" is not one of fsync, push, pop, latency`},
		{[]string{"--bench", "fsync", "memory:"}, "--bench fsync measures the disk under a file: DSN; memory: has none"},
		{[]string{"--clients", "0", "memory:"}, `--clients "0": a comma-separated list of integers from 1 to 1000`},
		{[]string{"--clients", "1,x", "memory:"}, `--clients "1,x"`},
		{[]string{"--consumers", "1001", "memory:"}, `--consumers "1001"`},
		{[]string{"--batch", "5000", "memory:"}, `--batch "5000": a comma-separated list of integers from 1 to 1000`},
		{[]string{"--sizes", "", "memory:"}, `--sizes ""`},
		{[]string{"--consumer-resources", "all", "memory:"}, `"all" is not one of random, any`},
		{[]string{"--limit-ops", "-1", "memory:"}, "--limit-ops -1: a number of rows, or 0 for no limit"},
		{[]string{"--limit-s", "-1", "memory:"}, "--limit-s -1: seconds"},
		{[]string{"--limit-s", "NaN", "memory:"}, "--limit-s NaN"},
		{[]string{"--limit-ops", "0", "--limit-s", "0", "memory:"}, "would let a push or pop run go on forever"},
		{[]string{"--limit-s", "0", "--prefill", "10", "--limit-ops", "11", "memory:"}, "a pop run would go on popping an empty queue"},
		{[]string{"--prefill", "0", "memory:"}, "--prefill 0"},
		{[]string{"--reps", "0", "memory:"}, "--reps 0"},
		{[]string{"--fsync-reps", "0", "memory:"}, "--fsync-reps 0"},
		{[]string{"--table", "my table", "memory:"}, `--table "my table": a name of letters, digits and _`},
		{[]string{"--table", "1st", "memory:"}, `--table "1st"`},
		{[]string{"--waiters", "0", "memory:"}, `--waiters "0": a comma-separated list of integers from 1 to 1000`},
		{[]string{"--wait-rate", "-1", "memory:"}, `--wait-rate "-1": a comma-separated list of integers from 0 to 1000000`},
		{[]string{"--wait-reps", "0", "memory:"}, "--wait-reps 0: at least 1 timed push"},
		{[]string{"--idle-consumers", "0", "memory:"}, "--idle-consumers 0: from 1 to 1000"},
		{[]string{"--wait-consumers", "1001", "memory:"}, "--wait-consumers 1001: from 1 to 1000"},
		{[]string{"--idle-s", "0", "memory:"}, "--idle-s 0: seconds, more than 0"},
		{[]string{"--idle-s", "NaN", "memory:"}, "--idle-s NaN"},
		{[]string{"--bench", "wait", "--limit-ops", "0", "--limit-s", "0", "memory:"}, "would let a wait_pc producer push forever"},
		{[]string{"--kill-tasks", "0", "memory:"}, "--kill-tasks 0: from 1 to 10000000 tasks"},
		{[]string{"--kill-consumers", "1", "memory:"}, "--kill-consumers 1: from 2 to 1000 (one dies, one at least lives)"},
		{[]string{"--kill-share", "1.5", "memory:"}, "--kill-share 1.5: a share of the consumers, from 0 to 1"},
		{[]string{"--kill-share", "NaN", "memory:"}, "--kill-share NaN"},
		{[]string{"--lease-s", "0", "memory:"}, "--lease-s 0: seconds, from 0.01 to 60"},
		{[]string{"--bench", "lease", "--limit-ops", "0", "--limit-s", "0", "memory:"}, "would let a push or pop run go on forever"},
		{[]string{"bogus"}, "fdbqueue: bench: bad DSN: \"bogus\" has no engine"},
		{[]string{"--model", "file:/tmp/x"}, "--model runs the in-memory engine on the modeled cluster: give memory: (or memory:NAME), without parameters, not file:/tmp/x"},
		{[]string{"--model", "memory:?fault_conflict=0.1"}, "--model runs the in-memory engine"},
		{[]string{"--model-grv", "1ms", "memory:"}, "--model-grv sets a latency of the modeled cluster: give --model too"},
		{[]string{"--model", "--model-read", "0s", "memory:"}, "--model-read 0s: a duration above 0 and up to 1s"},
		{[]string{"--model", "--model-commit", "2s", "memory:"}, "--model-commit 2s"},
		{[]string{"--model", "--model-commit", "x", "memory:"}, `invalid value "x" for flag -model-commit`},
		{[]string{"file:/tmp/x?mode=ro"}, "opens the database read-only; the bench writes"},
		{[]string{"--nope", "memory:"}, "fdbqueue: bench: flag provided but not defined: -nope (fdbqueue bench --help lists the flags)\n"},
		{[]string{"memory:", "--limit-ops", "x"}, `fdbqueue: bench: invalid value "x" for flag -limit-ops`},
		{[]string{"--processes", "2", "memory:"}, "--processes 2 shares a file: database between processes; memory: is one process's own (give file:DIR)"},
		{[]string{"--processes", "2", "memory:shared"}, "memory:shared is one process's own"},
		{[]string{"--processes", "0", "file:/tmp/x"}, "--processes 0: from 1 to 64"},
		{[]string{"--processes", "65", "file:/tmp/x"}, "--processes 65: from 1 to 64"},
		{[]string{"--processes", "4", "--bench", "push", "--clients", "2,8", "file:/tmp/x"}, "--clients 2,8: each of --processes 4 runs one at least; give 4 or more"},
		{[]string{"--processes", "4", "file:/tmp/x"}, "--clients 1,8: each of --processes 4 runs one at least"},
		{[]string{"--processes", "2", "--bench", "pop", "--consumers", "1", "file:/tmp/x"}, "--consumers 1: each of --processes 2"},
		{[]string{"--processes", "2", "--bench", "push,latency", "--clients", "2", "file:/tmp/x"}, "--bench latency runs in one process; with --processes, give push, pop, wait, takeover"},
		{[]string{"--processes", "2", "--bench", "lease", "file:/tmp/x"}, "--bench lease runs in one process"},
		{[]string{"--processes", "4", "--bench", "push", "--clients", "8", "--limit-ops", "3", "file:/tmp/x"}, "--limit-ops 3: fewer rows than --processes 4"},
		{[]string{"--bench", "takeover", "file:/tmp/x"}, "--bench takeover kills the process that serves a database others share: give --processes 2 or more"},
	} {
		out, errs, code := shellRun(t, "", append([]string{"bench"}, tc.args...)...)
		require.Equal(t, 2, code, "%q: %s", tc.args, errs)
		require.Empty(t, out)
		require.Contains(t, errs, tc.want, "%q", tc.args)
		require.Equal(t, 1, strings.Count(errs, "fdbqueue:"), "one prefix: %s", errs)
	}
	// A limit of 0 is no limit, when the other one bounds the runs.
	o, code := parseBenchFlags([]string{"--limit-ops", "0", "memory:"}, io.Discard)
	require.NotNil(t, o, "exit %d", code)
	require.Equal(t, limits{ops: 0, dur: 5 * time.Second}, o.lim)
	require.Equal(t, []string{"push", "pop", "latency"}, o.benches, "fsync skipped by default off file:")
	o, code = parseBenchFlags([]string{"--processes", "2", "--clients", "8", "--consumers", "8", "file:/tmp/x"}, io.Discard)
	require.NotNil(t, o, "exit %d", code)
	require.Equal(t, []string{"push", "pop"}, o.benches, "--processes: push and pop by default")

	out, errs, code := shellRun(t, "", "bench", "--help")
	require.Equal(t, 0, code)
	require.Empty(t, out)
	for _, want := range []string{"usage: fdbqueue bench [flags] DSN", "--force", "-limit-ops N", "examples:", "drops and recreates"} {
		require.Contains(t, errs, want)
	}
	_, errs, _ = shellRun(t, "", "--help")
	require.Contains(t, errs, "fdbqueue bench [flags] DSN", "the shell's help points to the bench")
}

// TestBenchSizesFollowPrefill: without --sizes, a --prefill below the
// default sizes cuts them to it; --sizes given stands.
func TestBenchSizesFollowPrefill(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want []int
	}{
		{nil, []int{10000, 100000}},
		{[]string{"--prefill", "1000"}, []int{1000}},
		{[]string{"--prefill", "50000"}, []int{10000, 50000}},
		{[]string{"--prefill", "500000"}, []int{10000, 100000}},
		{[]string{"--prefill", "1000", "--sizes", "10000,100000"}, []int{10000, 100000}},
		{[]string{"--sizes", "5", "--prefill", "3"}, []int{5}},
	} {
		o, code := parseBenchFlags(append(tc.args, "memory:"), io.Discard)
		require.NotNil(t, o, "%q: exit %d", tc.args, code)
		require.Equal(t, tc.want, o.sizes, "%q", tc.args)
	}
	out, errs, code := shellRun(t, "", "bench", "--bench", "latency", "--prefill", "20", "--reps", "1", "memory:")
	require.Equal(t, 0, code, errs)
	require.Regexp(t, `(?m)^random +20 +1 `, out)
	require.Regexp(t, `(?m)^worst +20 +1 `, out)
}

// TestBenchRowBudget: a client that finds too few rows left takes none, so
// that rows an empty pop gives back are still there for the others, and a
// run stopped by the count handled exactly --limit-ops rows.
func TestBenchRowBudget(t *testing.T) {
	t.Parallel()
	b := newRowBudget(1)
	require.True(t, b.take(1), "client A takes the last row")
	require.False(t, b.take(1), "client B finds none and stops")
	b.giveBack(1) // A's pop was empty
	require.True(t, b.take(1), "A takes the row again")
	require.False(t, b.take(1))

	b = newRowBudget(150)
	require.True(t, b.take(100))
	require.False(t, b.take(100), "a batch that does not fit is not pushed")
	require.True(t, b.take(50))

	b = newRowBudget(0)
	for range 1000 {
		require.True(t, b.take(1000), "0: no limit")
	}
}

func TestBenchPercentiles(t *testing.T) {
	t.Parallel()
	var lat []time.Duration
	for i := 100; i >= 1; i-- {
		lat = append(lat, time.Duration(i)*time.Millisecond)
	}
	require.Equal(t, 50.0, pct(lat, 50))
	require.Equal(t, 99.0, pct(lat, 99))
	require.Equal(t, 100.0, pct(lat, 100))
	require.Equal(t, 1.0, pct(lat, 0))
	require.Zero(t, pct(nil, 50))
	require.Equal(t, time.Duration(100)*time.Millisecond, lat[0], "pct sorts a copy")
	require.Zero(t, perSecond(5, 0), "not +Inf, which JSON cannot hold")

	// The p99 of fewer than 100 timings is their slowest: the table
	// marks it; from 100 on it is not.
	require.Equal(t, 100.0, pct(lat[:99], 99), "99 timings: the p99 is the max")
	require.Equal(t, 99.0, pct(lat, 99))
	require.Equal(t, "   1.500*", p99Cell(1.5, 99))
	require.Equal(t, "   1.500 ", p99Cell(1.5, 100))
}

func TestBenchProgress(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	p := &progress{w: &b}
	l := p.start("filling t: random tasks", 1000)
	l.update(250)
	require.Contains(t, b.String(), "\rfdbqueue bench: filling t: random tasks 250/1000 (25%, ")
	l.finish()
	require.True(t, strings.HasSuffix(b.String(), "\r\x1b[K"), "the line is erased")

	b.Reset()
	quiet := &progress{} // standard error is not a terminal
	l = quiet.start("x", 10)
	l.update(5)
	l.finish()
	require.Empty(t, b.String())
	require.Nil(t, newProgress(&b).w, "a buffer is not a terminal")

	slow := &progress{w: &b, every: time.Hour}
	l = slow.start("x", 10)
	l.update(5)
	l.finish()
	require.Empty(t, b.String(), "a fill shorter than the interval shows nothing")
}

func TestBenchSQL(t *testing.T) {
	t.Parallel()
	q := newBenchSQL("b")
	require.Equal(t, "INSERT INTO `b` (priority, cpu, mem, payload) VALUES (?, ?, ?, ?)", q.batch(1))
	require.Equal(t, "INSERT INTO `b` (priority, cpu, mem, payload) VALUES (?, ?, ?, ?), (?, ?, ?, ?)", q.batch(2))
}

// TestBenchWait runs the wait workloads small, as a table and as JSON.
func TestBenchWait(t *testing.T) {
	t.Parallel()
	out, errs, code := shellRun(t, "", append(append([]string{"bench", "--limit-ops", "20", "--limit-s", "60"}, tinyWait...), "memory:")...)
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "wait: 3 timed pushes a wake run; 3 idle consumers for 50ms; producers stop at 20 rows or 1m0s\n")
	row := func(fields ...string) string { return `^` + strings.Join(fields, ` +`) + `\b.*\n` }
	n, ms, slowest, f := `\d+`, `\d+\.\d{3}`, `\d+\.\d{3}\*`, `-?\d+\.\d+`
	for _, want := range []string{
		row("wait_wake", "waiters", "n", "p50 ms", "p99 ms", "push p50 ms") +
			row("", "1", "3", ms, slowest, ms) + row("", "3", "3", ms, slowest, ms),
		row("wait_idle", "consumers", "seconds", "cpu ms", "cpu %", "pops/s") +
			row("wait", "3", f, f, f, f) + row("poll", "3", f, f, f, f),
		row("wait_pc", "consumers", "rate", "rows", "rows/s", "n", "p50 ms", "p99 ms", "empty", "cpu ms/row") +
			row("wait", "2", "200", "20", n, "20", ms, slowest, n, ms) + row("poll", "2", "200", "20", n, "20", ms, slowest, n, ms) +
			row("wait", "2", "max", "20", n, "20", ms, slowest, n, ms) + row("poll", "2", "max", "20", n, "20", ms, slowest, n, ms),
	} {
		require.Regexp(t, regexp.MustCompile(`(?m)`+want), out)
	}

	out, errs, code = shellRun(t, "", append(append([]string{"bench", "--json", "--limit-ops", "20"}, tinyWait...), "--waiters", "2", "memory:")...)
	require.Equal(t, 0, code, errs)
	var kinds []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var v map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &v), line)
		kinds = append(kinds, v["bench"].(string)+"/"+fmt.Sprint(v["mode"]))
		require.Equal(t, "memory", v["config"])
		switch v["bench"] {
		case "wait_wake":
			require.EqualValues(t, 3, v["pushes"])
			require.EqualValues(t, 3, v["samples"])
			require.GreaterOrEqual(t, v["p99_ms"], v["p50_ms"], line)
		case "wait_idle":
			require.EqualValues(t, 3, v["consumers"])
			require.Contains(t, v, "cpu_ms")
		case "wait_pc":
			require.EqualValues(t, 20, v["rows"], line)
			require.EqualValues(t, 20, v["samples"], line)
			require.Positive(t, v["rows_per_s"], line)
		}
	}
	require.Equal(t, []string{"wait_wake/<nil>", "wait_idle/wait", "wait_idle/poll", "wait_pc/wait", "wait_pc/poll", "wait_pc/wait", "wait_pc/poll", "checks/<nil>"}, kinds)
}

// tinyLease are the lease workloads at sizes that take a second or so.
var tinyLease = []string{"--bench", "lease", "--kill-tasks", "30", "--kill-consumers", "4", "--kill-share", "0.5", "--lease-s", "0.2"}

// TestBenchLease runs the lease workloads small, as a table and as JSON.
func TestBenchLease(t *testing.T) {
	t.Parallel()
	out, errs, code := shellRun(t, "", append(append(benchArgs(), tinyLease...), "--consumer-resources", "any", "memory:")...)
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "lease: each lease run after a pop run on the same prefill; lease_kill: 30 tasks, 4 consumers, 2 die, leases of 200ms\n")
	row := func(fields ...string) string { return `^` + strings.Join(fields, ` +`) + `\b.*\n` }
	n, ms, slowest, x, f := `\d+`, `\d+\.\d{3}`, `\d+\.\d{3}\*`, `\d+\.\d{2}x`, `\d+\.\d{2}`
	for _, want := range []string{
		row("lease", "consumers", "prefill", "tasks", "tasks/s", "lease n", "lease p50", "lease p99", "ack n", "ack p50", "ack p99", "pops/s", "pop n", "pop p50", "lease/pop", "pop/task", "stop") +
			row("any", "1", "40", "20", n, "20", ms, slowest, "20", ms, slowest, n, "20", ms, x, x, "count") +
			row("any", "3", "40", "20", n, "20", ms, slowest, "20", ms, slowest, n, "20", ms, x, x, "count"),
		row("lease_kill", "consumers", "dead", "lease s", "tasks", "acked", "abandoned", "redelivered", "max leases", "lost acks", "seconds", "tasks/s") +
			row("", "4", "2", "0.20", "30", "30", n, n, n, n, f, n),
	} {
		require.Regexp(t, regexp.MustCompile(`(?m)`+want), out)
	}

	out, errs, code = shellRun(t, "", append(append(benchArgs("--json"), tinyLease...), "--consumers", "2", "--consumer-resources", "random", "memory:")...)
	require.Equal(t, 0, code, errs)
	var kinds []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var v map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &v), line)
		kinds = append(kinds, v["bench"].(string))
		require.Equal(t, "memory", v["config"])
		switch v["bench"] {
		case "lease":
			require.EqualValues(t, 20, v["rows"], line)
			require.Equal(t, "random", v["consumer_resources"])
			for _, k := range []string{"rows_per_s", "lease_p50_ms", "ack_p50_ms", "pop_rows_per_s", "pop_p50_ms", "lease_pop_p50_ratio", "task_pop_ratio", "lease_samples", "ack_samples", "pop_samples"} {
				require.Positive(t, v[k], "%s: %s", k, line)
			}
			require.GreaterOrEqual(t, v["lease_p99_ms"], v["lease_p50_ms"], line)
			require.InDelta(t, v["lease_p50_ms"].(float64)/v["pop_p50_ms"].(float64), v["lease_pop_p50_ratio"], 1e-9)
		case "lease_kill":
			require.EqualValues(t, 30, v["acked"], line)
			require.EqualValues(t, 2, v["dead"], line)
			// A dead consumer dies at its first or second lease; the
			// others leave it that one only if they drain all 30 tasks
			// first, so one at least died holding a lease.
			// An abandoned task is leased again (by a consumer that
			// may die too: two dead consumers can abandon one task).
			require.EqualValues(t, 2, v["abandoned"], "each dead consumer died holding a lease: %s", line)
			require.GreaterOrEqual(t, v["redelivered"], 1.0, "an abandoned task was leased again: %s", line)
			require.GreaterOrEqual(t, v["max_leases"], 2.0, line)
		}
	}
	require.Equal(t, []string{"lease", "lease_kill", "checks"}, kinds)
}

// onAck alters the acks of the lease runs from the n-th on (1-based).
func onAck(n int, fn func(k, id, rows int64) (int64, int64)) func(int64, int64) (int64, int64) {
	var acks atomic.Int64
	return func(id, rows int64) (int64, int64) {
		if k := acks.Add(1); k >= int64(n) {
			return fn(k-int64(n), id, rows)
		}
		return id, rows
	}
}

// TestBenchLeaseSelfChecksFail breaks each invariant the lease runs check,
// and sees the run fail. One lease run of 20 acks, then the kill run: the
// faults from the 21st ack on hit the kill run.
func TestBenchLeaseSelfChecksFail(t *testing.T) {
	t.Parallel()
	oneRun := append(append([]string{}, tinyLease...), "--consumers", "1", "--consumer-resources", "any")
	var first atomic.Int64
	for _, tc := range []struct {
		name   string
		faults benchFaults
		want   string
	}{
		{"lease count", benchFaults{afterRun: onRun(2, addRow(0, 1, 1))},
			"bench lease any consumers=1: self-check failed: 40 rows filled, 20 acked, so 20 should be left; 21 are"},
		{"ack removes nothing", benchFaults{acked: onAck(3, func(_, id, _ int64) (int64, int64) { return id, 0 })},
			"bench lease any consumers=1: self-check failed: the ack of task"},
		{"kill acked twice", benchFaults{acked: onAck(21, func(k, id, n int64) (int64, int64) {
			switch k {
			case 0:
				first.Store(id)
			case 1:
				return first.Load(), n
			}
			return id, n
		})},
			"bench lease_kill consumers=4: self-check failed: task "},
		{"kill ack lost", benchFaults{acked: onAck(21, func(k, id, n int64) (int64, int64) {
			if k == 0 {
				return id, 0
			}
			return id, n
		})},
			"left the table and was never acked (29 of 30 tasks acked)"},
		{"kill ack counted on another task", benchFaults{acked: onAck(21, func(k, id, n int64) (int64, int64) {
			if k == 0 {
				return 7, n
			}
			return id, n
		})},
			"bench lease_kill consumers=4: self-check failed: task 7 was acked, and it was never filled"},
		{"kill count", benchFaults{afterRun: onRun(3, addRow(0, 1, 1))},
			"bench lease_kill consumers=4: self-check failed: 30 rows filled, 30 acked, so 0 should be left; 1 are"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := runBenchFaults(t, tc.faults, append(oneRun, "memory:")...)
			require.ErrorContains(t, err, tc.want)
			if tc.name == "kill acked twice" {
				require.Regexp(t, `self-check failed: task \d+ was acked 2 times$`, err.Error())
			}
		})
	}
	// Without a fault, the same run passes.
	require.NoError(t, runBenchFaults(t, benchFaults{}, append(oneRun, "memory:")...))
}

// TestBenchProcesses runs the runs that --processes 2 splits between two
// processes of this test binary (TestMain runs them) small: their checks
// pass over both processes' tasks, and the report names the processes.
func TestBenchProcesses(t *testing.T) {
	t.Parallel()
	dsn := "file:" + filepath.Join(t.TempDir(), "db") + "?sync=none"
	small := []string{"bench", "--processes", "2", "--limit-ops", "20", "--limit-s", "60", "--prefill", "40",
		"--clients", "2", "--consumers", "2,3", "--batch", "1,5", "--waiters", "1,3", "--wait-reps", "3"}
	out, errs, code := shellRun(t, "", append(small, "--bench", "push,pop,wait,takeover", dsn)...)
	require.Equal(t, 0, code, "%s\n%s", out, errs)
	require.Regexp(t, `\n2 processes \(pids \d+, \d+\): process 0 serves the database \(it opened it first\) and runs its share of the clients, the others are its clients; this one \(pid \d+\), a client too, fills and checks`, out)
	row := func(fields ...string) string { return `^` + strings.Join(fields, ` +`) + `\b.*\n` }
	// The first process to spend its share of the rows stops the other:
	// up to 20 rows.
	n, rows, ms, slowest, f := `\d+`, `(1\d|20|[1-9])`, `\d+\.\d{3}`, `\d+\.\d{3}\*`, `\d+\.\d`
	for _, want := range []string{
		row("push", "procs", "clients", "rows", "stmts", "rows/s", "stmts/s", "n", "p50 ms", "p99 ms", "stop") +
			row("single", "2", "2", rows, n, n, n, n, ms, slowest, "count") +
			row("batch5", "2", "2", `(5|10|15|20)`, n, n, n, n, ms, slowest, "count"),
		row("pop", "procs", "consumers", "prefill", "pops", "pops/s", "n", "p50 ms", "p99 ms", "empty", "srv MB", "cli MB", "stop") +
			row("random", "2", "2", "40", rows, n, n, ms, slowest, n, f, f, "count") +
			row("random", "2", "3", "40", rows, n, n, ms, slowest, n, f, f, "count") +
			row("any", "2", "2", "40", rows, n, n, ms, slowest, "0", f, f, "count") +
			row("any", "2", "3", "40", rows, n, n, ms, slowest, "0", f, f, "count"),
		row("wait_wake", "procs", "waiters", "n", "p50 ms", "p99 ms", "push p50 ms") +
			row("", "2", "1", "3", ms, slowest, ms) + row("", "2", "3", "3", ms, slowest, ms),
		row("takeover", "procs", "prefill", "survivors", "pops", "p50 ms", "max ms", "srv MB", "cli MB", "new srv MB", "taken over by; each survivor's ms") +
			`^ +2 +40 +1 +40 +` + f + ` +` + f + ` +` + f + ` +` + f + ` +` + f + `  (process 1|parent); ` + f + `\n`,
	} {
		require.Regexp(t, regexp.MustCompile(`(?m)`+want), out)
	}
	require.NotContains(t, out, "wait_idle", "across processes, wait runs wait_wake only")
	// 2 push runs, 4 pop runs, 2 wake runs, the takeover.
	require.Regexp(t, `\n\nself-checks passed: 9 runs, \d+ tasks taken`, out)
	require.Empty(t, benchTables(t, dsn), "the table is gone")

	out, errs, code = shellRun(t, "", append(small, "--bench", "pop", "--consumer-resources", "any", "--consumers", "2", "--json", dsn)...)
	require.Equal(t, 0, code, "%s\n%s", out, errs)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2)
	for _, line := range lines {
		var v map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &v), line)
		require.EqualValues(t, 2, v["processes"], line)
		if v["bench"] == "pop" {
			require.EqualValues(t, 40, v["prefill"], line)
			require.Equal(t, "count", v["stop"], line)
			require.Equal(t, v["rows"], v["samples"], "every pop timed, none empty: %s", line)
			rss := v["rss"].(map[string]any)
			require.Positive(t, rss["server_mb"], line)
			require.Positive(t, rss["parent_mb"], line)
			require.Len(t, rss["clients_mb"], 1, line)
			by := v["by_process"].([]any)
			require.Len(t, by, 2, line)
			for i, p := range by {
				p := p.(map[string]any)
				require.EqualValues(t, i, p["process"], line)
				require.Equal(t, i == 0, p["serving"], "process 0 serves: %s", line)
				require.EqualValues(t, 1, p["clients"], line)
			}
		} else {
			require.Equal(t, "checks", v["bench"])
			require.Equal(t, true, v["passed"], line)
			require.Equal(t, v["tasks"], jsonField(t, lines[0], "rows"), "the tasks both processes checked: %s", line)
		}
	}

	// A check fails across processes as in one.
	err := runBenchFaults(t, benchFaults{afterRun: addRow(0, 1, 1)}, "--processes", "2", "--bench", "pop", "--consumers", "2", dsn)
	require.ErrorIs(t, err, errSelfCheck)
	require.ErrorContains(t, err, "bench pop random consumers=2: self-check failed: 40 rows filled, ")
}

// jsonField is a field of a JSON line.
func jsonField(t *testing.T, line, field string) any {
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(line), &v))
	return v[field]
}

// Without --processes, $FDBQUEUE_BENCH_CPUPROFILE and $FDBQUEUE_BENCH_TRACE
// still give a profile and a trace: this process's, as FILE-0. (Not
// parallel: a process runs one CPU profile at a time.)
func TestBenchProfilesOneProcess(t *testing.T) {
	dir := t.TempDir()
	prof, tr := filepath.Join(dir, "cpu"), filepath.Join(dir, "trace")
	t.Setenv(procProfileEnv, prof)
	t.Setenv(procTraceEnv, tr)
	_, errs, code := shellRun(t, "", "bench", "--bench", "push", "--batch", "1", "--clients", "1", "--limit-ops", "20", "memory:")
	require.Equal(t, 0, code, errs)
	for _, f := range []string{prof + "-0", tr + "-0"} {
		st, err := os.Stat(f)
		require.NoError(t, err)
		require.NotZero(t, st.Size(), f)
	}

	// A profile it cannot write fails the bench before it runs, and says
	// why.
	t.Setenv(procProfileEnv, filepath.Join(dir, "missing", "cpu"))
	_, errs, code = shellRun(t, "", "bench", "--bench", "push", "--batch", "1", "--clients", "1", "--limit-ops", "20", "memory:")
	require.Equal(t, 1, code)
	require.Contains(t, errs, "no such file or directory")
}
