package bench

// fdbqueue bench: its flags, and the run that owns the benchmark table.

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"regexp"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"time"

	fdbqueue "github.com/fdbqueue/fdbqueue/driver"
	"github.com/fdbqueue/fdbqueue/internal/fdbmodel"
)

const benchUsage = `fdbqueue bench: measure fdbqueue on a database, as pgbench measures PostgreSQL

usage: fdbqueue bench [flags] DSN

The DSN is required (memory:, file:DIR[?sync=full|none], fdb:...; $FDBQUEUE_DSN
is not used): the bench writes hundreds of thousands of rows to it. With
--model, the DSN is memory: and the bench runs on a modeled FoundationDB
cluster: the in-memory engine behind the project's model of a cluster
(internal/fdbmodel, described in docs/foundationdb.md), which counts each
statement's sequential waits (for the read version, for reads, for the
commit) as the FoundationDB engine would incur them, and sleeps each for
its latency (--model-grv, --model-read, --model-commit; the header prints
them), so that throughput and latency are those of the modeled cluster.
Its push, pop, get_task and lease runs add each statement's waits (p50,
p99, max) and read requests (mean). On fdb: the waits are not counted (the
FoundationDB engine has no counter); the embedded engines have none. It works
in one table, --table (default fdbqueue_bench), which it drops and recreates
before every run and drops at the end, also after a failure or Ctrl-C. If
that table exists when the bench starts, the bench refuses to run, unless
--force: it is not the bench's to drop.

Workloads (--bench), on CREATE TABLE t (priority INT NOT NULL, cpu INT NOT
NULL, mem INT NOT NULL, payload BLOB, INDEX fit (cpu, mem)), tasks of
priority 0..9, cpu 1..8, mem 1..32 and a 64-byte payload:
  push     INSERT of one row and of --batch rows, by --clients clients
  pop      SELECT id, cpu, mem, payload FROM t WHERE cpu <= ? AND mem <= ?
           ORDER BY priority LIMIT 1 FOR POP, by --consumers consumers, on
           --prefill tasks; consumer resources random (cpu 1..8, mem 1..32 a
           pop) or any (cpu 8, mem 32: every task fits)
  latency  get_task: fill --sizes tasks, then time --reps single pops. random:
           random tasks and consumers; worst: the consumer has cpu 4, mem 16
           and only the last task pushed, at the lowest priority, fits it
  fsync    (file: only) write a small record into a file's reserved space
           in DIR and fsync it, --fsync-reps times, as the log does: what
           one durable commit costs at least
  wait     (not in the default list: it idles on purpose) SELECT ... FOR POP
           WAIT. wait_wake: --waiters consumers wait on an empty table; one
           task is pushed --wait-reps times, each once they all wait again:
           time from the push's start to the task in a consumer's hands.
           wait_idle: --idle-consumers consumers on an empty table for
           --idle-s, waiting (WAIT 5 in a loop) or polling (FOR POP, then
           10 ms of sleep when empty): the process's CPU time. wait_pc: a
           producer pushes --wait-rate tasks a second (0: as fast as it can)
           until --limit-ops or --limit-s, --wait-consumers consumers wait
           (WAIT 1) or poll: rows/s, latency from push to consumer, empty
           pops, CPU time per row
  lease    (not in the default list: it also runs pops, and waits for
           leases to expire) lease: for each --consumers and
           --consumer-resources, a pop run, then the same on the same
           prefill with SELECT id, _lease, cpu, mem, payload FROM t WHERE
           cpu <= ? AND mem <= ? ORDER BY priority LIMIT 1 FOR LEASE 60 and
           its ack, DELETE FROM t WHERE id = ? AND _lease = ?: tasks/s,
           p50/p99 of the lease and of the ack, and the lease's cost
           against the pop's. lease_kill: --kill-consumers consumers lease
           (FOR LEASE --lease-s WAIT 1) and ack --kill-tasks tasks until
           the table is empty; --kill-share of them die early, each holding
           a lease it never acks, and the others take those tasks again
           once the leases expire. Its check: every task acked exactly
           once (an ack that removed the row), the table empty
  takeover (--processes only, not in the default list: it kills a process)
           the processes that do not serve pop in a loop, one connection
           each, on --prefill tasks; the serving one is killed (SIGKILL):
           the time from the kill to each one's first pop begun after it
           that succeeded, once another process took the database over
           (recovering its log). Checked: no task popped twice, popped +
           left = filled
Each push and pop run stops at --limit-ops rows or --limit-s seconds,
whichever comes first (0: no such limit). Every run checks its result and
fails the bench if it is wrong: rows pushed = rows in the table; rows popped
= rows filled - rows left; no task popped twice; every popped task fits its
consumer and carries its payload intact. The last line says that the
checks passed, with the runs and tasks checked, or which one failed.

With --processes N (file: only), the bench runs again as N processes on
the DSN, which they share as any processes of a host share a file:
database: the first to open it, process 0, serves it on a Unix socket in
its directory and runs its own transactions in the engine; the others run
theirs through it (3 to 6 round trips a statement). This process starts
them (process 0 first), fills and checks as a client of process 0, and
sums what they measured: rows over the span from the first process's
start to the last one's end, latencies merged (percentiles over every
process's statements), the checks over every process's tasks. push and
pop: the --clients and --consumers split between the N processes (32 and
--processes 4: 8 each, process 0 included, as the first of N worker
processes would run its share); each gets its share of --limit-ops, and
the first to spend it stops the others, or all stop at --limit-s. wait
(wait_wake only): the --waiters spread over processes 1..N-1, and this
process pushes, so each wake-up crosses processes. takeover: processes
1..N-1 pop, process 0 is killed. pop and takeover report the resident
memory (VmRSS, Linux) at the end of their fill: the serving process's and
the largest of the others' (JSON rss, with this process's). latency,
fsync and lease run in one process only; the default --bench is then
push,pop. Every JSON object carries "processes"; push and pop objects also
"by_process": each process's clients, rows, seconds, p50_ms, p99_ms and
stop (halt: stopped by another's count), since process 0's clients, which
skip the socket, can outrun the others. $FDBQUEUE_BENCH_CPUPROFILE=FILE
($FDBQUEUE_BENCH_TRACE=FILE) has each process write a CPU profile (an
execution trace) of its life to FILE-N; without --processes, this one
writes FILE-0.

Output: a table on standard output, or with --json one JSON object a run
(bench, mode, clients, consumers, rows, rows_per_s, p50_ms, p99_ms, stop,
median_ms, ...: the fields of the project's PostgreSQL comparison), and
last the checks' verdict: {"bench": "checks", "passed": true, "runs": N,
"tasks": N}, or "passed": false and the "failure". With --model, every
object carries "model": {"grv_ms", "read_ms", "commit_ms"}, and the runs
"waits" (lease runs "lease_waits" and "ack_waits"): {"samples", "p50",
"p99", "max", "mean", "requests_per_stmt", "attempts_per_stmt"}. Percentiles are
nearest-rank, of every statement a run timed; beside them, n (JSON:
samples, lease_samples, ...) says how many that is. The p99 of fewer than
100 timings is their slowest: the table marks it with a *. Exit
status: 0; 1 when a run fails (an error, a failed check, the table exists,
Ctrl-C); 2 for bad flags.

flags:
`

