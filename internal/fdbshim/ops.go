//go:build fdb

// A transaction's operations on the embedded engine, with the checks and
// error codes of the real client (ReadYourWrites.actor.cpp) around them.

package fdbshim

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"
	"unsafe"

	"github.com/fdbqueue/fdbqueue/kv"
)

// bgContext bounds the embedded engine's transactions: never done. The
// test double cancels and times out transactions itself, as the client
// library does.
var bgContext = context.Background()

// maxKey is the end of the user key space (normalKeys.end): reads and writes
// at or after it fail with key_outside_legal_range.
var maxKey = []byte{0xff}

// Mutation types (fdb.options).
const (
	mutAdd             = 2
	mutAnd             = 6
	mutOr              = 7
	mutXor             = 8
	mutAppendIfFits    = 9
	mutMax             = 12
	mutMin             = 13
	mutVersionstampKey = 14
	mutVersionstampVal = 15
	mutByteMin         = 16
	mutByteMax         = 17
	mutCompareAndClear = 20
)

// Conflict range types.
const (
	conflictRead  = 0
	conflictWrite = 1
)

// writeKeyCode is what RYW's set, clear and atomic_op check of a key.
func writeKeyCode(key []byte) int {
	if bytes.Compare(key, maxKey) >= 0 {
		return errKeyOutsideLegalRange
	}
	if len(key) > keySizeLimit {
		return errKeyTooLarge
	}
	return 0
}

func (t *txn) set(key, value []byte) {
	if isMetadataVersionKey(key) {
		t.mutate(errClientInvalidOperation, 0, nil) // RYW's set: bumps only
		return
	}
	code := writeKeyCode(key)
	if code == 0 && len(value) > valueSizeLimit {
		code = errValueTooLarge
	}
	t.mutate(code, int64(len(key)+len(value)), func(a *attempt) {
		if tx, c := a.tx(); c == 0 {
			tx.Set(key, value)
			a.cache.wrote(key, value, true)
			a.clock.wrote(key, kv.KeyAfter(key))
		}
	})
}

func (t *txn) clear(key []byte) {
	if bytes.Compare(key, maxKey) >= 0 {
		t.mutate(errKeyOutsideLegalRange, 0, nil)
		return
	}
	if len(key) > keySizeLimit {
		t.mutate(0, 0, nil) // no such key can exist: nothing to clear
		return
	}
	t.mutate(0, int64(2*len(key)), func(a *attempt) {
		if tx, c := a.tx(); c == 0 {
			tx.Clear(key)
			a.cache.wrote(key, nil, false)
			a.clock.wrote(key, kv.KeyAfter(key))
		}
	})
}

func (t *txn) clearRange(begin, end []byte) {
	code := 0
	switch {
	case bytes.Compare(begin, end) > 0:
		code = errInvertedRange
	case bytes.Compare(begin, maxKey) > 0 || bytes.Compare(end, maxKey) > 0:
		code = errKeyOutsideLegalRange
	}
	t.mutate(code, int64(len(begin)+len(end)), func(a *attempt) {
		if bytes.Equal(begin, end) {
			return
		}
		if tx, c := a.tx(); c == 0 {
			tx.ClearRange(kv.Range{Begin: begin, End: end})
			a.cache.cleared(begin, end)
			a.clock.wrote(begin, end)
		}
	})
}

func (t *txn) atomicOp(key, param []byte, op int) {
	if isMetadataVersionKey(key) {
		t.bumpMetadataVersion(param, op)
		return
	}
	code := writeKeyCode(key)
	switch {
	case code != 0:
	case op == mutVersionstampKey || op == mutVersionstampVal:
		// The key is checked after the versionstamp's substitution in the
		// real client; here they are refused anyway.
		code = errUnsupportedOperation
	case op != mutAdd && op != mutCompareAndClear && op != mutAnd && op != mutOr && op != mutXor &&
		op != mutAppendIfFits && op != mutMax && op != mutMin && op != mutByteMin && op != mutByteMax:
		code = errInvalidMutationType
	case len(param) > valueSizeLimit:
		code = errValueTooLarge
	case op == mutAdd && len(param) != 8, op != mutAdd && op != mutCompareAndClear && op != mutAnd:
		// The embedded engine has ADD of 64-bit integers, BIT_AND and
		// COMPARE_AND_CLEAR only.
		code = errUnsupportedOperation
	}
	t.mutate(code, int64(len(key)+len(param)), func(a *attempt) {
		tx, c := a.tx()
		if c != 0 {
			return
		}
		switch op {
		case mutAdd:
			tx.Add(key, int64(binary.LittleEndian.Uint64(param)))
		case mutAnd:
			tx.BitAnd(key, param)
		default:
			tx.CompareAndClear(key, param)
		}
		a.cache.unknown(key)
	})
}

