// Package exec runs fdbqueue's SQL statements, each (or each sql.Tx's
// statements together) as one kv transaction over the queue recipes.
//
// This package is an internal building block of fdbqueue (for package
// driver and the fdbqueue shell), exported rather than kept under
// internal/. It is not supported API for Go programs: it has no
// compatibility promise yet and may change in any release. Programs use
// package driver through database/sql.
//
// # Catalog
//
// Table schemas live in the key space, so every client of a database sees
// the same tables. Every key is the root followed by a packed tuple (see
// keys.go):
//
//	root ("catalog", name)                -> schema (a packed tuple; name lower-cased)
//	root ("next_table_id")                -> the last table id handed out (little-endian int64)
//	root ("next_row_id")                  -> the first row id not reserved, and the token of the reservation that wrote it (two little-endian int64s; queues.IDs)
//	root ("t", table id, ...)             -> the table's queue (see package queues)
//	root ("ddl-receipts", expiry, token)  -> "": a CREATE or DROP TABLE was applied (see ddlDone)
//	root ("ddl", ...), root ("ddl-expiry", ...)  earlier versions' DDL receipts, cleared
//	root ("schedule", lower(name))       -> packed schedule: name, table, interval, first run, INSERT (schedule.go)
//	root ("schedule-next", lower(name))  -> the schedule's next run (8 bytes, ns): advanced by each firing
//
// Every statement takes its table's schema inside its own transaction,
// with the catalog key's read conflict, so a concurrent DROP TABLE
// conflicts with it instead of racing it: read, or from the executor's
// cache when the engine's metadata version (kv.MetadataVersion), which
// every CREATE and DROP TABLE bumps, is the one it was cached at, which
// costs no round trip on FoundationDB (catalog.table). Each CREATE TABLE
// takes a fresh table id, so a table dropped and created again never sees
// the old rows.
//
// # Rows
//
// A row is stored as the queue item's value: a packed tuple of every
// declared column, in order, followed by its _error when it has one
// (errtext.go). A column named priority makes the table a priority queue;
// INDEX (cols) names the resource columns of the fit index; UNIQUE (cols)
// a unique key, whose index lives under the table's queue too
// (unique.go). The implicit id column is the item's id.
//
// # Statements
//
// A statement is bound to its arguments once (bound, in stmt.go: with
// what stays the same across the retries of an autocommit statement, such
// as the ids of the rows it inserts), then run in a transaction, possibly
// several times; each run reads its table's schema (stmtCtx). A statement
// that reads or removes rows chooses its access path from its table,
// WHERE, ORDER BY, LIMIT and goal in one function, choosePlan (plan.go):
// a plan is a value (byID, fitPop, popN, scan, ...) that shows its
// parameters and runs itself. The plan cases of testdata/* pin which plan
// each statement takes, and the trace cases the keys it reads and writes.
//
// # Files
//
//	executor.go  Executor, Auto (autocommit: retries, tokens, spread pops) and Exec
//	wait.go      FOR POP WAIT: rounds of the pop, each empty one watching the push signal
//	combine.go   combining: concurrent single-row pops and small INSERTs of a table in one transaction
//	forward.go   a client process's autocommit pops and leases, run in the serving process under its token
//	putback.go   the rows of an autocommit pop the program never read, put back at their places
//	stmt.go      a statement bound to its arguments, and one run of it
//	ddl.go       CREATE and DROP TABLE, and their retry tokens
//	dead.go      MAX_ATTEMPTS: the dead-letter table, and moving rows there
//	backoff.go   BACKOFF: the delay after a failed attempt, its jitter, the table options' text
//	insert.go    INSERT
//	redrive.go   INSERT ... SELECT ... LIMIT n [FOR POP]: rows copied or moved between tables
//	unique.go    unique keys: their index, checked by INSERT, freed by every removal
//	schedule.go  CREATE/DROP/SHOW SCHEDULES, and FireDue: periodic inserts, exactly-once, leaderless
//	where.go     WHERE, ORDER BY and LIMIT bound to a table and arguments
//	plan.go      the access paths (plans), choosePlan, and how each runs
//	read.go      SELECT: projection, COUNT(*), pop receipts; row decoding
//	lease.go     FOR LEASE, and the plans that lease or see every row (leaseN, allRows)
//	pseudo.go    the pseudo-columns id, _visible_at, _lease, _attempts and _error
//	errtext.go   _error: kept with the row's values, its bound
//	stats.go     the system table fdbqueue_queues, and what exec counts for it
//	write.go     DELETE and UPDATE
//	catalog.go   table schemas and their cache
//	keys.go      every key exec builds under the root
//	convert.go   value conversion, encoding and comparison
//	errors.go    the errors exec returns
package exec
