// Package shared opens a file database that the processes of one host
// share: a web process that enqueues, worker processes that take the work,
// an operator's shell, a cron job, all on the same directory at once.
//
// # Design: the first opener serves
//
// One process at a time holds the directory's lock (see package
// embedded): it runs the engine, as a lone process does, and serves it to
// the others on a Unix socket in the directory (fdbqueue.sock), through
// package kv/remote. The others are its clients: each of their
// transactions runs in the serving process, as a FoundationDB client's
// transactions run on the cluster, with the read version, reads and commit
// as requests. The statement layers above were built for FoundationDB: they
// issue a statement's reads together (3 to 6 waits a statement), and make
// every autocommit statement exactly-once when a commit's outcome is
// unknown. So a client gets the full dialect with the same guarantees:
// serializable transactions, sql.Tx, WAIT woken by a push from any process
// (a watch in the serving process, answered on the socket), leases that
// expire for all, DDL seen by all (the catalog's metadata version).
//
// When the serving process dies (or closes its last handle), its clients
// lose their connection: a commit in flight ends in commit_unknown_result
// (the statement layers retry it exactly once, with its receipt), every
// other request in a retryable error. The first client to find the socket
// dead and the lock free opens the engine, which recovers the log as any
// open does (a torn tail cut), and serves; the others connect to it.
// Nothing acknowledged is lost: a commit is acknowledged once it is in the
// log on disk, whichever process wrote it.
//
// A serving process keeps its socket: no other process can serve while it
// holds the lock, so when serving on the socket ends other than by Close
// (an Accept that fails for good), or the socket's file is removed (a
// cleaner of temporary files) or replaced, it listens again on a fresh one
// (its connections go on), retrying with backoff; it checks the file
// every second. It makes none in a directory that replaced its own under
// the same name.
//
// # Pops run in the serving process
//
// A client's autocommit pops and leases (FOR POP, FOR LEASE, with or
// without WAIT) do not run as transactions over the socket: exec forwards
// each, whole, to the serving process (Forward, over kv/remote's calls),
// whose executor runs it as one of its own (ServeCalls): in its claims,
// combined with its own pops, with a watch of its own engine for WAIT.
// Pops of different processes then skip each other's rows instead of
// conflicting on the head. The client's statement token goes with it, and
// the serving process records the receipt, so a statement whose
// connection was lost is called again, on the process that took over,
// and returns what the first call popped. Transactions (sql.Tx, BEGIN)
// and the other statements stay client-side kv transactions.
//
// The first writable handle with a handler answers the calls (a read-only
// handle's executor could not pop). The handler that runs a statement runs
// one call of its token at a time; a handle closed while its handler runs
// a call cancels it, and no call is answered, by another handle or with
// ErrNoCalls (the caller then runs it itself), until it returned: a call
// made again after a lost connection would run beside it.
//
// A process's own transactions skip the socket while it serves. Its
// commits are certain (no receipts) only if it has served since it opened
// the database; one that took over keeps the connection for the
// transactions that started before.
//
// The other design, every process keeping its own copy of the database
// and appending to a log they share under a file lock (SQLite's, LMDB's),
// was measured against this one; docs/design.md has the figures and the
// reasons.
//
// # Read-only handles
//
// A read-only handle (mode=ro) refuses commits that write, and reads the
// database other processes write. A process must serve when it is the
// first, even a read-only one: it opens the engine to write (so a torn
// tail is repaired, and checkpoints are taken) and only its handle refuses
// writes. A process that may not write the directory opens it read-only as
// package embedded does, alone with other readers.
//
// # Limits
//
// The directory must be on a local filesystem: a lock and a socket are one
// host's, so Open refuses NFS, SMB and other network filesystems. The
// processes must run the same fdbqueue version (the handshake refuses a
// mismatch, naming both). The serving process's settings are the
// database's: how its commits reach the disk (sync) is the first
// opener's, whatever a client asked for, as it is for a second open in
// one process.
//
// # Files
//
//	shared.go      Open, the process's share in a database: serving, connecting, taking over
//	readonly.go    a read-only handle's transactions on another process's database
//	socket.go      the socket's address, listening and dialing
//	fs_linux.go    refusing network filesystems (fs_other.go: nothing to check)
package shared
