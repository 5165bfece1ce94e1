//go:build fdb

package fdb

import (
	"context"
	"encoding/binary"
	"errors"
	"time"

	"github.com/apple/foundationdb/bindings/go/src/fdb"

	"github.com/fdbqueue/fdbqueue/kv"
)

// txn is a FoundationDB transaction behind the kv contract. Like the
// bindings' transactions, it is not for concurrent use.
type txn struct {
	tr   fdb.Transaction
	ctx  context.Context
	root []byte
	snap *snapshot
	stop func() bool // unregisters the context's cancellation of tr

	deadline        time.Time // when FoundationDB's timeout fires; zero: never
	deadlineTimeout bool      // that timeout is the context's deadline

	state kv.TxnState
	// werr is the first invalid write of the attempt. The kv contract
	// reports it at Commit; it is never sent to FoundationDB, which would
	// also fail the attempt's next read.
	werr error
	// spans are the read-conflict ranges of the attempt's serializable
	// range reads, as far as they were consumed, added at Commit.
	spans []*span
	// attempt counts the resets (OnError): a future remembers the attempt
	// that issued it. pending are the attempt's range futures that may
	// not be resolved yet (async.go).
	attempt uint64
	pending []*rangeFuture
	// bumped is set once the attempt bumped the metadata version
	// (metadata.go).
	bumped bool
}

var _ kv.Transaction = (*txn)(nil)

func (t *txn) Context() context.Context { return t.ctx }

// check returns the error that stops any operation now. It runs before the
// operation is issued.
func (t *txn) check() error {
	return t.state.Err(t.ctx)
}

// key returns the FoundationDB key of a user key: the root prefix and k.
func (t *txn) key(k []byte) fdb.Key {
	out := make([]byte, len(t.root)+len(k))
	copy(out, t.root)
	copy(out[len(t.root):], k)
	return out
}

func truncate(b []byte) []byte {
	if len(b) > 32 {
		return b[:32]
	}
	return b
}

// checkReadKey refuses a key in the system key space (0xff...), which the
// root prefix would otherwise hide from FoundationDB's own check.
func checkReadKey(k []byte) error {
	if len(k) > 0 && k[0] == 0xff {
		return kv.Errorf(kv.CodeKeyOutsideLegalRange, "key %q is in the system key space (0xff...)", truncate(k))
	}
	return nil
}

// checkRange refuses a range no read may cover: inverted (where
// FoundationDB's range read returns nothing, the contract fails with
// inverted_range), or reaching into the system key space.
func checkRange(r kv.Range) error {
	if string(r.Begin) > string(r.End) {
		return kv.Errorf(kv.CodeInvertedRange, "range end %q precedes its begin %q", truncate(r.End), truncate(r.Begin))
	}
	if len(r.Begin) > 0 && r.Begin[0] == 0xff || string(r.End) > "\xff" {
		return kv.Errorf(kv.CodeKeyOutsideLegalRange, "range reaches into the system key space (0xff...)")
	}
	return nil
}

// checkWriteKey refuses what FoundationDB would refuse of the whole key.
func (t *txn) checkWriteKey(k []byte) error {
	if err := checkReadKey(k); err != nil {
		return err
	}
	if len(t.root)+len(k) > kv.MaxKeySize {
		return kv.Errorf(kv.CodeKeyTooLarge, "key of %d bytes under a root prefix of %d (limit %d in all)", len(k), len(t.root), kv.MaxKeySize)
	}
	return nil
}

func checkValue(v []byte) error {
	if len(v) > kv.MaxValueSize {
		return kv.Errorf(kv.CodeValueTooLarge, "value of %d bytes (limit %d)", len(v), kv.MaxValueSize)
	}
	return nil
}

// writable reports whether a write should reach FoundationDB: not after
// the transaction ended, nor after an invalid write (err) of this attempt,
// which it records.
func (t *txn) writable(errs ...error) bool {
	if t.state != kv.TxnActive || t.werr != nil {
		return false
	}
	for _, err := range errs {
		if err != nil {
			t.werr = err
			return false
		}
	}
	return true
}