func (t *txn) addConflictRange(begin, end []byte, kind int) int {
	if bytes.Compare(begin, end) > 0 {
		return errInvertedRange // the real client's one synchronous check
	}
	code := 0
	switch {
	case kind != conflictRead && kind != conflictWrite:
		code = errInvalidOption
	case kind == conflictRead && isMetadataVersionKey(begin) && bytes.Equal(end, kv.KeyAfter(begin)):
		// The one system key RYW's addReadConflictRange lets through:
		// it conflicts with the bumps (see metadata.go).
	case bytes.Compare(begin, maxKey) > 0 || bytes.Compare(end, maxKey) > 0:
		code = errKeyOutsideLegalRange
	case kind == conflictWrite && !bytes.Equal(begin, end) && !bytes.Equal(end, kv.KeyAfter(begin)):
		// The engine has write conflict keys only (AddWriteConflictKey):
		// a range of one key, as the bindings' AddWriteConflictKey sends,
		// is exact; a longer range is refused.
		code = errUnsupportedOperation
	}
	t.mutateAs(code, int64(len(begin)+len(end)), func(a *attempt) {
		if bytes.Equal(begin, end) {
			return
		}
		tx, c := a.tx()
		if c != 0 {
			return
		}
		if kind == conflictRead {
			a.addReadConflict(begin, end)
			return
		}
		_ = tx.AddWriteConflictKey(begin)
	}, kind != conflictRead)
	return 0
}

// get is fdb_transaction_get.
func (t *txn) get(key []byte, snapshot bool) unsafe.Pointer {
	f := newFuture(kindValue)
	t.issue(f, func(a *attempt) {
		if isMetadataVersionKey(key) {
			a.getMetadataVersion(f, snapshot)
			return
		}
		if bytes.Compare(key, maxKey) >= 0 {
			a.finish(f, func() { f.fail(errKeyOutsideLegalRange) })
			return
		}
		if len(key) > keySizeLimit {
			// No such key can exist; no read, no conflict.
			a.finish(f, func() { f.bytes(nil, false) })
			return
		}
		tx, code := a.tx()
		if code != 0 {
			a.finish(f, func() { f.fail(code) })
			return
		}
		a.clock.read(f, f.issued, key, kv.KeyAfter(key))
		v, present, conflicts, err := a.cache.get(tx, key, snapshot)
		if err != nil {
			a.finish(f, func() { f.fail(codeOf(err)) })
			return
		}
		a.readConflicts = append(a.readConflicts, conflicts...)
		a.finish(f, func() { f.bytes(v, present) })
	})
	return f.ptr()
}

// getReadVersion is fdb_transaction_get_read_version.
func (t *txn) getReadVersion() unsafe.Pointer {
	f := newFuture(kindInt64)
	t.issue(f, func(a *attempt) {
		a.clock.readVersion(f, f.issued)
		tx, code := a.tx()
		if code != 0 {
			a.finish(f, func() { f.fail(code) })
			return
		}
		v, err := tx.GetReadVersion()
		if err != nil {
			a.finish(f, func() { f.fail(codeOf(err)) })
			return
		}
		a.finish(f, func() { f.int64(v) })
	})
	return f.ptr()
}

// selector is a key selector with orEqual removed (KeySelectorRef::
// removeOrEqual): the offset-th key at or after key for offset >= 1, the
// (1-offset)-th key before key for offset <= 0.
type selector struct {
	key    []byte
	offset int
}

func newSelector(key []byte, orEqual bool, offset int) selector {
	if orEqual {
		key = kv.KeyAfter(key)
	}
	return selector{key: key, offset: offset}
}

