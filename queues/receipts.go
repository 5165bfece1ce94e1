package queues

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// Exactly-once under commit_unknown_result (1021): the one mechanism.
//
// FoundationDB's retry loop runs a transaction again after 1021, although
// the first attempt may have been applied. An operation that must not
// apply twice gets a token made once, outside the retry loop, and records
// a receipt under it in the same transaction as its effect; every attempt
// first looks the receipt up, serializably, and when it finds one returns
// what the receipt says instead of applying the operation again. (If the
// first attempt commits after the retry read the receipt, the retry
// conflicts on that read and runs again, to find it.)
//
// Receipts serve push markers (Push: the token is the item's id), pop and
// count receipts (a statement's items or count), PushAll and PutBack, and
// exec's DDL and INSERT statements. Each Receipts lives under two prefixes: the receipts, and the
// same tokens by expiry. A receipt expires after Options.ReceiptTTL, far
// longer than any retry; every Record clears up to cleanupPerOp expired
// receipts, with snapshot reads and blind clears, so cleanup never causes
// conflicts. The key layout is in layout.go.

// DefaultReceiptTTL is how long receipts are kept when Options.ReceiptTTL
// is 0.
const DefaultReceiptTTL = 10 * time.Minute

// cleanupPerOp is how many expired receipts each Record clears.
const cleanupPerOp = 2

// Options tune a Queue (and a Receipts). The zero value is the default.
type Options struct {
	// Clock is the wall clock that receipts expire by (time.Now when nil).
	Clock func() time.Time
	// ReceiptTTL is how long a receipt is kept (DefaultReceiptTTL when 0).
	ReceiptTTL time.Duration
}

func (o Options) now() time.Time {
	if o.Clock == nil {
		return time.Now()
	}
	return o.Clock()
}

func (o Options) ttl() time.Duration {
	if o.ReceiptTTL <= 0 {
		return DefaultReceiptTTL
	}
	return o.ReceiptTTL
}

// Receipts records, under operation tokens, that operations were applied,
// with what they need to answer a retry. A receipt is one or more parts:
//
//	rec (token)        -> the part, when there is one
//	rec (token, i)     -> the i-th part, when there are several
//	exp (expiry, token) -> "" (expiry in unix nanoseconds)
type Receipts struct {
	rec, exp []byte
	opts     Options
}

// NewReceipts returns the receipts kept under the packed-tuple prefixes rec
// and exp (which must not be prefixes of each other).
func NewReceipts(rec, exp []byte, opts Options) Receipts {
	return Receipts{rec: rec, exp: exp, opts: opts}
}

// Has reports whether token has a receipt.
func (r Receipts) Has(tr kv.ReadTransaction, token int64) (bool, error) {
	_, found, err := kv.First(tr, kv.PrefixRange(tuple.AppendInt(clone(r.rec), token)), false)
	return found, err
}

// Lookup returns the parts of token's receipt, in order, and whether there
// is one.
func (r Receipts) Lookup(tr kv.ReadTransaction, token int64) ([][]byte, bool, error) {
	it := tr.GetRange(kv.PrefixRange(tuple.AppendInt(clone(r.rec), token)), kv.RangeOptions{})
	var parts [][]byte
	for it.Next() {
		parts = append(parts, it.KeyValue().Value)
	}
	return parts, len(parts) > 0, it.Err()
}

// Record writes token's receipt, of one or more parts, and clears up to
// cleanupPerOp expired receipts.
func (r Receipts) Record(tr kv.Transaction, token int64, parts ...[]byte) error {
	switch len(parts) {
	case 0:
		return fmt.Errorf("%w: a receipt needs a part", ErrInvalidItem)
	case 1:
		tr.Set(tuple.AppendInt(clone(r.rec), token), parts[0])
	default:
		base := tuple.AppendInt(clone(r.rec), token)
		for i, p := range parts {
			tr.Set(tuple.AppendInt(clone(base), int64(i)), p)
		}
	}
	now := r.opts.now()
	tr.Set(tuple.AppendInt(tuple.AppendInt(clone(r.exp), now.Add(r.opts.ttl()).UnixNano()), token), nil)
	return r.expire(tr, now)
}

// expire clears up to cleanupPerOp receipts whose time has passed.
func (r Receipts) expire(tr kv.Transaction, now time.Time) error {
	it := tr.Snapshot().GetRange(kv.PrefixRange(r.exp), kv.RangeOptions{Limit: cleanupPerOp})
	for it.Next() {
		k := it.KeyValue().Key
		var v [2]int64
		if err := decodeInts(k[len(r.exp):], v[:]); err != nil {
			return err
		}
		if v[0] > now.UnixNano() {
			break
		}
		tr.Clear(k)
		tr.ClearRange(kv.PrefixRange(tuple.AppendInt(clone(r.rec), v[1])))
	}
	return it.Err()
}