func (t *txn) Get(key []byte) ([]byte, error) { return t.get(key, false) }

func (t *txn) get(key []byte, snapshot bool) ([]byte, error) {
	return t.getAsync(key, snapshot).Get()
}

// GetMany is kv.GetMany: every read is issued before the first is waited
// for, so the keys cost one round trip to the cluster, not one each.
func (t *txn) GetMany(keys [][]byte) ([][]byte, error) { return t.getMany(keys, false) }

func (t *txn) getMany(keys [][]byte, snapshot bool) ([][]byte, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	for _, key := range keys {
		if err := checkReadKey(key); err != nil {
			return nil, err
		}
	}
	fs := make([]*valueFuture, len(keys))
	for i, key := range keys {
		fs[i] = t.getAsync(key, snapshot)
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

func (t *txn) GetRange(r kv.Range, opts kv.RangeOptions) kv.Iterator {
	return t.getRange(r, opts, false)
}

func (t *txn) GetReadVersion() (int64, error) {
	if err := t.check(); err != nil {
		return 0, err
	}
	v, err := t.tr.GetReadVersion().Get()
	if err != nil {
		return 0, t.mapErr(err)
	}
	return v, nil
}

func (t *txn) Snapshot() kv.ReadTransaction { return t.snap }

// The writes first wait for the range futures in flight over their keys
// (settle): a read's result is as of its call.

func (t *txn) Set(key, value []byte) {
	if t.writable(t.checkWriteKey(key), checkValue(value)) {
		t.settle(key, nil)
		t.tr.Set(t.key(key), value)
	}
}

func (t *txn) Clear(key []byte) {
	if t.writable(t.checkWriteKey(key)) {
		t.settle(key, nil)
		t.tr.Clear(t.key(key))
	}
}

func (t *txn) ClearRange(r kv.Range) {
	if t.writable(checkRange(r)) && string(r.Begin) != string(r.End) {
		t.settle(r.Begin, r.End)
		t.tr.ClearRange(fdb.KeyRange{Begin: t.key(r.Begin), End: t.key(r.End)})
	}
}

func (t *txn) Add(key []byte, delta int64) {
	if t.writable(t.checkWriteKey(key)) {
		t.settle(key, nil)
		t.tr.Add(t.key(key), binary.LittleEndian.AppendUint64(nil, uint64(delta)))
	}
}

func (t *txn) BitAnd(key, param []byte) {
	if t.writable(t.checkWriteKey(key), checkValue(param)) {
		t.settle(key, nil)
		t.tr.BitAnd(t.key(key), param)
	}
}

func (t *txn) CompareAndClear(key, value []byte) {
	if t.writable(t.checkWriteKey(key), checkValue(value)) {
		t.settle(key, nil)
		t.tr.CompareAndClear(t.key(key), value)
	}
}

func (t *txn) AddReadConflictKey(key []byte) error {
	if err := t.check(); err != nil {
		return err
	}
	if err := checkReadKey(key); err != nil {
		return err
	}
	return t.mapErr(t.tr.AddReadConflictKey(t.key(key)))
}

func (t *txn) AddReadConflictRange(r kv.Range) error {
	if err := t.check(); err != nil {
		return err
	}
	if err := checkRange(r); err != nil {
		return err
	}
	return t.mapErr(t.tr.AddReadConflictRange(fdb.KeyRange{Begin: t.key(r.Begin), End: t.key(r.End)}))
}

func (t *txn) AddWriteConflictKey(key []byte) error {
	if err := t.check(); err != nil {
		return err
	}
	if err := checkReadKey(key); err != nil {
		return err
	}
	return t.mapErr(t.tr.AddWriteConflictKey(t.key(key)))
}

// Commit commits. A commit that fails with transaction_timed_out or
// transaction_cancelled (the context's deadline or cancellation, or
// Config.Timeout) may have been applied: FoundationDB stops waiting, not
// the commit already sent to the cluster. Such an error is reported as
// commit_unknown_result (kv.IsMaybeCommitted), joined with the cause.
func (t *txn) Commit() error {
	if err := t.check(); err != nil {
		return err
	}
	if t.werr != nil {
		return t.werr
	}
	t.resolvePending()
	for _, s := range t.spans {
		if string(s.begin) < string(s.end) {
			if err := t.tr.AddReadConflictRange(fdb.KeyRange{Begin: fdb.Key(s.begin), End: fdb.Key(s.end)}); err != nil {
				return t.mapErr(err)
			}
		}
	}
	t.spans = nil
	if !t.deadline.IsZero() && !time.Now().Before(t.deadline) {
		// The timeout fired: FoundationDB would fail the commit without
		// sending it.
		return t.mapErr(fdb.Error{Code: kv.CodeTransactionTimedOut})
	}
	err := t.tr.Commit().Get()
	if err == nil {
		t.state = kv.TxnCommitted
		t.stop()
		return nil
	}
	e := t.mapErr(err)
	var fe fdb.Error
	if errors.As(err, &fe) && (fe.Code == kv.CodeTransactionTimedOut || fe.Code == kv.CodeTransactionCancelled) {
		return kv.Join(kv.Errorf(kv.CodeCommitUnknownResult, "the transaction timed out or was cancelled while its commit was in flight: it may have been applied"), e)
	}
	return e
}

// Cancel cancels the transaction; later calls fail.
func (t *txn) Cancel() {
	t.stop()
	if t.state == kv.TxnActive {
		t.state = kv.TxnCancelled
		t.tr.Cancel()
	}
	t.pending = nil
}

// OnError hands err to FoundationDB's on_error (its retry rules, backoff,
// retry limit and timeout), and returns err itself when on_error does not
// retry, joined with what stopped it if that differs (a timeout, the
// context).
func (t *txn) OnError(err error) error {
	var ke *kv.Error
	if !errors.As(err, &ke) || t.state != kv.TxnActive {
		return err
	}
	if cerr := t.ctx.Err(); cerr != nil {
		return kv.Join(err, cerr)
	}
	ferr := t.tr.OnError(fdb.Error{Code: ke.Code}).Get()
	if ferr == nil {
		t.werr, t.spans, t.pending, t.bumped = nil, nil, nil, false
		t.attempt++
		return nil
	}
	if cerr := t.ctx.Err(); cerr != nil {
		return kv.Join(err, cerr)
	}
	var fe fdb.Error
	if errors.As(ferr, &fe) && fe.Code == ke.Code {
		return err
	}
	return kv.Join(err, t.mapErr(ferr))
}

// snapshot is the transaction's snapshot view.
type snapshot struct{ t *txn }

func (s *snapshot) Get(key []byte) ([]byte, error) { return s.t.get(key, true) }

func (s *snapshot) GetMany(keys [][]byte) ([][]byte, error) { return s.t.getMany(keys, true) }

func (s *snapshot) GetRange(r kv.Range, opts kv.RangeOptions) kv.Iterator {
	return s.t.getRange(r, opts, true)
}

func (s *snapshot) GetReadVersion() (int64, error) { return s.t.GetReadVersion() }
func (s *snapshot) Snapshot() kv.ReadTransaction   { return s }
func (s *snapshot) Context() context.Context       { return s.t.ctx }

// WriteConflictRanges implements kv.WriteConflictRangesOf: FoundationDB's
// databases are written by this adapter alone, which takes none (a
// caller writes keys instead).
func (t *txn) WriteConflictRanges() kv.WriteConflictRangeSupport {
	return kv.WriteConflictRangesNever
}

func (s *snapshot) WriteConflictRanges() kv.WriteConflictRangeSupport {
	return kv.WriteConflictRangesNever
}
