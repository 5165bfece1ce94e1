// Package kv is the transaction contract that every fdbqueue engine
// implements: FoundationDB's semantics, as the official Go bindings expose
// them (database.go, transaction.go, snapshot.go, range.go in
// github.com/apple/foundationdb/bindings/go/src/fdb), with reads
// synchronous unless issued as futures (GetAsync, GetRangeAsync), and a
// context.Context bounding every transaction.
//
// This package, and the configuration and Open functions of its engines
// (kv/embedded, kv/fdb), are supported API for tools that open an engine
// themselves and hand it to driver.NewConnectorOn. A program that only
// runs SQL needs none of it: it uses package driver through database/sql.
//
// # Transactions
//
// A transaction reads a consistent snapshot of the database as of its read
// version, and buffers its writes until Commit. Reads see the transaction's
// own writes (read-your-writes). Commit fails with ErrNotCommitted (1020) if
// any key or range the transaction read serializably was written by a
// transaction that committed after the read version. An engine may leave
// out a write that set a key to the value it already held, which no
// serializable order needs to count: the embedded engine does, FoundationDB
// does not; a transaction that must make the readers of a key it rewrites
// unchanged conflict adds a write conflict key (AddWriteConflictKey). Reads
// through Snapshot() record no read conflicts. Blind writes and atomic operations (Add,
// BitAnd, CompareAndClear) never cause a conflict for the transaction doing them.
//
// # Retry contract
//
// Database.Transact runs its function in a transaction and commits it,
// retrying retryable errors (IsRetryable) with backoff, bounded by the context
// and a retry limit. The function may therefore run several times. It must
// have no effects outside the transaction (or only idempotent ones), and must
// not keep iterators or the transaction after it returns.
//
// # Reads in flight together
//
// On FoundationDB every read the client waits for is a network round trip,
// and reads issued before the first wait are answered together, in about
// one. GetAsync and GetRangeAsync issue a read and return its Future at
// once; Future.Get waits for the answer. A step that needs several
// independent reads issues them all, then waits:
//
//	heads := make([]kv.FutureRange, len(cells))
//	for i, c := range cells {
//		heads[i] = kv.GetRangeAsync(tr, c, kv.RangeOptions{Limit: 1})
//	}
//	for i, f := range heads {
//		rows, err := f.Get()
//		...
//	}
//
// A future's read is the synchronous read (Get, or Collect of GetRange),
// issued when the function is called:
//
//   - It sees the transaction's writes made before the call, and none made
//     after it, as FoundationDB's read-your-writes does ("read operations
//     do see the effects of previous write operations on the same
//     transaction", its API docs): a read takes a snapshot of the
//     transaction's write map when it is issued
//     (fdbclient/ReadYourWrites.cpp, readWithConflictRangeRYW, builds its
//     RYWIterator then, over fdbclient/WriteMap.h's iterator, which
//     "represents a snapshot (will be unaffected by future writes)").
//   - Its read conflict is the synchronous read's: serializable through the
//     transaction, none through Snapshot(); for a range, what the whole
//     result covered (up to its last key when Limit cut it short, the
//     whole range otherwise). It is recorded whether or not Get is ever
//     called, as FoundationDB records a read's conflict range when its
//     answer arrives (readWithConflictRangeRYW), and its commit first waits
//     for the reads in flight ("commit will wait for outstanding reads to
//     return", its API docs; ReadYourWrites.cpp's commit waits for
//     ryw->reading, to which every read is added).
//   - A range future's result is the whole read, honouring Limit and
//     Reverse; Mode sizes its first batch on FoundationDB, whose later
//     batches are as large as it allows (the bindings' GetSliceWithError).
//   - Its errors come from Get: those the read would have returned when it
//     was issued (a key in the system key space, an inverted range,
//     transaction_too_old, a transaction that had ended), and, as from an
//     iterator's Next, client_invalid_operation (2000) once the transaction
//     committed, transaction_cancelled (1025) once it was cancelled, reset
//     by OnError (a future of an earlier attempt), or its context is done.
//   - A future never waited for costs its request and nothing more: it
//     holds no lock, needs no release, and its answer is dropped with it.
//     A commit waits for the reads still in flight, as FoundationDB's does.
//
// On FoundationDB (kv/fdb) reads are issued through the bindings' futures,
// and nothing waits before Get; a write into the range of a range future
// whose later batches are not in yet first waits for them, which keeps the
// result as of the call. The embedded engine answers at the call
// (AnswersAtIssue): a point or one-row read takes the synchronous read's
// own path, a longer range reads the store's batches as an iterator
// would, and a future is a small struct whose rows live in scratch the
// transaction reuses. GetMany is GetAsync of each key, then a wait for
// each, where the engine has no path of its own.
//
// # The metadata version
//
// MetadataVersion reads a version that every transaction changing a
// layer's metadata bumps (BumpMetadataVersion), so that a client can cache
// metadata and check it at no cost: on FoundationDB it is the
// \xff/metadataVersion key, which comes with the read version. It is
// optional: an engine without it answers ErrNoMetadataVersion.
//
// # Limits
//
// Engines enforce FoundationDB's limits with its error codes: keys up to
// 10,000 bytes (2102), values up to 100,000 bytes (2103), a transaction's
// mutations and conflict ranges up to 10,000,000 bytes (2101), and a
// transaction's reads up to 5 seconds after its read version (1007).
//
// # Byte slices
//
// Slices passed to Set and friends are copied. Slices returned by reads must
// not be modified by the caller.
package kv

