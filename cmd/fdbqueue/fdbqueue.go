// Command fdbqueue is the SQL shell for fdbqueue: it runs scripts and
// statements against any DSN.
//
//	fdbqueue [flags] [DSN]
//	go run ./cmd/fdbqueue -f examples/quickstart.sql
//
// Run fdbqueue --help for the flags.
//
// fdbqueue bench measures a database, as pgbench does (fdbqueue bench
// --help): the throughput and latency of pushes, pops and leases. With
// --model it runs on a modeled FoundationDB cluster, the in-memory engine
// behind internal/fdbmodel, which sleeps each wait a statement makes for
// its modeled latency (--model-grv, --model-read, --model-commit; the
// report's header prints them), and reports each statement's waits (p50,
// p99, max) and read requests beside its throughput and latency:
//
//	fdbqueue bench memory:
//	fdbqueue bench --model --bench push,pop memory:
//	fdbqueue bench --model --model-commit 5ms --bench latency memory:
//
// fdbqueue ui serves the dashboard of a database (fdbqueue ui --help;
// docs/dashboard.md):
//
//	fdbqueue ui file:/var/lib/app/queues --listen 127.0.0.1:8080
//
// This package only dispatches: the shell is package
// cmd/fdbqueue/internal/shell, fdbqueue bench package
// cmd/fdbqueue/internal/bench, fdbqueue ui package
// cmd/fdbqueue/internal/uicmd, each with its flags, its help and its
// tests.
package main

import (
	"context"
	"io"
	"os"

	"github.com/fdbqueue/fdbqueue/cmd/fdbqueue/internal/bench"
	"github.com/fdbqueue/fdbqueue/cmd/fdbqueue/internal/shell"
	"github.com/fdbqueue/fdbqueue/cmd/fdbqueue/internal/uicmd"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is the command: fdbqueue bench ARGS measures a database, fdbqueue
// ui ARGS serves its dashboard, anything else is the shell's. It returns
// the exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "bench" {
		return bench.Main(ctx, args[1:], stdin, stdout, stderr)
	}
	if len(args) > 0 && args[0] == "ui" {
		return uicmd.Main(ctx, args[1:], stdin, stdout, stderr)
	}
	return shell.Main(ctx, args, stdin, stdout, stderr)
}
