package queues

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// Exactly-once under commit_unknown_result (1021).
//
// FoundationDB's retry loop runs a transaction again after 1021, although
// the first attempt may have been applied. Two kinds of key make the queue
// operations safe to run twice: push markers, each also filed by expiry,
// and pop and count receipts, filed by expiry too (their keys are in
// layout.go's table, tags 7 to 10).
//
// A push writes its marker; a push that finds its own id's marker was
// already applied and does nothing (ids are random 63-bit values made
// outside the retry loop, so another push with the same id is, in
// practice, impossible). A pop that is given a token reads that token's
// receipt first: if an earlier attempt committed, it returns what that
// attempt popped instead of popping again. Markers and receipts expire
// after MarkerTTL; every push and every recorded pop clears up to two
// expired ones, with snapshot reads and blind clears, so cleanup never
// causes conflicts.

// MarkerTTL is how long push markers and pop receipts are kept: far longer
// than any retry of the operation that wrote them.
var MarkerTTL = 10 * time.Minute

// cleanupPerOp is how many expired markers or receipts each push or
// recorded pop clears.
const cleanupPerOp = 2

func expiry(now time.Time) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(now.Add(MarkerTTL).UnixNano()))
}

// markPushed records that the push of id was applied, and reports whether
// it already was (by an earlier attempt of the same push).
func (q *Queue) markPushed(tr kv.Transaction, id int64) (bool, error) {
	mk := q.key(tagMarks, id)
	v, err := tr.Get(mk)
	if err != nil || v != nil {
		return v != nil, err
	}
	now := time.Now()
	exp := expiry(now)
	tr.Set(mk, exp)
	tr.Set(q.key(tagMarkExpiry, int64(binary.BigEndian.Uint64(exp)), id), nil)
	return false, q.expire(tr, now, tagMarkExpiry, func(id int64) {
		tr.Clear(q.key(tagMarks, id))
	})
}

// expire clears up to cleanupPerOp entries of the expiry index tag whose
// time has passed, calling drop with each one's id or token.
func (q *Queue) expire(tr kv.Transaction, now time.Time, tag int, drop func(int64)) error {
	it := tr.Snapshot().GetRange(kv.PrefixRange(q.sub[tag]), kv.RangeOptions{Limit: cleanupPerOp})
	for it.Next() {
		k := it.KeyValue().Key
		var v [2]int64
		if err := decodeInts(k[len(q.sub[tag]):], v[:]); err != nil {
			return err
		}
		if v[0] > now.UnixNano() {
			break
		}
		tr.Clear(k)
		drop(v[1])
	}
	return it.Err()
}

// RecordCount records, under the operation token, that the operation
// removed n items, for an operation that reports only how many (a DELETE):
// CountReceipt returns it to a retry after commit_unknown_result.
func (q *Queue) RecordCount(tr kv.Transaction, token, n int64) error {
	now := time.Now()
	exp := expiry(now)
	tr.Set(q.key(tagReceipts, token), binary.LittleEndian.AppendUint64(nil, uint64(n)))
	tr.Set(q.key(tagReceiptExpiry, int64(binary.BigEndian.Uint64(exp)), token), nil)
	return q.expire(tr, now, tagReceiptExpiry, func(token int64) {
		tr.ClearRange(kv.PrefixRange(q.key(tagReceipts, token)))
	})
}

// CountReceipt returns the count an earlier, committed attempt of the
// operation token recorded with RecordCount, and whether there was one.
func (q *Queue) CountReceipt(tr kv.ReadTransaction, token int64) (int64, bool, error) {
	v, err := tr.Get(q.key(tagReceipts, token))
	if err != nil || v == nil {
		return 0, false, err
	}
	if len(v) != counterLen {
		return 0, false, fmt.Errorf("%w: count receipt of %d bytes", ErrCorrupt, len(v))
	}
	return int64(binary.LittleEndian.Uint64(v)), true, nil
}

// Receipt returns the items that an earlier, committed attempt of the pop
// operation token recorded with RecordReceipt, and whether there was one.
func (q *Queue) Receipt(tr kv.ReadTransaction, token int64) ([]Item, bool, error) {
	prefix := q.key(tagReceipts, token)
	it := tr.GetRange(kv.PrefixRange(prefix), kv.RangeOptions{})
	var items []Item
	for it.Next() {
		e := it.KeyValue()
		t, err := tuple.Unpack(e.Value)
		if err != nil || len(t) != 4 {
			return nil, false, fmt.Errorf("%w: unreadable receipt", ErrCorrupt)
		}
		id, _ := t[0].(int64)
		prio, _ := t[1].(int64)
		value, _ := t[3].([]byte)
		resT, _ := t[2].(tuple.Tuple)
		item := Item{ID: id, Priority: prio, Value: value}
		for _, r := range resT {
			n, _ := r.(int64)
			item.Resources = append(item.Resources, n)
		}
		items = append(items, item)
	}
	return items, len(items) > 0, it.Err()
}

// RecordReceipt records what the pop operation token popped in this
// transaction, so that a retry after commit_unknown_result can find it
// with Receipt instead of popping again. An empty pop needs no receipt (a
// retry that then finds an item may pop it), and writes nothing.
func (q *Queue) RecordReceipt(tr kv.Transaction, token int64, items []Item) error {
	if len(items) == 0 {
		return nil
	}
	now := time.Now()
	exp := expiry(now)
	for i, it := range items {
		res := tuple.Tuple{}
		for _, r := range it.Resources {
			res = append(res, r)
		}
		v, err := tuple.Tuple{it.ID, it.Priority, res, it.Value}.PackWithError()
		if err != nil {
			return err
		}
		tr.Set(q.key(tagReceipts, token, int64(i)), v)
	}
	tr.Set(q.key(tagReceiptExpiry, int64(binary.BigEndian.Uint64(exp)), token), nil)
	return q.expire(tr, now, tagReceiptExpiry, func(token int64) {
		tr.ClearRange(kv.PrefixRange(q.key(tagReceipts, token)))
	})
}
