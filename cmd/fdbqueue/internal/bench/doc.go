// Package bench is fdbqueue bench, which measures a database as pgbench
// measures PostgreSQL (cmd/fdbqueue hands it fdbqueue bench ARGS): the
// throughput and latency of pushes, pops, leases and waits on any DSN, or
// with --model on a modeled FoundationDB cluster (internal/fdbmodel), with
// each statement's waits and read requests; with --processes, from several
// processes sharing a file: database. Every run checks what it did: no
// task lost or taken twice. Its help (fdbqueue bench --help) and
// docs/shell.md describe it for users; docs/benchmarks.md holds its
// figures.
//
// # Files
//
//	bench.go     the flags and the help, Main, and the run that owns the bench's table
//	run.go       the runner: the table, its statements, the fills, the runs in order
//	workers.go   concurrent clients on their own connections, bounded by rows and time
//	push.go      the push workload
//	pop.go       the pop workload
//	latency.go   the latency workload (get_task): one pop's cost by queue size
//	lease.go     the lease workloads, and the run whose consumers die holding leases
//	wait.go      the wait workloads: FOR POP WAIT against a consumer that polls
//	fsync.go     the fsync probe: what one durable commit costs at least on the disk
//	model.go     --model: the in-memory engine on a modeled FoundationDB cluster
//	procs.go     --processes: the parent's side, and the conversation with its children
//	child.go     --processes: a child's side
//	takeover.go  --processes: how long the others stand still when the serving process dies
//	check.go     the self-checks, and the faults that show each can fail
//	report.go    the results: JSON lines, or a table that grows a row a run
//	progress.go  the progress line of long fills on a terminal
package bench