// resolve finds the key a selector names, reading as the transaction
// (serializably unless snapshot): "" before the first key, \xff after the
// last. As a range's bound (bound), the first key at or after k is k.
func resolve(tx kv.ReadTransaction, s selector, bound bool) ([]byte, error) {
	if bound && s.offset == 1 {
		return s.key, nil
	}
	key := bytes.Clone(s.key)
	if bytes.Compare(key, maxKey) > 0 {
		key = bytes.Clone(maxKey)
	}
	if s.offset >= 1 {
		rows, err := kv.Collect(tx.GetRange(kv.Range{Begin: key, End: maxKey}, kv.RangeOptions{Limit: s.offset}))
		if err != nil {
			return nil, err
		}
		if len(rows) < s.offset {
			return bytes.Clone(maxKey), nil
		}
		return rows[s.offset-1].Key, nil
	}
	n := 1 - s.offset
	rows, err := kv.Collect(tx.GetRange(kv.Range{Begin: []byte{}, End: key}, kv.RangeOptions{Limit: n, Reverse: true}))
	if err != nil {
		return nil, err
	}
	if len(rows) < n {
		return []byte{}, nil
	}
	return rows[n-1].Key, nil
}

func view(tx kv.Transaction, snapshot bool) kv.ReadTransaction {
	if snapshot {
		return tx.Snapshot()
	}
	return tx
}

// getKey is fdb_transaction_get_key.
func (t *txn) getKey(key []byte, orEqual bool, offset int, snapshot bool) unsafe.Pointer {
	f := newFuture(kindKey)
	sel := newSelector(key, orEqual, offset)
	t.issue(f, func(a *attempt) {
		if bytes.Compare(key, maxKey) > 0 {
			a.finish(f, func() { f.fail(errKeyOutsideLegalRange) })
			return
		}
		tx, code := a.tx()
		if code != 0 {
			a.finish(f, func() { f.fail(code) })
			return
		}
		a.clock.read(f, f.issued, key, kv.KeyAfter(key))
		k, err := resolve(view(tx, snapshot), sel, false)
		if err != nil {
			a.finish(f, func() { f.fail(codeOf(err)) })
			return
		}
		a.finish(f, func() { f.bytes(k, true) })
	})
	return f.ptr()
}

// Streaming modes (fdb.options; the C values).
const (
	modeWantAll  = -2
	modeIterator = -1
	modeExact    = 0
	modeSerial   = 4
)

// The bytes a batch may hold, per mode, and the iterator mode's progression
// (fdb_c.cpp, validate_and_update_parameters).
var (
	modeBytes            = [...]int{unlimited, 256, 1000, 4096, 80000}
	iterationProgression = [...]int{4096, 6144, 9216, 13824, 20736, 31104, 46656, 69984, 80000, 120000}
)

const unlimited = -1

// rangeLimits validates a range read's parameters as the C API does and
// returns the row and byte limits of the batch (unlimited: -1).
func rangeLimits(limit, targetBytes, mode, iteration int) (rows, bytesLimit, code int) {
	rows, bytesLimit = limit, targetBytes
	if rows == 0 {
		rows = unlimited
	}
	if bytesLimit == 0 {
		bytesLimit = unlimited
	}
	if rows == unlimited && bytesLimit == unlimited && mode == modeExact {
		return 0, 0, errExactModeWithoutLimits
	}
	if mode == modeWantAll {
		mode = modeSerial
	}
	var mb int
	switch {
	case mode == modeIterator:
		if iteration <= 0 {
			return 0, 0, errClientInvalidOperation
		}
		mb = iterationProgression[min(iteration, len(iterationProgression))-1]
	case mode >= 0 && mode <= modeSerial:
		mb = modeBytes[mode]
	default:
		return 0, 0, errClientInvalidOperation
	}
	if bytesLimit == unlimited {
		bytesLimit = mb
	} else if mb != unlimited {
		bytesLimit = min(bytesLimit, mb)
	}
	return rows, bytesLimit, 0
}

