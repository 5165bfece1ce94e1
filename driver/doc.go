// Package driver is fdbqueue's database/sql driver: FoundationDB's queue
// recipes (FIFO queues, priority queues, and task queues that pop the best
// task that fits a consumer's resources) behind a small SQL dialect.
//
//	import _ "github.com/fdbqueue/fdbqueue/driver"
//
//	db, err := sql.Open("fdbqueue", "memory:")
//
// This package is fdbqueue's product and its supported API for Go
// programs: the driver name, the DSNs and the dialect documented here,
// and what the package exports. Package kv and its engines'
// configuration are supported too, for tools that open an engine
// themselves (NewConnectorOn); queues, exec, parser and tuple are
// internal building blocks, exported but with no compatibility promise
// yet.
//
// # DSN
//
//   - memory: a private in-memory database, shared by the connections of one sql.DB;
//   - memory:NAME the in-memory database NAME, shared by every sql.Open of that
//     name in the process while one is open;
//   - file:DIR[?sync=full|none&mode=rwc|rw|ro] a durable database in directory
//     DIR: a commit returns once its log record is on disk (sync=none skips
//     fsync: a process crash loses nothing, a power loss may lose the last
//     commits). mode=rwc (the default) creates DIR, not its parents, when it
//     does not exist; mode=rw opens only an existing database, so a mistyped
//     path is an error; mode=ro opens an existing database read-only (writes
//     fail with embedded.ErrReadOnly). Every process of the host may open
//     DIR at once: the first serves it to the others (package kv/shared);
//   - fdb:[CLUSTER_FILE][?root=...&tenant=...&timeout=...&retry_limit=...]
//     a FoundationDB cluster (needs -tags fdb and the FoundationDB client;
//     see docs/foundationdb.md).
//
// Unknown parameters are errors (ErrDSN), never ignored.
//
// For tests only, memory: and file: DSNs take fault injection, so that a
// program's retry logic meets FoundationDB's failures on the embedded
// engine: fault_conflict, fault_unknown, fault_too_old and fault_timeout
// (rates from 0 to 1 of commits failing with not_committed,
// commit_unknown_result — applied or not —, transaction_too_old and
// transaction_timed_out), fault_seed, and commit_latency (a duration added
// to every commit). On a file: database several processes share, they act
// in the process that serves it. They carry no compatibility promise.
//
// # Dialect
//
//	CREATE TABLE [IF NOT EXISTS] t (col TYPE [NOT NULL] [DEFAULT v] [UNIQUE], ... [, INDEX name (col, ...)] [, UNIQUE [name] (col, ...) [FOR n unit]])
//	DROP TABLE [IF EXISTS] t
//	INSERT [IGNORE] INTO t [(cols)] VALUES (...), (...)
//	INSERT [IGNORE] INTO t [(cols)] SELECT cols FROM s [WHERE ...] [ORDER BY priority] LIMIT n [FOR POP]
//	SELECT cols|*|COUNT(*) FROM t [WHERE c op v AND ...] [ORDER BY priority [ASC|DESC]] [LIMIT n] [FOR POP | FOR LEASE seconds] [WAIT seconds]
//	DELETE FROM t [WHERE ...] [ORDER BY priority] [LIMIT n]
//	UPDATE t SET priority = v WHERE id = v
//	UPDATE t SET _visible_at = v|NULL [, _error = v] WHERE id = v [AND _lease = v]
//	BEGIN | START TRANSACTION, COMMIT, ROLLBACK
//	SELECT * | cols FROM fdbqueue_queues [WHERE name = v]
//
// fdbqueue_queues is a system table: per table, its rows by state
// (visible, delayed, leased, dead), the age of its oldest visible row and
// its counters, O(1) (docs/sql.md). Observe reports each statement's kind
// and duration to a function; package metrics exports both to Prometheus
// and OpenTelemetry.
//
// Types: INT/INTEGER/BIGINT (64-bit), DOUBLE/FLOAT/REAL (64-bit; NaN is
// refused), TEXT/VARCHAR(n) (valid UTF-8), BLOB/VARBINARY(n), BOOLEAN,
// TIMESTAMP/DATETIME (UTC, years 1 to 9999, to the nanosecond; Go's zero
// time.Time included). Options and types the dialect would not enforce
// (PRIMARY KEY, UNSIGNED, DECIMAL, ...) are refused by name. A column named priority makes the
// table a priority queue; without one it is a FIFO queue. INDEX (cpu, mem)
// names integer resource columns: WHERE cpu <= ? AND mem <= ? then finds the
// best task that fits through the fit index instead of a scan. UNIQUE (cols)
// keeps two rows from holding the same values there (leased and delayed rows
// included; FOR n SECOND|MINUTE|HOUR|DAY keeps them taken that long after the
// row is removed): a duplicate INSERT fails with ErrDuplicateKey (a
// *DuplicateKeyError, in a *RowError, names the row holding them), INSERT
// IGNORE skips it (docs/sql.md, "Unique keys"). Every row has
// an implicit id (an int64 assigned at insert unless the INSERT gives a positive
// one the table does not hold: ErrDuplicateID; returned by LastInsertId), usable in
// SELECT and WHERE; SELECT * lists the declared columns. FOR POP removes the
// rows the SELECT returns, in the same transaction; outside a transaction,
// the rows the program does not read (it closes them early, its context
// ends, or it closes the database) go back to their places, except one row
// whose Scan fails because the context ended right after Next (see
// rows.Next in rows.go). Placeholders are ? or
// :name (sql.Named), not both in one statement. Anything else is refused with
// an error that says what was not understood and what is supported.
//
// # Leases
//
// SELECT ... FOR LEASE d takes the rows FOR POP would but leaves them in the
// table, hidden for d seconds (or a time.Duration): the pseudo-columns
// _visible_at, _lease and _attempts (selectable like id) say until when, under
// which token, and how many times. DELETE FROM t WHERE id = ? AND _lease = ?
// acks (RowsAffected 0: the lease was lost); UPDATE t SET _visible_at = ...
// WHERE id = ? AND _lease = ? extends or releases. A lease that expires makes
// the row visible again at its original place. INSERT may set _visible_at
// to delay a row, and _attempts (0 or more; leases count on from there, as
// a restore from a backup needs). NOW() and NOW() +/- INTERVAL n
// SECOND|MINUTE|HOUR go where a TIMESTAMP does. A row stays hidden at most
// until 2262-04-11T23:47:16Z (queues.MaxVisibleAt): a later _visible_at, or
// a lease that would end later, is refused with ErrValue or ErrArgs.
//
// UPDATE ... SET _visible_at = NULL releases a row at once, or after the
// table's backoff for its _attempts (CREATE TABLE t (...)
// BACKOFF=EXPONENTIAL(first, max) or BACKOFF=CONSTANT(d), durations as n
// SECOND|MINUTE|HOUR), which also keeps a row whose lease expired away that
// much longer; an explicit _visible_at is exact. _error (TEXT, at most 1,000
// bytes, NULL until set) says why the last attempt failed, and moves to
// the dead letters with the row.
//
// CREATE TABLE t (...) MAX_ATTEMPTS=n also creates t_dead (unless it
// exists), a FIFO table with t's columns, FIFO even with a priority column. A
// FOR LEASE that would take a row already leased n times moves it to t_dead
// in the same transaction, keeping its id, values and _attempts, and goes on
// to the next row. An existing t_dead must have t's columns (names, types,
// in order); DROP TABLE t leaves t_dead, and a t_dead dropped meanwhile is
// created again by the next move, so a row is never lost. INSERT INTO t
// SELECT ... FROM t_dead ... LIMIT n FOR POP moves dead letters back (without
// FOR POP, copies them), in one transaction, exactly once.
//
// # Waiting for work
//
// SELECT ... FOR POP WAIT n waits up to n seconds (0 to 300, fractions
// allowed; WAIT ? takes a time.Duration or a number of seconds) for a row
// that fits, and returns it (up to LIMIT rows) as soon as a push commits
// one; after n seconds it returns no rows (sql.ErrNoRows from QueryRow).
// It waits on a watch of the table's pushes, not by polling, also ends when
// a leased or delayed row becomes due (FOR LEASE ... WAIT waits alike), and at
// once with the context's error when its context is cancelled, and with
// ErrNoTable when the table is dropped. WAIT 0 does not wait. WAIT is
// refused inside a transaction (ErrUnsupported): arming the watch needs a
// commit of its own.
//
// # Contention
//
// When many consumers pop one table at once, they all want its first row.
// A single-row FOR POP (or DELETE ... LIMIT 1) that conflicts retries as a
// spread pop: it takes one of the first k rows of the best priority, k
// doubling with each conflict up to 64 and decaying once pops stop
// conflicting. Priority order stays exact and every pop exactly-once; the
// order within one priority is relaxed while the contention lasts.
//
// # Transactions
//
// Each statement outside a transaction is one transaction, retried on
// conflicts. db.BeginTx (or BEGIN ... COMMIT on one sql.Conn) runs every
// statement until Commit in one serializable transaction that sees its own
// writes; ReadOnly is enforced. A commit that conflicts with another
// transaction fails, writes nothing, and IsRetryable(err) reports true;
// ExecuteTx runs a transaction function again on such errors. A COMMIT whose
// outcome is unknown (FoundationDB's commit_unknown_result) reports
// IsMaybeCommitted(err); autocommit statements retry through it exactly
// once, and report it only when their retry limit runs out. Transactions
// follow FoundationDB's limits: 5 seconds, 10,000,000 bytes of writes.
//
// # Tracing
//
// The driver runs wrapped by database/sql instrumentation such as
// github.com/XSAM/otelsql: otelsql.Open("fdbqueue", dsn, ...), or
// otelsql.OpenDB on NewConnector's connector (otelsql.Register cannot work:
// it opens the driver with an empty DSN). Tables reaches the connection
// under a wrapper that exposes it (Raw() or Unwrap() driver.Conn), and the
// parse cache ignores the comments before and after a statement, so that a
// traceparent appended by sqlcommenter, new on each call, is parsed once.
//
// # Errors
//
// Errors wrap documented values, all exported from this package (errors.go)
// and testable with errors.Is: ErrDSN, ErrEngine, ErrTxState, ErrReadOnly,
// ErrArgType for the connection, ErrNotFdbqueue for Tables on another
// driver's; ErrSyntax and ErrUnsupported for SQL;
// ErrNoTable, ErrValue, ErrArgs, ErrUnreadableRow and the others for
// statements (a bad row of an INSERT is a *RowError naming its position, for
// errors.As), and ErrPutBack from Rows.Close or DB.Close for popped rows not
// read that could not go back; ErrLocked, ErrNoDatabase, ErrReadOnlyDatabase and ErrFailed for
// file: databases; ErrTransactionTooLarge and ErrTransactionTooOld for
// FoundationDB's limits; kv.Error codes
// (FoundationDB's) underneath. The driver returns driver.ErrBadConn only for
// a closed connection, before anything ran, so database/sql never replays a
// push or a pop that may have happened.
package driver