const benchExamples = `
examples:
  fdbqueue bench memory:
  fdbqueue bench file:/tmp/benchdb
  fdbqueue bench --bench latency --sizes 10000,100000,1000000 file:/tmp/benchdb
  fdbqueue bench --bench pop --consumers 1,64 --limit-s 10 --json memory: > pop.jsonl
  fdbqueue bench --bench wait file:/tmp/benchdb
  fdbqueue bench --processes 4 --bench push,pop --clients 32 --consumers 32 file:/tmp/benchdb
  fdbqueue bench --processes 4 --bench takeover --prefill 1000000 file:/tmp/benchdb
  fdbqueue bench --bench lease --consumer-resources random memory:
  fdbqueue bench --model --bench push,pop --limit-ops 2000 memory:
  fdbqueue bench --model --model-commit 5ms --bench latency memory:
`

// The benchmarks, in the order they run.
var benchNames = []string{"fsync", "push", "pop", "latency", "wait", "lease", "takeover"}

// procBenches are the benchmarks that run across --processes.
var procBenches = []string{"push", "pop", "wait", "takeover"}

// Consumer resources of the pop runs.
var resourceModes = []string{"random", "any"}

// Bounds of the list flags: a client is a connection, a batch one statement.
const (
	maxClients = 1000
	maxBatch   = 1000
)