// getRange is fdb_transaction_get_range: one batch, as the real client
// serves it. A batch holds rows until the row limit, or until the byte
// limit is reached (8 bytes plus key and value per row, at least one row);
// a serializable read conflicts with what the batch covered: up to its last
// row, or the whole range when the batch reached the end.
func (t *txn) getRange(b, e selector, bKey, eKey []byte, limit, targetBytes, mode, iteration int, snapshot, reverse bool) unsafe.Pointer {
	rows, byteLimit, code := rangeLimits(limit, targetBytes, mode, iteration)
	if code != 0 {
		return failed(kindKeyValues, code)
	}
	f := newFuture(kindKeyValues)
	t.issue(f, func(a *attempt) {
		switch {
		case bytes.Compare(bKey, maxKey) > 0 || bytes.Compare(eKey, maxKey) > 0:
			a.finish(f, func() { f.fail(errKeyOutsideLegalRange) })
			return
		case rows < unlimited || byteLimit < unlimited:
			a.finish(f, func() { f.fail(errRangeLimitsInvalid) })
			return
		case b.offset >= e.offset && bytes.Compare(b.key, e.key) >= 0:
			// An inverted range reads nothing, with no error.
			a.finish(f, func() { f.keyValues(nil, false) })
			return
		}
		tx, code := a.tx()
		if code != 0 {
			a.finish(f, func() { f.fail(code) })
			return
		}
		out, more, lo, hi, err := readBatch(view(tx, snapshot), b, e, rows, byteLimit, reverse)
		if err != nil {
			a.finish(f, func() { f.fail(codeOf(err)) })
			return
		}
		a.clock.read(f, f.issued, lo, hi)
		a.finish(f, func() { f.keyValues(out, more) })
	})
	return f.ptr()
}

func readBatch(tx kv.ReadTransaction, b, e selector, rows, byteLimit int, reverse bool) (out []kv.KeyValue, more bool, lo, hi []byte, err error) {
	begin, err := resolve(tx, b, true)
	if err != nil {
		return nil, false, nil, nil, err
	}
	end, err := resolve(tx, e, true)
	if err != nil {
		return nil, false, nil, nil, err
	}
	if bytes.Compare(begin, end) >= 0 {
		return nil, false, begin, begin, nil
	}
	out, more, err = readRows(tx, begin, end, rows, byteLimit, reverse)
	// The span the batch covers: to its last row if it stopped short.
	lo, hi = begin, end
	if n := len(out); more && n > 0 && reverse {
		lo = out[n-1].Key
	} else if more && n > 0 {
		hi = kv.KeyAfter(out[n-1].Key)
	}
	return out, more, lo, hi, err
}

// readRows reads a batch's rows of [begin, end).
func readRows(tx kv.ReadTransaction, begin, end []byte, rows, byteLimit int, reverse bool) ([]kv.KeyValue, bool, error) {
	opts := kv.RangeOptions{Reverse: reverse}
	if rows != unlimited {
		opts.Limit = rows
	}
	it := tx.GetRange(kv.Range{Begin: begin, End: end}, opts)
	var out []kv.KeyValue
	used := 0
	for {
		if rows != unlimited && len(out) == rows || byteLimit != unlimited && used >= byteLimit {
			return out, true, nil
		}
		if !it.Next() {
			break
		}
		r := it.KeyValue()
		out = append(out, kv.KeyValue{Key: slices.Clone(r.Key), Value: slices.Clone(r.Value)})
		used += 8 + len(r.Key) + len(r.Value)
	}
	if err := it.Err(); err != nil {
		return nil, false, err
	}
	return out, false, nil
}

// commit is fdb_transaction_commit.
func (t *txn) commit() unsafe.Pointer {
	f := newFuture(kindVoid)
	t.mu.Lock()
	a := t.a
	code := t.space.db.deferredErr()
	if code == 0 {
		code = a.deferred
	}
	killCommit := false
	if code == 0 && a.commitStarted {
		code, killCommit = errUsedDuringCommit, a.resetErr == 0
	}
	if code == 0 {
		code = a.resetErr
	}
	if code == 0 {
		a.commitStarted = true
		a.outstanding[f] = struct{}{}
		watches := a.watches
		a.watches = nil
		a.clock.commit(f, a.wrote)
		a.exec.run(func() { t.runCommit(a, f, watches) })
	}
	t.unlock()
	if killCommit {
		t.kill(a, errUsedDuringCommit)
	}
	if code != 0 {
		f.fail(code)
		f.done()
	}
	return f.ptr()
}

