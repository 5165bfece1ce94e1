package shared

import (
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
)

// roTxn is a read-only handle's transaction on another process's
// database: writes are buffered as usual, so reads see them, and a commit
// that wrote fails with embedded.ErrReadOnly, as the engine's own
// read-only handles do. It passes the engine's optional reads on.
type roTxn struct {
	kv.Transaction
	wrote bool
}

func readOnly(tr kv.Transaction) kv.Transaction { return &roTxn{Transaction: tr} }

func (t *roTxn) Set(key, value []byte)       { t.wrote = true; t.Transaction.Set(key, value) }
func (t *roTxn) Clear(key []byte)            { t.wrote = true; t.Transaction.Clear(key) }
func (t *roTxn) ClearRange(r kv.Range)       { t.wrote = true; t.Transaction.ClearRange(r) }
func (t *roTxn) Add(key []byte, delta int64) { t.wrote = true; t.Transaction.Add(key, delta) }
func (t *roTxn) BitAnd(key, param []byte)    { t.wrote = true; t.Transaction.BitAnd(key, param) }
func (t *roTxn) CompareAndClear(key, value []byte) {
	t.wrote = true
	t.Transaction.CompareAndClear(key, value)
}

func (t *roTxn) AddWriteConflictKey(key []byte) error {
	t.wrote = true
	return t.Transaction.AddWriteConflictKey(key)
}

// AddWriteConflictRange and WriteConflictRanges are the transaction's
// (kv.AddWriteConflictRange): the queues make runs where the engine takes
// such ranges, and read them unless it never does.
func (t *roTxn) AddWriteConflictRange(r kv.Range) error {
	t.wrote = true
	return kv.AddWriteConflictRange(t.Transaction, r)
}

func (t *roTxn) WriteConflictRanges() kv.WriteConflictRangeSupport {
	return kv.WriteConflictRangesOf(t.Transaction)
}

// BumpMetadataVersion implements kv's optional metadata bump.
func (t *roTxn) BumpMetadataVersion() {
	if kv.BumpMetadataVersion(t.Transaction) {
		t.wrote = true
	}
}

// MetadataVersion implements kv's optional metadata version read.
func (t *roTxn) MetadataVersion() ([]byte, error) { return kv.MetadataVersion(t.Transaction) }

// GetAsync implements kv's optional futures.
func (t *roTxn) GetAsync(key []byte) kv.FutureValue { return kv.GetAsync(t.Transaction, key) }

// GetRangeAsync implements kv's optional futures.
func (t *roTxn) GetRangeAsync(r kv.Range, opts kv.RangeOptions) kv.FutureRange {
	return kv.GetRangeAsync(t.Transaction, r, opts)
}

// GetMany implements kv's optional batched point reads.
func (t *roTxn) GetMany(keys [][]byte) ([][]byte, error) { return kv.GetMany(t.Transaction, keys) }

// First implements kv's optional first-row read.
func (t *roTxn) First(r kv.Range, reverse bool) (kv.KeyValue, bool, error) {
	return kv.First(t.Transaction, r, reverse)
}

func (t *roTxn) Commit() error {
	if t.wrote {
		return embedded.ErrReadOnly
	}
	return t.Transaction.Commit()
}

func (t *roTxn) OnError(err error) error {
	if err = t.Transaction.OnError(err); err == nil {
		t.wrote = false
	}
	return err
}