// benchIdentRE is a table name the bench accepts: a plain identifier.
var benchIdentRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// limits bound a push or pop run: rows, and time. Zero is no limit.
type limits struct {
	ops int
	dur time.Duration
}

// benchOptions are the parsed flags of fdbqueue bench.
type benchOptions struct {
	benches   []string // a subset of benchNames, in their order
	clients   []int
	batches   []int
	consumers []int
	resources []string
	lim       limits
	prefill   int
	sizes     []int
	reps      int
	fsyncReps int
	// The wait workloads (wait.go).
	waiters       []int
	waitReps      int
	idleConsumers int
	idleDur       time.Duration
	waitRates     []int
	waitConsumers int
	// The lease workloads (lease.go): the kill run's.
	killTasks     int
	killConsumers int
	killShare     float64
	leaseDur      time.Duration
	json          bool
	table         string
	force         bool
	dsn           string
	cfg           *fdbqueue.Config
	// config labels the engine configuration in the results: memory,
	// file-full, file-none, fdb or fdb-model.
	config string
	// model: the in-memory engine on a modeled FoundationDB cluster
	// (model.go) of these latencies.
	model    bool
	modelLat fdbmodel.Latencies
	// processes is --processes: the runs' clients are split between that
	// many processes (procs.go); args are the arguments, which
	// each is given.
	processes int
	args      []string
}

func (o *benchOptions) runs(name string) bool { return slices.Contains(o.benches, name) }

