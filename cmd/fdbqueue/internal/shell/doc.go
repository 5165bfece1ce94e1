// Package shell is fdbqueue's SQL shell, the command without a subcommand
// (cmd/fdbqueue hands it every invocation but fdbqueue bench): it runs a
// script (-f), statements (-c) or standard input against any DSN, or a
// prompt with line editing on a terminal, with psql's meta-commands (\dt,
// \d, \copy, \timing, \format, \i). Its help (fdbqueue --help) and
// docs/shell.md describe it for users.
//
// # Files
//
//	run.go          the flags and the help, and Main: a script's statements, or the prompt
//	shell.go        running statements (autocommit, or -1's one transaction) and printing results
//	split.go        cutting text into statements and meta-commands, with their lines
//	interactive.go  the prompt (history, Ctrl-C) and the meta-commands
//	format.go       the output formats: table, csv, json, jsonl
//	csv.go          \copy's CSV: PostgreSQL's COPY ... CSV, read and written
//	copy.go         \copy FROM: the command, and loading a file in batches
//	copy_to.go      \copy TO: a table's rows in queue order, in one transaction
//	backup.go       the pseudo-columns a backup writes and a restore loads
//	keyintr_*.go    the terminal's interrupt key during \copy ... FROM STDIN at the prompt
package shell