import (
	"bytes"
	"context"
	"encoding/binary"
	"time"
)

// Limits, as FoundationDB enforces them.
const (
	MaxKeySize         = 10_000
	MaxValueSize       = 100_000
	MaxTransactionSize = 10_000_000
	// MaxTransactionAge is how long after its read version a transaction
	// may still read and commit (FoundationDB's MVCC window).
	MaxTransactionAge = 5 * time.Second
)

// KeyValue is one key and its value.
type KeyValue struct {
	Key, Value []byte
}

// Range is the half-open key range [Begin, End).
type Range struct {
	Begin, End []byte
}

// PrefixRange returns the range of every key that starts with prefix.
// An empty prefix gives the whole user key space, [ "", "\xff" ).
func PrefixRange(prefix []byte) Range {
	if len(prefix) == 0 {
		return Range{Begin: []byte{}, End: []byte{0xff}}
	}
	return Range{Begin: clone(prefix), End: Strinc(prefix)}
}

// Contains reports whether key is in r.
func (r Range) Contains(key []byte) bool {
	return bytes.Compare(r.Begin, key) <= 0 && bytes.Compare(key, r.End) < 0
}

// CommonPrefix returns the length of the longest common prefix of a and b.
func CommonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// Abbrev returns the first 8 bytes of k as a big-endian number, k padded
// with zeros: for keys that share a prefix, their Abbrev after it keeps
// their order or makes them equal, so that comparing two numbers sorts
// most keys, and a key that lies between two others has its Abbrev
// between theirs.
func Abbrev(k []byte) uint64 {
	if len(k) >= 8 {
		return binary.BigEndian.Uint64(k)
	}
	var buf [8]byte
	copy(buf[:], k)
	return binary.BigEndian.Uint64(buf[:])
}

// KeyAfter returns the first key after k in key order (k + 0x00).
func KeyAfter(k []byte) []byte {
	out := make([]byte, len(k)+1)
	copy(out, k)
	return out
}

// Strinc returns the first key that does not have prefix as a prefix: prefix
// with trailing 0xff bytes removed and its last byte incremented. It panics
// if prefix is empty or all 0xff, like the bindings' fdb.Strinc errors.
func Strinc(prefix []byte) []byte {
	// Not bytes.TrimRight: it reads its cutset as UTF-8, and would trim
	// any invalid byte (0xfd, say) along with 0xff.
	p := prefix
	for len(p) > 0 && p[len(p)-1] == 0xff {
		p = p[:len(p)-1]
	}
	if len(p) == 0 {
		panic("kv: Strinc of an empty or all-0xff key")
	}
	out := clone(p)
	out[len(out)-1]++
	return out
}

func clone(b []byte) []byte {
	return append(make([]byte, 0, len(b)), b...)
}

// StreamingMode tells an engine how to batch a range read; it only affects
// performance, never results. The names follow FoundationDB's.
type StreamingMode int

const (
	// StreamingModeIterator starts with small batches and grows them: the
	// right choice when the caller may stop early.
	StreamingModeIterator StreamingMode = iota
	// StreamingModeWantAll fetches large batches: the caller reads everything.
	StreamingModeWantAll
	// StreamingModeSmall fetches small batches.
	StreamingModeSmall
)

// RangeOptions control a range read.
type RangeOptions struct {
	// Limit is the most key-values returned; 0 means no limit.
	Limit int
	// Reverse returns key-values from the end of the range backwards.
	Reverse bool
	// Mode is a batching hint.
	Mode StreamingMode
}