// usageError is a bad flag or argument: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string {
	return "fdbqueue: bench: " + strings.TrimPrefix(e.msg, "fdbqueue: ")
}

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// parseBenchFlags parses fdbqueue bench's arguments. Flags may come before
// or after the DSN. It returns nil options and the exit status when there
// is nothing to run (help, or an error it reported on stderr).
func parseBenchFlags(args []string, stderr io.Writer) (*benchOptions, int) {
	o := &benchOptions{args: args}
	fs := flag.NewFlagSet("fdbqueue bench", flag.ContinueOnError)
	// The flag package's own messages are replaced by ours: a mistyped
	// flag gets one line, not the whole help.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	benches := fs.String("bench", "push,pop,latency,fsync", "the benchmarks to run: `LIST` of push, pop, latency, fsync, wait, lease, takeover (fsync runs on file: DSNs only; by default it is skipped elsewhere; with --processes, push, pop, wait and takeover, by default push,pop)")
	fs.IntVar(&o.processes, "processes", 1, "run the clients in `N` processes sharing the file: DSN (process 0 serves it; see above): push and pop split --clients and --consumers between them, wait_wake spreads --waiters over processes 1..N-1 and pushes from this one, takeover kills process 0")
	clients := fs.String("clients", "1,8", "push: numbers of concurrent clients, a `LIST`")
	batches := fs.String("batch", "1,100", "push: rows per INSERT, a `LIST`")
	consumers := fs.String("consumers", "1,8,32", "pop: numbers of concurrent consumers, a `LIST`")
	resources := fs.String("consumer-resources", "random,any", "pop: what consumers offer, a `LIST` of random (cpu 1..8, mem 1..32 a pop) and any (cpu 8, mem 32)")
	fs.IntVar(&o.lim.ops, "limit-ops", 20000, "push and pop: stop a run after `N` rows (0: no limit)")
	limitS := fs.Float64("limit-s", 5, "push and pop: stop a run after `SECONDS` (0: no limit)")
	fs.IntVar(&o.prefill, "prefill", 100000, "pop: tasks in the queue when a run starts")
	sizes := fs.String("sizes", "10000,100000", "latency: queue sizes, a `LIST` (the full-size comparison adds 1000000); without --sizes, a --prefill below them cuts them to it")
	fs.IntVar(&o.reps, "reps", 10, "latency: timed pops per workload and size")
	fs.IntVar(&o.fsyncReps, "fsync-reps", 200, "fsync: timed fsyncs")
	waiters := fs.String("waiters", "1,32", "wait: numbers of waiting consumers of wait_wake, a `LIST`")
	fs.IntVar(&o.waitReps, "wait-reps", 200, "wait: timed pushes of each wait_wake run")
	fs.IntVar(&o.idleConsumers, "idle-consumers", 100, "wait: consumers of wait_idle")
	idleS := fs.Float64("idle-s", 10, "wait: `SECONDS` of wait_idle")
	waitRates := fs.String("wait-rate", "200,0", "wait: tasks a second the wait_pc producer pushes, a `LIST` (0: as fast as it can)")
	fs.IntVar(&o.waitConsumers, "wait-consumers", 4, "wait: consumers of wait_pc")
	fs.IntVar(&o.killTasks, "kill-tasks", 5000, "lease: tasks of lease_kill")
	fs.IntVar(&o.killConsumers, "kill-consumers", 8, "lease: consumers of lease_kill")
	fs.Float64Var(&o.killShare, "kill-share", 0.25, "lease: the `SHARE` of lease_kill's consumers that die (0..1; at least one, never all)")
	leaseS := fs.Float64("lease-s", 0.5, "lease: `SECONDS` of lease_kill's leases")
	fs.BoolVar(&o.json, "json", false, "print JSON lines, one object a run, instead of the table")
	fs.StringVar(&o.table, "table", "fdbqueue_bench", "the `NAME` of the table the bench drops, creates and fills")
	fs.BoolVar(&o.force, "force", false, "drop --table even if it exists before the bench starts")
	fs.BoolVar(&o.model, "model", false, "run on a modeled FoundationDB cluster: the DSN's in-memory engine (memory: only) behind the project's model of a cluster (internal/fdbmodel), which sleeps each wait a statement makes for its latency (--model-grv, --model-read, --model-commit) and counts them; the report adds each statement's waits (p50/p99/max) and read requests")
	var lat fdbmodel.Latencies
	fs.DurationVar(&lat.GRV, "model-grv", fdbmodel.DefaultLatencies.GRV, "--model: a wait for a read version, a `DURATION`")
	fs.DurationVar(&lat.Read, "model-read", fdbmodel.DefaultLatencies.Read, "--model: a read's round trip to a storage server, a `DURATION`")
	fs.DurationVar(&lat.Commit, "model-commit", fdbmodel.DefaultLatencies.Commit, "--model: a commit (proxy, resolvers, the logs' fsync), a `DURATION`")
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(stderr, benchUsage)
				fs.SetOutput(stderr)
				fs.PrintDefaults()
				fmt.Fprint(stderr, benchExamples)
				return nil, 0
			}
			fmt.Fprintf(stderr, "fdbqueue: bench: %v (fdbqueue bench --help lists the flags)\n", err)
			return nil, 2
		}
		if fs.NArg() == 0 {
			break
		}
		rest = append(rest, fs.Arg(0))
		args = fs.Args()[1:]
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	err := o.check(rest, set, *benches, *clients, *batches, *consumers, *resources, *sizes, *limitS)
	if err == nil {
		err = o.checkWait(*waiters, *waitRates, *idleS)
	}
	if err == nil {
		err = o.checkLease(*leaseS)
	}
	if err == nil {
		err = o.checkModel(set, lat)
	}
	if err == nil {
		err = o.checkProcesses(set)
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return nil, 2
	}
	return o, -1
}