func clone(b []byte) []byte { return append(make([]byte, 0, len(b)+24), b...) }

// markPushed records that the push of id was applied, and reports whether
// it already was (by an earlier attempt of the same push).
func (q *Queue) markPushed(tr kv.Transaction, id int64) (bool, error) {
	if done, err := q.marks.Has(tr, id); err != nil || done {
		return done, err
	}
	return false, q.marks.Record(tr, id, nil)
}

// RecordCount records, under the operation token, that the operation
// removed n items, for an operation that reports only how many (a DELETE):
// CountReceipt returns it to a retry after commit_unknown_result.
func (q *Queue) RecordCount(tr kv.Transaction, token, n int64) error {
	return q.receipts.Record(tr, token, binary.LittleEndian.AppendUint64(nil, uint64(n)))
}

// CountReceipt returns the count an earlier, committed attempt of the
// operation token recorded with RecordCount, and whether there was one.
func (q *Queue) CountReceipt(tr kv.ReadTransaction, token int64) (int64, bool, error) {
	parts, ok, err := q.receipts.Lookup(tr, token)
	if err != nil || !ok {
		return 0, false, err
	}
	if len(parts) != 1 || len(parts[0]) != counterLen {
		return 0, false, fmt.Errorf("%w: count receipt of %d parts", ErrCorrupt, len(parts))
	}
	return int64(binary.LittleEndian.Uint64(parts[0])), true, nil
}

// Receipt returns the items that an earlier, committed attempt of the pop
// operation token recorded with RecordReceipt, and whether there was one
// (no items for a pop that SettlePop settled before it was applied).
func (q *Queue) Receipt(tr kv.ReadTransaction, token int64) ([]Item, bool, error) {
	parts, ok, err := q.receipts.Lookup(tr, token)
	if err != nil || !ok {
		return nil, false, err
	}
	if len(parts) == 1 && len(parts[0]) == 0 {
		return nil, true, nil // settled before it was applied (SettlePop): nothing
	}
	items := make([]Item, 0, len(parts))
	for _, p := range parts {
		t, err := tuple.Unpack(p)
		if err != nil || len(t) < 4 || len(t) > 8 || len(t) == 6 {
			return nil, false, fmt.Errorf("%w: unreadable receipt", ErrCorrupt)
		}
		id, _ := t[0].(int64)
		prio, _ := t[1].(int64)
		value, _ := t[3].([]byte)
		resT, _ := t[2].(tuple.Tuple)
		item := Item{ID: id, Priority: prio, Value: value}
		if len(t) >= 7 { // visible_at, lease, attempts
			vis, _ := t[4].(int64)
			item.VisibleAt = fromNanos(vis)
			item.Lease, _ = t[5].(int64)
			item.Attempts, _ = t[6].(int64)
		}
		if len(t) == 5 || len(t) == 8 {
			// The seq; receipts of versions before PutBack have none
			// (0: PutBack puts such an item at the head of its priority).
			item.Seq, _ = t[len(t)-1].(int64)
		}
		for _, r := range resT {
			n, _ := r.(int64)
			item.Resources = append(item.Resources, n)
		}
		items = append(items, item)
	}
	return items, true, nil
}

// RecordReceipt records what the pop (or lease) operation token took in
// this transaction, with the items' lease tokens, attempts, visible_at and
// seqs, so that a retry after commit_unknown_result can find it with
// Receipt instead of popping again (and can still put the items back at
// their places: PutBack). An empty pop needs no receipt (a retry that then
// finds an item may pop it), and writes nothing.
func (q *Queue) RecordReceipt(tr kv.Transaction, token int64, items []Item) error {
	if len(items) == 0 {
		return nil
	}
	parts := make([][]byte, len(items))
	for i, it := range items {
		res := tuple.Tuple{}
		for _, r := range it.Resources {
			res = append(res, r)
		}
		t := tuple.Tuple{it.ID, it.Priority, res, it.Value}
		if vis := nanos(it.VisibleAt); vis != 0 || it.Lease != 0 || it.Attempts != 0 {
			t = append(t, vis, it.Lease, it.Attempts)
		}
		t = append(t, it.Seq)
		v, err := t.PackWithError()
		if err != nil {
			return err
		}
		parts[i] = v
	}
	return q.receipts.Record(tr, token, parts...)
}
