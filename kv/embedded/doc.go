// Package embedded is fdbqueue's in-process engine: FoundationDB's
// transaction semantics and limits (see package kv) without a server.
//
// # Storage and versions
//
// Data lives in one ordered B-tree (internal/btree: tidwall/btree, whose
// full nodes first move items into their left sibling, and whose searches
// compare 8 bytes of each key kept in its node) holding each
// key's newest version; the versions a reader may still need are chained
// behind it, newest first. A version is a record (version word, lengths,
// key, value) in a slab, a 32 KiB block of bytes the Go collector does not
// scan, shared by the records of consecutive commits: a key costs its bytes,
// about 8 bytes of record header and the tree's pointer, and no object of
// its own (slab.go). A slab is freed once none of its records is in use; a
// compaction moves the records still in use out of slabs that are mostly
// garbage (compact.go). A transaction reads as of
// its read version: the newest version of each key at or below it. Commits
// are serialised and take the next version number; readers take a read lock
// for the few microseconds of one read or one batch of a range read, so a
// long transaction never blocks commits (and vice versa).
//
// Concurrent commits are settled in groups (groups.go): each prepares its batch and
// write spans without a lock and queues; the first to find no leader leads,
// takes the store's lock once for the whole queue, checks and installs the
// commits in queue order (a conflict inside the group fails only the later
// commit), collects garbage once, and wakes the others. A leader settles at
// most a few groups after its own, then hands the lead to the oldest waiting
// commit. With more clients than cores this replaces a hand-off of the lock
// per commit with one per group.
//
// Old versions are pruned as soon as no live transaction can read them: the
// engine tracks the read versions in use (a queue in the order they were
// handed out, so sorted by version: its head is the oldest), and each commit
// prunes the keys written by earlier commits up to the oldest of them. A
// deleted key leaves the tree at that point, so the head of a queue that is
// popped a million times does not fill with tombstones (an LSM store's
// failure mode). A
// transaction older than 5 seconds no longer holds versions back: it fails
// with transaction_too_old (1007), as on FoundationDB.
//
// # Conflicts
//
// Each commit records what it wrote in a history: its keys, sorted, and its
// cleared ranges. A committing transaction is checked against the history
// entries newer than its read version; if any of its serializable read ranges
// overlaps one of their writes, it fails with not_committed (1020). The check
// searches the longer side for each item of the shorter one: a 100-row
// INSERT's hundreds of keys for each of a reader's few ranges, or a fit pop's
// dozens of read ranges for each of a few keys. History older than the oldest
// live read version is dropped. A set of a key to the value it already held
// leaves the key out of its commit's entry once the commit is installed: no
// reader of the key needs to conflict with it (unchanged.go). FoundationDB
// counts every write; the difference is conflicts that no serializable
// order needs.
//
// # Memory databases
//
// Open("") gives a private database; Open(name) gives the database of that
// name, shared by every Open of the name in the process until the last handle
// is closed.
//
// # File databases
//
// OpenFile keeps a database in a directory: a write-ahead log in segments
// (wal-*.log; a commit returns once its record is on disk) and a
// checkpoint (ckpt-*.db, the whole database as of a version). A checkpoint
// is written on its own goroutine, concurrently with commits, as of a
// pinned read version; once it is durable, the segments and checkpoints it
// makes redundant are deleted. Opening loads the newest checkpoint and
// replays the log after it.
//
// A checkpoint is due once the log has grown since the last one and the
// checkpoint and the log on disk reach the larger of
// FileConfig.CheckpointBytes (8 MiB by default) and 3 times the live data
// (the bytes of the records in use). The log counted is all of it on disk,
// whichever open wrote it: a program that opens the database, works a
// little and exits (a cron job, a worker that restarts) reaches a
// checkpoint as surely as one that stays open. Each open checks at once,
// and a log that earlier opens left over the threshold (a process killed
// before its checkpoint was done) is checkpointed while the open serves its
// first commits; Close checks against an eighth of CheckpointBytes, and
// waits for the checkpoint. So the directory holds at most about the
// larger of 8 MiB and 3 times the live data (while a checkpoint runs, also
// the new checkpoint and the log written meanwhile; while open, the MiB
// the log reserves ahead), after a clean Close the larger of 1 MiB and 3
// times the live data, and an open reads at most that. A checkpoint writes
// at most half a byte for each byte of log. A queue that only grows is not
// checkpointed: its log is its data, no larger than a checkpoint of it.
//
// # Files
//
//	db.go          Config, the store, DB handles and the registry of named databases
//	txn.go         transactions: reads with read-your-writes, writes, retries (OnError)
//	writes.go      a transaction's buffered writes and atomic operations: appended,
//	               sorted once when a read or the commit needs them
//	iter.go        range reads merging the tree with a transaction's writes;
//	               one-row reads (kv.First) without an iterator
//	heads.go       where the last seek for a one-row read's range went
//	clears.go      a transaction's range clears, as the union of the ranges
//	async.go       futures, answered when issued by the synchronous read's path
//	commit.go      Commit: limits, preparing the batch outside the lock
//	groups.go      commit groups: one leader checks and installs a queue of commits
//	yield.go       taking the store's lock: yield a few times before parking
//	conflict.go    write spans of recent commits against a commit's read spans
//	unchanged.go   sets of the value a key held, left out of the conflict checks
//	mvcc.go        version chains, deleted keys out of the tree, reads as of a
//	               version, installing a batch
//	tombs.go       range clears of many keys as tombstones, collected in batches
//	slab.go        records of versions in slabs, and the tree's handle on one
//	compact.go     moving records in use out of slabs that are mostly garbage
//	fingers.go     where recent commits' keys went, to insert next to them
//	prebuilt.go    a commit's records written by the client, before the lock
//	gc.go          read versions in use and pruning what none can read
//	record.go      a commit's batch and its log record encoding
//	watch.go       watches: compared at commit, fired by a change to the key
//	               once it is readable
//	metadata.go    the metadata version, handed out with the read version
//	certain.go     CertainCommits: this engine's commits are never unknown
//	file.go        file databases: open modes, recovery
//	wal.go         the write-ahead log: a lone commit writes it itself, else
//	               the writer goroutine, one fsync per group
//	segment.go     log segment files, their space written with zeros ahead;
//	               segment_*.go their write and sync calls on each OS
//	checkpoint.go  checkpoints: starting one, writing it, and dropping the log
//	               it makes redundant
//	lock.go        the directory lock; lock_*.go its call on each OS
//	lockcheck.go   a writer checks once a second that LOCK is still its own
//	faults.go      injected FoundationDB failures, for tests
package embedded
