// Package embedded is fdbqueue's in-process engine: FoundationDB's
// transaction semantics and limits (see package kv) without a server.
//
// # Storage and versions
//
// Data lives in one ordered B-tree (github.com/tidwall/btree) of keys, each
// carrying a short chain of versions, newest first. A transaction reads as of
// its read version: the newest version of each key at or below it. Commits
// are serialised by a mutex and take the next version number; readers take a
// read lock for the few microseconds of one read or one batch of a range read,
// so a long transaction never blocks commits (and vice versa).
//
// Old versions are pruned as soon as no live transaction can read them: the
// engine tracks the read versions in use, and each commit prunes the keys
// written by earlier commits up to the oldest of them. A deleted key leaves
// the tree at that point, so the head of a queue that is popped a million
// times does not fill with tombstones (an LSM store's failure mode). A
// transaction older than 5 seconds no longer holds versions back: it fails
// with transaction_too_old (1007), as on FoundationDB.
//
// # Conflicts
//
// Each commit records its write ranges in a history. A committing transaction
// is checked against the history entries newer than its read version; if any
// of its serializable read ranges overlaps one of their writes, it fails with
// not_committed (1020). History older than the oldest live read version is
// dropped.
//
// # Memory databases
//
// Open("") gives a private database; Open(name) gives the database of that
// name, shared by every Open of the name in the process until the last handle
// is closed.
//
// # Files
//
//	db.go          Config, the store, DB handles and the registry of named databases
//	txn.go         transactions: reads with read-your-writes, writes, retries (OnError)
//	writes.go      a transaction's buffered writes and atomic operations
//	iter.go        range reads merging the tree with a transaction's writes
//	commit.go      Commit: limits, the conflict check, apply or hand to the log
//	conflict.go    write spans of recent commits against a commit's read spans
//	mvcc.go        version chains, reads as of a version, installing a batch
//	gc.go          read versions in use and pruning what none can read
//	record.go      a commit's batch and its log record encoding
//	file.go        file databases: open modes, recovery
//	wal.go         the write-ahead log and its group-commit writer
//	checkpoint.go  checkpoints, and dropping the log they make redundant
//	lock.go        the directory lock; lock_*.go its call on each OS
//	faults.go      injected FoundationDB failures, for tests
package embedded