// Iterator streams the key-values of a range read. It is not safe for
// concurrent use, and is valid only while its transaction is.
//
//	it := tr.GetRange(r, kv.RangeOptions{})
//	for it.Next() {
//		kv := it.KeyValue()
//	}
//	if err := it.Err(); err != nil { ... }
type Iterator interface {
	// Next advances to the next key-value and reports whether there is one.
	Next() bool
	// KeyValue returns the current key-value.
	KeyValue() KeyValue
	// Err returns the error that stopped the iteration, if any.
	Err() error
}

// ReadTransaction is the read half of a transaction.
type ReadTransaction interface {
	// Get returns the value of key, or nil if the key is absent.
	Get(key []byte) ([]byte, error)
	// GetRange reads the key-values in r in key order (or reverse order).
	GetRange(r Range, opts RangeOptions) Iterator
	// GetReadVersion returns the version the transaction reads at.
	GetReadVersion() (int64, error)
	// Snapshot returns a view of the same transaction whose reads add no
	// read-conflict ranges. It still sees the transaction's own writes.
	Snapshot() ReadTransaction
	// Context returns the context bounding the transaction.
	Context() context.Context
}

// Transaction reads and writes. Writes are buffered until Commit; errors in
// them (a key too large, say) are reported by Commit, as FoundationDB does.
// The writes copy their arguments, as FoundationDB's client does: the caller
// may reuse a key's or a value's bytes once the call returns.
type Transaction interface {
	ReadTransaction
	// Set writes value at key.
	Set(key, value []byte)
	// Clear removes key.
	Clear(key []byte)
	// ClearRange removes every key in r.
	ClearRange(r Range)
	// Add atomically adds delta to the little-endian 64-bit integer at key
	// (FoundationDB's ADD mutation with an 8-byte parameter); an absent key
	// counts as zero. It adds no read conflict.
	Add(key []byte, delta int64)
	// BitAnd atomically replaces the value at key with its bitwise AND
	// with param (FoundationDB's BIT_AND): the value is first cut, or
	// extended with zero bytes, to param's length, and an absent key
	// takes param itself. It adds no read conflict.
	BitAnd(key, param []byte)
	// CompareAndClear atomically clears key if its value equals value
	// (FoundationDB's COMPARE_AND_CLEAR). It adds no read conflict.
	CompareAndClear(key, value []byte)
	// AddReadConflictKey makes the transaction conflict with writes to key.
	AddReadConflictKey(key []byte) error
	// AddReadConflictRange makes the transaction conflict with writes in r.
	AddReadConflictRange(r Range) error
	// AddWriteConflictKey makes transactions that read key conflict with
	// this one, as if it had written key.
	AddWriteConflictKey(key []byte) error
	// Watch returns a watch on key, which fires once when the key's value
	// changes from the value this transaction reads (at its read version,
	// or as this transaction wrote it before the call), as FoundationDB's
	// watches do. It is armed when the transaction commits; it then fails
	// with the commit's error if the commit fails, and with
	// transaction_cancelled (1025) if the transaction is reset or cancelled
	// first. A write of the same value does not fire it. Watching adds a
	// read conflict on key. A database holds at most MaxWatches watches
	// that have not fired; past that the watch fails with too_many_watches
	// (1032). A watch outlives its transaction: cancel the ones no longer
	// needed.
	Watch(key []byte) Watch
	// Commit applies the transaction's writes atomically, or fails.
	Commit() error
	// Cancel abandons the transaction; later calls fail.
	Cancel()
	// OnError decides what to do after err: for a retryable error within
	// the retry limit and the context, it waits a backoff, resets the
	// transaction for another attempt, and returns nil; otherwise it
	// returns err.
	OnError(err error) error
}

// MaxWatches is how many watches that have not fired a database holds at
// once (FoundationDB's default).
const MaxWatches = 10_000

// Watch is a watch on a key (Transaction.Watch): a one-shot notification
// that the key's value changed. Safe for concurrent use.
type Watch interface {
	// Wait blocks until the watch fires (nil) or fails (its error), or
	// until ctx is done (ctx's error; the watch stays armed).
	Wait(ctx context.Context) error
	// Done is closed when the watch fires or fails; Err then says which.
	Done() <-chan struct{}
	// Err returns nil while the watch is pending or after it fired, and its
	// error once it failed.
	Err() error
	// Cancel disarms the watch: a pending watch fails with
	// operation_cancelled (1101) and stops counting against MaxWatches.
	Cancel()
}