// check fills in and checks the options; set holds the flags given.
func (o *benchOptions) check(rest []string, set map[string]bool, benches, clients, batches, consumers, resources, sizes string, limitS float64) error {
	switch len(rest) {
	case 0:
		return usagef("give the DSN to measure, as in fdbqueue bench memory: or fdbqueue bench file:/tmp/benchdb (the bench writes to it; $FDBQUEUE_DSN is not used)")
	case 1:
	default:
		return usagef("one DSN; got %q", rest)
	}
	o.dsn = rest[0]
	cfg, err := fdbqueue.ParseDSN(o.dsn)
	if err != nil {
		return usagef("%v", err)
	}
	o.cfg = cfg
	switch cfg.Engine {
	case fdbqueue.EngineFile:
		if cfg.Params["mode"] == "ro" {
			return usagef("%s opens the database read-only; the bench writes (drop mode=ro)", o.dsn)
		}
		sync := cfg.Params["sync"]
		if sync == "" {
			sync = "full"
		}
		o.config = "file-" + sync
	default:
		o.config = string(cfg.Engine)
	}

	names, err := parseWords("--bench", benches, benchNames)
	if err != nil {
		return err
	}
	for _, n := range benchNames {
		if !slices.Contains(names, n) {
			continue
		}
		if n == "fsync" && cfg.Engine != fdbqueue.EngineFile {
			if set["bench"] {
				return usagef("--bench fsync measures the disk under a file: DSN; %s has none", o.dsn)
			}
			continue
		}
		o.benches = append(o.benches, n)
	}
	if o.clients, err = parseInts("--clients", clients, 1, maxClients); err != nil {
		return err
	}
	if o.batches, err = parseInts("--batch", batches, 1, maxBatch); err != nil {
		return err
	}
	if o.consumers, err = parseInts("--consumers", consumers, 1, maxClients); err != nil {
		return err
	}
	if o.resources, err = parseWords("--consumer-resources", resources, resourceModes); err != nil {
		return err
	}
	if o.sizes, err = parseInts("--sizes", sizes, 1, math.MaxInt32); err != nil {
		return err
	}
	switch {
	case o.lim.ops < 0:
		return usagef("--limit-ops %d: a number of rows, or 0 for no limit", o.lim.ops)
	case limitS < 0 || math.IsNaN(limitS) || math.IsInf(limitS, 0) || limitS > 1e6:
		return usagef("--limit-s %v: seconds (up to 1e6), or 0 for no limit", limitS)
	case o.lim.ops == 0 && limitS == 0 && (o.runs("push") || o.runs("pop") || o.runs("lease")):
		return usagef("--limit-ops 0 and --limit-s 0 would let a push or pop run go on forever; bound one of them")
	case limitS == 0 && (o.runs("pop") || o.runs("lease")) && (o.lim.ops == 0 || o.lim.ops > o.prefill):
		return usagef("--limit-s 0 with --limit-ops %d and --prefill %d: a pop run would go on popping an empty queue; give --limit-ops up to --prefill, or a time limit", o.lim.ops, o.prefill)
	case o.prefill < 1:
		return usagef("--prefill %d: the pop runs need at least 1 task", o.prefill)
	case o.reps < 1:
		return usagef("--reps %d: at least 1 timed pop", o.reps)
	case o.fsyncReps < 1:
		return usagef("--fsync-reps %d: at least 1 fsync", o.fsyncReps)
	case !benchIdentRE.MatchString(o.table):
		return usagef("--table %q: a name of letters, digits and _, not starting with a digit, up to 64 characters", o.table)
	}
	if set["prefill"] && !set["sizes"] {
		// A smaller --prefill asks for a smaller bench: the latency fills
		// follow it rather than fill the default 100,000 tasks.
		var cut []int
		for _, n := range o.sizes {
			if n = min(n, o.prefill); !slices.Contains(cut, n) {
				cut = append(cut, n)
			}
		}
		o.sizes = cut
	}
	o.lim.dur = time.Duration(limitS * float64(time.Second))
	return nil
}

// checkWait fills in and checks the wait workloads' options.
func (o *benchOptions) checkWait(waiters, rates string, idleS float64) error {
	var err error
	if o.waiters, err = parseInts("--waiters", waiters, 1, maxClients); err != nil {
		return err
	}
	if o.waitRates, err = parseInts("--wait-rate", rates, 0, 1_000_000); err != nil {
		return err
	}
	switch {
	case o.waitReps < 1:
		return usagef("--wait-reps %d: at least 1 timed push", o.waitReps)
	case o.idleConsumers < 1 || o.idleConsumers > maxClients:
		return usagef("--idle-consumers %d: from 1 to %d", o.idleConsumers, maxClients)
	case o.waitConsumers < 1 || o.waitConsumers > maxClients:
		return usagef("--wait-consumers %d: from 1 to %d", o.waitConsumers, maxClients)
	case idleS <= 0 || math.IsNaN(idleS) || idleS > 3600:
		return usagef("--idle-s %v: seconds, more than 0 and up to 3600", idleS)
	case o.lim.ops == 0 && o.lim.dur == 0 && o.runs("wait"):
		return usagef("--limit-ops 0 and --limit-s 0 would let a wait_pc producer push forever; bound one of them")
	}
	o.idleDur = time.Duration(idleS * float64(time.Second))
	return nil
}

