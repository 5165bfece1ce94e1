package bench

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	fdbqueue "github.com/fdbqueue/fdbqueue/driver"
)

// benchJSON runs fdbqueue bench with --json and returns its lines, by
// kind.
func benchJSON(t *testing.T, args ...string) map[string][]map[string]any {
	t.Helper()
	out, errs, code := shellRun(t, "", append([]string{"bench", "--json"}, args...)...)
	require.Equal(t, 0, code, errs)
	lines := map[string][]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var v map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &v), line)
		lines[v["bench"].(string)] = append(lines[v["bench"].(string)], v)
	}
	return lines
}

// TestBenchModelWaits: on the modeled cluster, the bench reports the waits
// of each statement, as BenchmarkFDBWaits counts them (exec/
// waits_bench_test.go: an INSERT of 1 row or of 100 waits 3 times, at the
// median), with the latencies it assumed; elsewhere, no waits.
func TestBenchModelWaits(t *testing.T) {
	t.Parallel()
	lines := benchJSON(t, "--model", "--bench", "push,pop,latency", "--clients", "1", "--batch", "1,100", "--limit-ops", "200",
		"--consumers", "1", "--consumer-resources", "any", "--prefill", "200", "--sizes", "30", "--reps", "3", "--limit-s", "60", "memory:")
	for kind, n := range map[string]int{"push": 2, "pop": 1, "get_task": 2, "checks": 1} {
		require.Len(t, lines[kind], n, kind)
	}
	for kind, ls := range lines {
		for _, v := range ls {
			require.Equal(t, "fdb-model", v["config"], "%s: %v", kind, v)
			require.Equal(t, map[string]any{"grv_ms": 0.4, "read_ms": 0.25, "commit_ms": 1.5}, v["model"], "the defaults: %s: %v", kind, v)
			if kind == "checks" {
				require.Equal(t, true, v["passed"], v)
				continue
			}
			w, ok := v["waits"].(map[string]any)
			require.True(t, ok, "%s: %v", kind, v)
			timed := v["samples"]
			if kind == "get_task" {
				timed = v["reps"]
			}
			require.Equal(t, timed, w["samples"], "every statement timed is counted: %s: %v", kind, w)
			require.Positive(t, w["requests_per_stmt"], w)
			require.GreaterOrEqual(t, w["attempts_per_stmt"], 1.0, w)
			require.LessOrEqual(t, w["p50"], w["p99"], w)
			require.LessOrEqual(t, w["p99"], w["max"], w)
			if kind == "push" {
				require.EqualValues(t, 3, w["p50"], "an INSERT waits for the read version, one read and the commit: %s", v["mode"])
				// One client: no conflicts. Its executor reserves blocks of
				// ids in transactions of their own (queues.IDs), of 1,024
				// ids and more: attempts of their own, a few in a run.
				require.LessOrEqual(t, w["attempts_per_stmt"], 1.03, "one client: no conflicts")
			}
		}
	}

	// The table: the latencies in the header, the waits beside the
	// latency.
	out, errs, code := shellRun(t, "", "bench", "--model", "--bench", "push", "--clients", "1", "--batch", "1", "--limit-ops", "20", "memory:")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "fdbqueue bench memory: (fdb-model), table fdbqueue_bench\n")
	require.Contains(t, out, "\nmodeled FoundationDB cluster (internal/fdbmodel): the in-memory engine, each wait slept: GRV 0.400 ms, read 0.250 ms, commit 1.500 ms\n")
	require.Contains(t, out, "modeled, not measured on a cluster")
	require.Regexp(t, regexp.MustCompile(`(?m)^push +clients +rows +stmts +rows/s +stmts/s +n +p50 ms +p99 ms +waits p50/p99/max +reqs/stmt +stop\n`+
		`single +1 +20 +20 +\d+ +\d+ +20 +\d+\.\d{3} +\d+\.\d{3}\* +3/\d+/\d+ +\d+\.\d +count\n`), out)

	// Without --model: no waits, no model.
	lines = benchJSON(t, append(tinyBench[:len(tinyBench):len(tinyBench)], "--bench", "push", "memory:")...)
	for _, v := range lines["push"] {
		require.NotContains(t, v, "waits")
		require.NotContains(t, v, "model")
		require.Equal(t, "memory", v["config"])
	}
	out, errs, code = shellRun(t, "", benchArgs("--bench", "push,pop,latency", "memory:")...)
	require.Equal(t, 0, code, errs)
	require.NotContains(t, out, "waits")
	require.NotContains(t, out, "modeled")
}

// TestBenchModelLease: the lease runs count the lease and its ack apart;
// the ack waits 4 times, as BenchmarkFDBWaits counts (the id index, then
// the row).
func TestBenchModelLease(t *testing.T) {
	t.Parallel()
	lines := benchJSON(t, "--model", "--bench", "lease", "--consumers", "1", "--consumer-resources", "any", "--limit-ops", "20",
		"--prefill", "40", "--kill-tasks", "10", "--kill-consumers", "2", "--lease-s", "0.05", "memory:")
	require.Len(t, lines["lease"], 1)
	v := lines["lease"][0]
	lease, ack := v["lease_waits"].(map[string]any), v["ack_waits"].(map[string]any)
	require.Equal(t, v["lease_samples"], lease["samples"], v)
	require.Equal(t, v["ack_samples"], ack["samples"], v)
	require.EqualValues(t, 4, ack["p50"], v)
	require.NotContains(t, lines["lease_kill"][0], "waits", "lease_kill counts none")
}

// TestBenchModelLatencies: the flags set the modeled latencies, which the
// header prints and every statement sleeps.
func TestBenchModelLatencies(t *testing.T) {
	t.Parallel()
	args := []string{"--model", "--model-grv", "1ms", "--model-read", "2ms", "--model-commit", "3ms",
		"--bench", "push", "--clients", "1", "--batch", "1", "--limit-ops", "10", "memory:"}
	out, errs, code := shellRun(t, "", append([]string{"bench"}, args...)...)
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "each wait slept: GRV 1.000 ms, read 2.000 ms, commit 3.000 ms\n")

	lines := benchJSON(t, args...)
	require.Len(t, lines["push"], 1)
	v := lines["push"][0]
	require.Equal(t, map[string]any{"grv_ms": 1.0, "read_ms": 2.0, "commit_ms": 3.0}, v["model"])
	require.EqualValues(t, 3, v["waits"].(map[string]any)["p50"])
	// An INSERT's three waits, slept: the read version, a read, the
	// commit.
	require.GreaterOrEqual(t, v["p50_ms"], 6.0, "1 + 2 + 3 ms: %v", v)
}

// TestBenchModelHeader: on FoundationDB, the header says that the waits
// are not counted, and where to get the modeled ones.
func TestBenchModelHeader(t *testing.T) {
	t.Parallel()
	cfg, err := fdbqueue.ParseDSN("fdb:")
	require.NoError(t, err)
	require.Contains(t, modelHeader(&benchOptions{cfg: cfg}), "waits: not counted on a cluster")
	require.Contains(t, modelHeader(&benchOptions{cfg: cfg}), "fdbqueue bench --model memory:")
	cfg, err = fdbqueue.ParseDSN("memory:")
	require.NoError(t, err)
	require.Empty(t, modelHeader(&benchOptions{cfg: cfg}), "the embedded engines: nothing on waits")
}