// WaitWatch is Watch.Wait for an engine's watch: it blocks until done is
// closed, returning err() then, or until ctx is done.
func WaitWatch(ctx context.Context, done <-chan struct{}, err func() error) error {
	select {
	case <-done:
		return err()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Database is an engine's handle on one database.
type Database interface {
	// Transact runs fn in a transaction and commits it, retrying as
	// OnError allows. See the package doc for the retry contract.
	Transact(ctx context.Context, fn func(Transaction) error) error
	// ReadTransact runs fn in a transaction that is not committed,
	// retrying as OnError allows.
	ReadTransact(ctx context.Context, fn func(ReadTransaction) error) error
	// CreateTransaction opens a transaction that the caller commits or
	// cancels. ctx bounds its whole life.
	CreateTransaction(ctx context.Context) (Transaction, error)
	// Close releases the handle.
	Close() error
}

// CertainCommits is implemented by a Database that can say its commits
// are certain: none ends in a retryable commit_unknown_result (1021), so
// no retry ever follows a commit that may have been applied. Callers may
// then skip the records that only make such retries exactly-once. The
// embedded engine's commits are certain unless faults are injected;
// FoundationDB's are not.
type CertainCommits interface {
	CertainCommits() bool
}

// CommitsCertain reports whether db's commits are certain (see
// CertainCommits).
func CommitsCertain(db Database) bool {
	c, ok := db.(CertainCommits)
	return ok && c.CertainCommits()
}

// CommitQueuer is implemented by a Transaction that can say when a commit
// has passed its checks and waits only to be made durable (an fsync of the
// log it shares with other commits): from then on it succeeds unless the
// disk fails, and it costs no CPU. The embedded engine's file databases
// call the function; other engines never do.
type CommitQueuer interface {
	// OnCommitQueued sets the function the transaction's commits call once
	// queued for the disk, in every later attempt too (nil: none). It is
	// called on the committing goroutine, before Commit returns.
	OnCommitQueued(queued func())
}

// Transact is the retry loop that engines use to implement
// Database.Transact: run fn, commit, and on error ask OnError whether to try
// again.
func Transact(ctx context.Context, db Database, fn func(Transaction) error) error {
	return retry(ctx, db, fn, true)
}

// ReadTransact is the retry loop for read-only transactions: as Transact,
// without the commit.
func ReadTransact(ctx context.Context, db Database, fn func(ReadTransaction) error) error {
	return retry(ctx, db, func(tr Transaction) error { return fn(tr) }, false)
}

func retry(ctx context.Context, db Database, fn func(Transaction) error, commit bool) error {
	tr, err := db.CreateTransaction(ctx)
	if err != nil {
		return err
	}
	defer tr.Cancel()
	for {
		err = fn(tr)
		if err == nil {
			if !commit {
				return nil
			}
			if err = tr.Commit(); err == nil {
				return nil
			}
		}
		if err = tr.OnError(err); err != nil {
			return err
		}
	}
}

// Collect reads a whole iterator into a slice.
func Collect(it Iterator) ([]KeyValue, error) {
	var out []KeyValue
	for it.Next() {
		out = append(out, it.KeyValue())
	}
	return out, it.Err()
}

// getManyer is implemented by transactions that read several keys for
// less than one Get each: the embedded engine reads them under one hold of
// its lock, FoundationDB's issues every read before it waits for one. It
// must behave exactly as a Get of each key, read conflicts included.
type getManyer interface {
	GetMany(keys [][]byte) ([][]byte, error)
}

// GetMany returns the value of each of keys, nil for an absent key, as a
// Get of each would. It is GetAsync of every key, then a wait for each,
// unless the transaction has a path of its own for it.
func GetMany(tr ReadTransaction, keys [][]byte) ([][]byte, error) {
	if g, ok := tr.(getManyer); ok {
		return g.GetMany(keys)
	}
	fs := make([]FutureValue, len(keys))
	for i, k := range keys {
		fs[i] = GetAsync(tr, k)
	}
	vals := make([][]byte, len(keys))
	for i, f := range fs {
		v, err := f.Get()
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	return vals, nil
}

// firster is implemented by transactions with a cheaper path for a range
// read of one key (a queue's head) than a general iterator. It must behave
// exactly as GetRange with Limit 1, read-conflict range included.
type firster interface {
	First(r Range, reverse bool) (KeyValue, bool, error)
}

// First returns the first key-value of r in the given direction, or ok false
// if r is empty.
func First(tr ReadTransaction, r Range, reverse bool) (kv KeyValue, ok bool, err error) {
	if f, isFirster := tr.(firster); isFirster {
		return f.First(r, reverse)
	}
	it := tr.GetRange(r, RangeOptions{Limit: 1, Reverse: reverse})
	if it.Next() {
		return it.KeyValue(), true, nil
	}
	return KeyValue{}, false, it.Err()
}