// checkLease fills in and checks the lease workloads' options.
func (o *benchOptions) checkLease(leaseS float64) error {
	switch {
	case o.killTasks < 1 || o.killTasks > 10_000_000:
		return usagef("--kill-tasks %d: from 1 to 10000000 tasks", o.killTasks)
	case o.killConsumers < 2 || o.killConsumers > maxClients:
		return usagef("--kill-consumers %d: from 2 to %d (one dies, one at least lives)", o.killConsumers, maxClients)
	case !(o.killShare >= 0 && o.killShare <= 1):
		return usagef("--kill-share %v: a share of the consumers, from 0 to 1", o.killShare)
	case !(leaseS >= 0.01 && leaseS <= 60):
		return usagef("--lease-s %v: seconds, from 0.01 to 60", leaseS)
	}
	o.leaseDur = time.Duration(leaseS * float64(time.Second))
	return nil
}

// checkProcesses checks --processes against the DSN, the benchmarks and
// the numbers of clients; without --bench, it runs push and pop.
func (o *benchOptions) checkProcesses(set map[string]bool) error {
	switch {
	case o.processes < 1 || o.processes > maxProcesses:
		return usagef("--processes %d: from 1 to %d", o.processes, maxProcesses)
	case o.processes == 1:
		if o.runs("takeover") {
			return usagef("--bench takeover kills the process that serves a database others share: give --processes 2 or more")
		}
		return nil
	case o.cfg.Engine != fdbqueue.EngineFile:
		return usagef("--processes %d shares a file: database between processes; %s is one process's own (give file:DIR)", o.processes, o.dsn)
	}
	if !set["bench"] {
		o.benches = slices.DeleteFunc(o.benches, func(n string) bool { return !slices.Contains(procBenches, n) })
	}
	for _, n := range o.benches {
		if !slices.Contains(procBenches, n) {
			return usagef("--bench %s runs in one process; with --processes, give %s", n, strings.Join(procBenches, ", "))
		}
	}
	check := func(name string, counts []int) error {
		if slices.Min(counts) < o.processes {
			return usagef("%s %s: each of --processes %d runs one at least; give %d or more", name, joinInts(counts), o.processes, o.processes)
		}
		return nil
	}
	if o.runs("push") {
		if err := check("--clients", o.clients); err != nil {
			return err
		}
	}
	if o.runs("pop") {
		if err := check("--consumers", o.consumers); err != nil {
			return err
		}
	}
	if o.lim.ops > 0 && o.lim.ops < o.processes && (o.runs("push") || o.runs("pop")) {
		return usagef("--limit-ops %d: fewer rows than --processes %d; give 0 (no limit) or %d or more", o.lim.ops, o.processes, o.processes)
	}
	return nil
}

// joinInts writes a list flag's value back.
func joinInts(n []int) string {
	s := make([]string, len(n))
	for i, v := range n {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

// parseInts reads a comma-separated list of integers from lo to hi.
func parseInts(flagName, s string, lo, hi int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < lo || n > hi {
			return nil, usagef("%s %q: a comma-separated list of integers from %d to %d, as in %s 1,8", flagName, s, lo, hi, flagName)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// parseWords reads a comma-separated list of words from allowed.
func parseWords(flagName, s string, allowed []string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		w := strings.ToLower(strings.TrimSpace(f))
		if !slices.Contains(allowed, w) {
			return nil, usagef("%s %q: %q is not one of %s", flagName, s, f, strings.Join(allowed, ", "))
		}
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out, nil
}

// Main is fdbqueue bench; args are what follows bench on the command line.
// It returns the exit status.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, status := parseBenchFlags(args, stderr)
	if o == nil {
		return status
	}
	if v, ok := os.LookupEnv(procChildEnv); ok {
		// A process of --processes: its parent reports.
		idx, err := strconv.Atoi(v)
		if err == nil {
			err = benchChild(ctx, o, idx, stdin, stdout)
		}
		if err != nil {
			fmt.Fprintf(stderr, "fdbqueue: bench process %s: %v\n", v, err)
			return 1
		}
		return 0
	}
	// Ctrl-C stops the runs, and the bench drops its table; a second
	// Ctrl-C, with the default handling back, kills it.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		stop()
	}()
	if o.processes == 1 {
		// One process: it is process 0, and the profile or trace is its.
		stopProfile, err := childProfile(procProfileEnv, 0, pprof.StartCPUProfile, pprof.StopCPUProfile)
		if err == nil {
			defer stopProfile()
			var stopTrace func()
			stopTrace, err = childProfile(procTraceEnv, 0, trace.Start, trace.Stop)
			if err == nil {
				defer stopTrace()
			}
		}
		if err != nil {
			fmt.Fprintln(stderr, prefixed(err))
			return 1
		}
	}
	if err := benchMain(ctx, o, stdout, stderr, benchFaults{}); err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "fdbqueue: bench: interrupted")
			return 1
		}
		fmt.Fprintln(stderr, prefixed(err))
		return 1
	}
	return 0
}

