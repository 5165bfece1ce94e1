// Package kvtest is the contract suite every kv engine runs: key order,
// limits and reverse reads, snapshot versus serializable reads and their
// conflicts, read-your-writes, atomic operations under concurrency,
// FoundationDB's size limits and the 5-second transaction limit, each
// failing with FoundationDB's error code, watches, reads in flight together
// (futures), and the metadata version.
//
//	func TestContract(t *testing.T) {
//		kvtest.Run(t, func(t *testing.T) kvtest.Instance { ... })
//	}
//
// # Files
//
//	kvtest.go     Instance, Run (every test, by name) and the helpers the tests share
//	reads.go      key order, range limits, reverse and streaming reads, read-your-writes,
//	              kv.First, kv.GetMany, range reads open together
//	conflicts.go  snapshot and serializable reads, the conflict ranges they record,
//	              explicit conflict ranges, commits that never conflict
//	writes.go     buffers the caller may reuse, atomic operations, compare-and-clear,
//	              range clears
//	limits.go     key, value and transaction sizes, and the 5-second transaction limit
//	lifecycle.go  Transact's retries, cancellation, use after the end; the error codes
//	watch.go      watches: firing, arming at commit, own writes, their end, their bound
//	async.go      reads in flight together (futures)
//	metadata.go   the metadata version
package kvtest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// Instance is a fresh, empty database for one test.
type Instance struct {
	DB kv.Database
	// Advance moves the engine's clock forward. Nil means the engine runs
	// on real time, and the test sleeps instead.
	Advance func(time.Duration)
	// MaxWatches is the engine's bound on watches that have not fired;
	// 0 means kv.MaxWatches.
	MaxWatches int
}

// Run runs the contract suite. open must return an empty database that no
// other test uses; its tests run in parallel.
func Run(t *testing.T, open func(t *testing.T) Instance) {
	tests := []struct {
		name string
		fn   func(t *testing.T, in Instance)
	}{
		{"KeyOrder", testKeyOrder},
		{"RangeLimitReverse", testRangeLimitReverse},
		{"RangeStreaming", testRangeStreaming},
		{"ReadYourWrites", testReadYourWrites},
		{"ReadYourWritesRange", testReadYourWritesRange},
		{"SnapshotIsolation", testSnapshotIsolation},
		{"SerializableReadConflicts", testSerializableReadConflicts},
		{"SnapshotReadNoConflict", testSnapshotReadNoConflict},
		{"RangeBuffersReusable", testRangeBuffersReusable},
		{"WriteBuffersReusable", testWriteBuffersReusable},
		{"FirstIsRangeLimitOne", testFirst},
		{"GetManyIsGetEach", testGetMany},
		{"RangeConflictOnlyWhatWasRead", testRangeConflictOnlyWhatWasRead},
		{"ExplicitConflictRanges", testExplicitConflictRanges},
		{"ReadOnlyCommitNeverConflicts", testReadOnlyCommit},
		{"BlindWritesDoNotConflict", testBlindWrites},
		{"AtomicAddConcurrent", testAtomicAddConcurrent},
		{"AtomicAddsInOneTransaction", testAtomicAddsInOneTransaction},
		{"CompareAndClear", testCompareAndClear},
		{"BitAnd", testBitAnd},
		{"BitAndSlots", testBitAndSlots},
		{"ClearRange", testClearRange},
		{"Limits", testLimits},
		{"TransactionTooOld", testTransactionTooOld},
		{"TransactRetriesConflicts", testTransactRetries},
		{"ContextCancellation", testContextCancellation},
		{"UseAfterCommitOrCancel", testUseAfterEnd},
		{"Errors", testErrors},
		{"IteratorsInterleaved", testIteratorsInterleaved},
		{"WatchFiresOnChange", testWatchFiresOnChange},
		{"WatchArmedAtCommit", testWatchArmedAtCommit},
		{"WatchOwnWrites", testWatchOwnWrites},
		{"WatchEndsWithItsTransaction", testWatchEndsWithItsTransaction},
		{"WatchLimit", testWatchLimit},
	}
	tests = append(tests, asyncTests...)
	tests = append(tests, metadataTests...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := open(t)
			t.Cleanup(func() { _ = in.DB.Close() })
			tc.fn(t, in)
		})
	}
}

var bg = context.Background()

func set(t *testing.T, db kv.Database, kvs ...string) {
	t.Helper()
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		for i := 0; i+1 < len(kvs); i += 2 {
			tr.Set([]byte(kvs[i]), []byte(kvs[i+1]))
		}
		return nil
	}))
}

func get(t *testing.T, db kv.Database, key string) []byte {
	t.Helper()
	var v []byte
	require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
		var err error
		v, err = tr.Get([]byte(key))
		return err
	}))
	return v
}

func keys(kvs []kv.KeyValue) []string {
	out := make([]string, len(kvs))
	for i, e := range kvs {
		out[i] = string(e.Key)
	}
	return out
}

func rangeKeys(t *testing.T, tr kv.ReadTransaction, b, e string, opts kv.RangeOptions) []string {
	t.Helper()
	kvs, err := kv.Collect(tr.GetRange(kv.Range{Begin: []byte(b), End: []byte(e)}, opts))
	require.NoError(t, err)
	return keys(kvs)
}

func newTr(t *testing.T, db kv.Database) kv.Transaction {
	t.Helper()
	tr, err := db.CreateTransaction(bg)
	require.NoError(t, err)
	t.Cleanup(tr.Cancel)
	return tr
}
