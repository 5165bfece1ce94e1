// Package fdbmodel models what a statement costs on a FoundationDB cluster:
// its sequential waits. On a cluster every read the client blocks on is a
// network round trip, so a statement's latency is the number of waits it
// makes one after another (for the read version, for reads, for the
// commit) times a round trip, and reads issued together cost one wait.
//
// Wrap puts any kv.Database (the embedded engine, in tests and benchmarks)
// on a modeled cluster: the wrapped engine holds the data and answers
// every operation, while the model counts the waits exactly as the
// FoundationDB engine (kv/fdb, over the official Go bindings and libfdb_c)
// would incur them, and can sleep each for timed runs. Each attempt
// reports its Counts to the Collector its context carries (WithCollector).
//
// # The model
//
//   - The read version: an attempt's first request asks for it, 1 GRV
//     wait; an attempt that writes without reading asks for it at commit
//     (NativeAPI's commit gets a read version when it has none).
//   - A Get is 1 read wait; a GetMany is 1 for all its keys (kv/fdb issues
//     every read before it waits for one).
//   - The metadata version (kv.MetadataVersion) comes with the read
//     version: reading it is the GRV wait if no request asked for the read
//     version yet, and no read. A bump (kv.BumpMetadataVersion) is a write.
//   - A future (kv.GetAsync, kv.GetRangeAsync) is a request sent when it
//     is issued and waited for at its Get: futures issued together are 1
//     wait. A range future's first batch is requested when it is issued,
//     in its streaming mode; its Get requests each later batch as the one
//     before arrives, in want-all's batches (all the rows left, for a
//     limit), each a wait. A write into its range waits for those first,
//     and so does the commit for a serializable one (its read conflict is
//     its result's). See async.go.
//   - The read-your-writes cache: a read of keys the attempt already read
//     (a Get, a GetMany, a range read's span), set, cleared or cleared a
//     range over costs nothing. Atomic operations (Add, CompareAndClear)
//     do not make a key known: reading it needs its value from the
//     cluster. A range batch is free only if the cache knows its whole
//     span.
//   - A range read comes batch by batch, each batch a request, with
//     libfdb_c's byte budgets (4,096, 6,144, 9,216, ... bytes in the
//     iterator mode) and the storage server's count of a row (32 bytes and
//     its key and value); after a batch that spent its budget the client
//     asks for another, even if it turns out empty. See iter.go.
//   - The commit: 1 commit wait if the attempt wrote (a mutation, or a
//     write conflict key); a read-only commit is free. It first waits for
//     every read still in flight, as FoundationDB's does.
//   - A retry (OnError) starts from nothing: a new read version, an empty
//     cache.
//
// Overlap is exact: each attempt has a logical clock, a request is issued
// at the current time and answered a latency later (a read, a read latency
// after the read version), and a wait happens only when the caller blocks
// on an answer not yet in. Requests in flight together are one wait: the
// futures issued before a wait, the keys of a GetMany, and the first
// batches of range reads, requested when GetRange is called (iterators
// opened together overlap).
//
// What the model leaves out: shard boundaries (a batch crossing one is
// several requests), location-cache misses, queueing and latency variance
// (every wait is its constant), GRV batching, throttling, the client's one
// network thread, and a range read that the cache knows only part of
// (FoundationDB reads only the unknown segments, and may split the batch
// there; the model counts one request for the batch). Conflicts, and so
// retries, are the wrapped engine's: the embedded engine's checks leave
// out a set of the value a key held, which FoundationDB's count.
//
// # What it implements
//
// Only what the FoundationDB engine implements: kv.Database, and kv.GetMany,
// kv.GetAsync, kv.GetRangeAsync and kv.MetadataVersion on transactions and
// their snapshots, kv.BumpMetadataVersion on transactions (the wrapped
// engine keeps the metadata version: wrap one that has it, as the embedded
// engine).
// The embedded engine's fast paths are hidden: no kv.CertainCommits (so the
// executor keeps receipts and never combines statements, as on
// FoundationDB), no kv.CommitQueuer, and no First (kv.First is a range read
// of one row). mirror_test.go checks that the method sets are kv/fdb's,
// its futures' included: when kv/fdb gains another way to issue reads
// together, mirror it here, with its requests issued at once
// (attempt.issue) and waited for when the caller takes the answer
// (attempt.wait), or the model overstates the waits.
//
// # Why an internal package
//
// It is an instrument of the project's tests, benchmarks and tools, not an
// API: it must change with kv/fdb (and the issue that made it is about to
// change kv), and users measure their cluster, not a model of it. It sits
// beside internal/fdbshim, the test double of libfdb_c, which models
// FoundationDB's semantics where this package models its costs.
package fdbmodel