// prefixed gives a message the "fdbqueue: " prefix, once: errors of the
// driver carry it already. (The shell has the same rule for its messages.)
func prefixed(err error) string {
	msg := err.Error()
	if strings.HasPrefix(msg, "fdbqueue: ") {
		return msg
	}
	return "fdbqueue: " + msg
}

// quoteIdent quotes a name for SQL: in backticks, a backtick doubled.
// --table admits letters, digits and _ only; the quotes keep a keyword
// (order) one identifier.
func quoteIdent(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

// ErrBenchTableExists is returned when the bench's table exists before it
// starts and --force was not given.
var ErrBenchTableExists = errors.New("fdbqueue: bench: its table exists")

// benchMain opens the database, checks that the bench's table is its own to
// drop, runs the benchmarks and drops the table.
func benchMain(ctx context.Context, o *benchOptions, stdout, stderr io.Writer, faults benchFaults) (err error) {
	var procs *procGroup
	if o.processes > 1 {
		// The children's standard error is this one's.
		stderr = &syncWriter{w: stderr}
		// Started before this process opens the database, so that
		// process 0 serves it; ended after it closed it (deferred first).
		procs, err = startProcs(ctx, o, stderr)
		if procs != nil {
			defer func() {
				if cerr := procs.close(); cerr != nil && err == nil {
					err = cerr
				}
			}()
		}
		if err != nil {
			return err
		}
	}
	db, err := openBenchDB(o)
	if err != nil {
		return err
	}
	defer db.Close()
	// Every client holds a connection for a whole run.
	conns := max(64, slices.Max(o.clients)+1, slices.Max(o.consumers)+1)
	if o.runs("wait") {
		conns = max(conns, slices.Max(o.waiters)+2, o.idleConsumers+2, o.waitConsumers+2)
	}
	if o.runs("lease") {
		conns = max(conns, o.killConsumers+2)
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	if err := checkBenchTable(ctx, db, o); err != nil {
		return err
	}
	defer func() {
		// Whatever happened, the table goes: the bench leaves the
		// database as it found it.
		dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, derr := db.ExecContext(dctx, "DROP TABLE IF EXISTS "+quoteIdent(o.table))
		switch {
		case derr == nil:
		case err == nil:
			err = fmt.Errorf("bench: dropping table %s at the end: %w", o.table, derr)
		default: // say it beside the error that stopped the bench
			fmt.Fprintf(stderr, "fdbqueue: bench: dropping table %s at the end: %v\n", o.table, derr)
		}
	}()
	b := newBencher(ctx, db, o, stdout, stderr, faults)
	if procs != nil {
		b.procs = procs
		procs.tasks = &b.tasksChecked
	}
	err = b.run()
	if err == nil || errors.Is(err, errSelfCheck) {
		// The checks' verdict closes the output, as pgbench's count of
		// failed transactions does; other errors stopped the bench
		// before a verdict.
		if cerr := b.rep.checks(b.tasksChecked.Load(), err); cerr != nil && err == nil {
			err = cerr
		}
	}
	return err
}

// checkBenchTable refuses to go on if the bench's table exists and --force
// was not given.
func checkBenchTable(ctx context.Context, db *sql.DB, o *benchOptions) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	tables, err := fdbqueue.Tables(ctx, conn)
	if err != nil {
		return err
	}
	for _, t := range tables {
		if strings.EqualFold(t.Name, o.table) && !o.force {
			return fmt.Errorf("%w: %s in %s; the bench would drop it and it was not created by this bench: give --table NAME for another name, or --force to let the bench drop this table", ErrBenchTableExists, t.Name, o.dsn)
		}
	}
	return nil
}