func (t *txn) runCommit(a *attempt, f *future, watches []*watch) {
	code := 0
	if !a.dead() {
		code = a.commitOnEngine(watches)
	}
	if cl := t.space.db.cl; code != 0 && cl != nil {
		cl.countCommitError(code)
	}
	if code == errTransactionTimedOut {
		// The engine's injected timeout stands for the client's: the
		// attempt is over, as when the time bomb goes off.
		t.kill(a, code)
	}
	// The watches first: a failed commit's watches stop counting against
	// max_watches before its caller learns of the failure.
	for _, w := range watches {
		w.committed(a, code)
	}
	a.finishErr(f, code, func() { f.succeed() })
}

func (a *attempt) commitOnEngine(watches []*watch) int {
	a.t.mu.Lock()
	wrote := a.wrote || len(watches) > 0
	a.t.unlock()
	if a.readErr != 0 {
		// RYW's commit first waits for the attempt's reads, and fails
		// with the error of one that failed.
		return a.readErr
	}
	tx, code := a.tx()
	if code == errTenantNotFound && !wrote {
		return 0 // a read-only commit asks the cluster nothing
	}
	if code != 0 {
		return code
	}
	if err := a.flushReadConflicts(tx); err != nil {
		return codeOf(err)
	}
	if err := tx.Commit(); err != nil {
		return codeOf(err)
	}
	return 0
}

// addReadConflict records an explicit read conflict range. It reaches the
// engine at commit: the engine would take its read version when given the
// range, while the real client takes it at the first read, or at commit for
// a transaction that reads nothing, so that a write committed in between
// does not conflict.
func (a *attempt) addReadConflict(begin, end []byte) {
	a.readConflicts = append(a.readConflicts, kv.Range{Begin: begin, End: end})
}

func (a *attempt) flushReadConflicts(tx kv.Transaction) error {
	for _, r := range a.readConflicts {
		if err := tx.AddReadConflictRange(r); err != nil {
			return err
		}
	}
	a.readConflicts = nil
	return nil
}

// approximateSize is fdb_transaction_get_approximate_size: the bytes of the
// mutations and conflict ranges issued (the real client's estimate adds
// per-mutation overheads).
func (t *txn) approximateSize() unsafe.Pointer {
	f := newFuture(kindInt64)
	t.issue(f, func(a *attempt) {
		a.t.mu.Lock()
		size := a.size
		a.t.unlock()
		a.finish(f, func() { f.int64(size) })
	})
	return f.ptr()
}

// estimatedRangeSize is fdb_transaction_get_estimated_range_size_bytes:
// exact here (the real client samples), of the database as committed.
func (t *txn) estimatedRangeSize(begin, end []byte) unsafe.Pointer {
	f := newFuture(kindInt64)
	t.issue(f, func(a *attempt) {
		var n int64
		code := a.scanCommitted(begin, end, func(r kv.KeyValue) { n += int64(len(r.Key) + len(r.Value)) })
		a.finishErr(f, code, func() { f.int64(n) })
	})
	return f.ptr()
}

// rangeSplitPoints is fdb_transaction_get_range_split_points: begin, the
// keys where chunkSize bytes have accumulated, and end.
func (t *txn) rangeSplitPoints(begin, end []byte, chunk int64) unsafe.Pointer {
	f := newFuture(kindKeys)
	t.issue(f, func(a *attempt) {
		points := [][]byte{begin}
		var n int64
		code := a.scanCommitted(begin, end, func(r kv.KeyValue) {
			if chunk > 0 && n >= chunk {
				points = append(points, slices.Clone(r.Key))
				n = 0
			}
			n += int64(len(r.Key) + len(r.Value))
		})
		points = append(points, end)
		a.finishErr(f, code, func() { f.keys(points) })
	})
	return f.ptr()
}

// scanCommitted reads [begin, end) as committed, outside the transaction.
func (a *attempt) scanCommitted(begin, end []byte, fn func(kv.KeyValue)) int {
	db, code := a.t.space.store()
	if code != 0 {
		return code
	}
	if db == nil {
		<-a.done
		return errTransactionCancelled
	}
	err := db.ReadTransact(bgContext, func(tr kv.ReadTransaction) error {
		it := tr.Snapshot().GetRange(kv.Range{Begin: begin, End: end}, kv.RangeOptions{Mode: kv.StreamingModeWantAll})
		for it.Next() {
			fn(it.KeyValue())
		}
		return it.Err()
	})
	if err != nil {
		return codeOf(err)
	}
	return 0
}
