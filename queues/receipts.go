package queues

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// Exactly-once under commit_unknown_result (1021): the one mechanism.
//
// FoundationDB's retry loop runs a transaction again after 1021, although
// the first attempt may have been applied. An operation that must not
// apply twice gets a Token made once, outside the retry loop, and records
// a receipt under it in the same transaction as its effect. An attempt
// after one that may have been applied (Token.Unsure) first looks the
// receipt up, serializably, and when it finds one returns what the
// receipt says instead of applying the operation again. (If the earlier
// attempt commits after the retry read the receipt, the retry conflicts on
// that read and runs again, to find it.) An attempt with nothing before it
// that may have been applied cannot find a receipt, so it reads none: it
// only adds the receipt's keys to its read conflicts, which costs no round
// trip on FoundationDB, so that whoever writes the receipt meanwhile (a
// SettlePop giving the operation up) makes it conflict rather than land.
//
// A receipt is keyed by its expiry, which the token fixes (Token.At plus
// Options.ReceiptTTL, far longer than any retry), so that every attempt
// finds it under the same key and expired receipts go with a blind range
// clear: no read, no conflict, no round trip. Receipts serve pop and count
// receipts (a statement's items or count), PushAll's and PutBack's, and
// exec's DDL statements. Push markers (Push: the token is the item's id,
// which a caller may push again at any time) are the older kind, keyed by
// id and cleared through an index by expiry (markers). The key layout is in
// layout.go.

// DefaultReceiptTTL is how long receipts are kept when Options.ReceiptTTL
// is 0.
const DefaultReceiptTTL = 10 * time.Minute

// cleanupPerOp is how many expired push markers each marker clears.
const cleanupPerOp = 2

// cleanupEvery is how often, in receipts recorded, the ranges where
// earlier versions kept receipts are cleared: a token whose ID is a
// multiple of it clears them (ids are random, so about one receipt in
// cleanupEvery does).
const cleanupEvery = 8

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

// Token names one operation across the attempts of its transaction, so
// that it applies once (see above). The zero Token is none: the operation
// records no receipt.
type Token struct {
	// ID is the operation's, made once before its first attempt (NewID).
	ID int64
	// At is when the operation started, the same for every attempt: its
	// receipt expires at At plus the receipt lifetime.
	At time.Time
	// Unsure is set once an attempt of the operation may have been applied
	// (it ended in commit_unknown_result): from then on every attempt
	// looks the receipt up.
	Unsure bool
}

// Once runs fn in a transaction of db and commits it, retrying as db's
// OnError allows, as kv.Transact does, with the Token fn records its
// receipt under: tok on the first attempt, and Unsure on every attempt
// after one that may have been applied. It is the retry loop a Token
// needs; a caller with a loop of its own (exec) sets Unsure itself.
func Once(ctx context.Context, db kv.Database, tok Token, fn func(kv.Transaction, Token) error) error {
	tr, err := db.CreateTransaction(ctx)
	if err != nil {
		return err
	}
	defer tr.Cancel()
	for {
		if err = fn(tr, tok); err == nil {
			if err = tr.Commit(); err == nil {
				return nil
			}
		}
		if kv.IsMaybeCommitted(err) {
			tok.Unsure = true
		}
		if err = tr.OnError(err); err != nil {
			return err
		}
	}
}

// Receipts records, under operation tokens, that operations were applied,
// with what they need to answer a retry. A receipt is one or more parts:
//
//	rec (expiry, token)      -> the part, when there is one
//	rec (expiry, token, i)   -> the i-th part, when there are several
//
// expiry in unix nanoseconds (Token.At plus the lifetime).
type Receipts struct {
	rec    []byte
	legacy []kv.Range // where earlier versions kept receipts: cleared with the expired
	opts   Options
}

// NewReceipts returns the receipts kept under the packed-tuple prefix rec.
// legacy are the ranges where an earlier version kept them, cleared along
// with the expired receipts.
func NewReceipts(rec []byte, opts Options, legacy ...kv.Range) Receipts {
	return Receipts{rec: rec, legacy: legacy, opts: opts}
}

// prefix is the prefix of every key of tok's receipt.
func (r Receipts) prefix(tok Token) []byte {
	exp := tok.At.Add(r.opts.ttl()).UnixNano()
	return tuple.AppendInt(tuple.AppendInt(clone(r.rec), exp), tok.ID)
}

// Lookup returns the parts of tok's receipt, in order, and whether there
// is one. Unless tok is Unsure there cannot be one: Lookup reads nothing,
// and adds the receipt's keys to tr's read conflicts (see above).
func (r Receipts) Lookup(tr kv.Transaction, tok Token) ([][]byte, bool, error) {
	if tok.ID == 0 {
		return nil, false, nil
	}
	rng := kv.PrefixRange(r.prefix(tok))
	if !tok.Unsure {
		return nil, false, tr.AddReadConflictRange(rng)
	}
	it := tr.GetRange(rng, kv.RangeOptions{})
	var parts [][]byte
	for it.Next() {
		parts = append(parts, it.KeyValue().Value)
	}
	return parts, len(parts) > 0, it.Err()
}

// Has reports whether tok has a receipt, as Lookup does.
func (r Receipts) Has(tr kv.Transaction, tok Token) (bool, error) {
	_, ok, err := r.Lookup(tr, tok)
	return ok, err
}

// Record writes tok's receipt, of one or more parts, and clears every
// expired receipt, with one blind range clear.
func (r Receipts) Record(tr kv.Transaction, tok Token, parts ...[]byte) error {
	if tok.ID == 0 {
		return nil
	}
	base := r.prefix(tok)
	switch len(parts) {
	case 0:
		return fmt.Errorf("%w: a receipt needs a part", ErrInvalidItem)
	case 1:
		tr.Set(base, parts[0])
	default:
		for i, p := range parts {
			tr.Set(tuple.AppendInt(clone(base), int64(i)), p)
		}
	}
	r.expire(tr, tok)
	return nil
}

// expire clears every receipt whose expiry has passed, blindly, but never
// tok's own, whatever the clock says; and, for one token in cleanupEvery,
// the legacy ranges.
func (r Receipts) expire(tr kv.Transaction, tok Token) {
	end := min(r.opts.now().UnixNano(), tok.At.Add(r.opts.ttl()).UnixNano())
	tr.ClearRange(kv.Range{Begin: r.rec, End: tuple.AppendInt(clone(r.rec), end)})
	if tok.ID%cleanupEvery == 0 {
		for _, l := range r.legacy {
			tr.ClearRange(l)
		}
	}
}

// markers records push markers (Push), keyed by the item's id, which a
// caller may push again at any time, so that its expiry cannot be known:
//
//	mark (id)           -> ""
//	exp (expiry, id)    -> "" (expiry in unix nanoseconds)
//
// every marker clears up to cleanupPerOp expired ones through exp, with a
// snapshot read and blind clears, so cleanup never causes conflicts.
type markers struct {
	mark, exp []byte
	opts      Options
}

// has reports whether id has a marker.
func (m markers) has(tr kv.ReadTransaction, id int64) (bool, error) {
	_, found, err := kv.First(tr, kv.PrefixRange(tuple.AppendInt(clone(m.mark), id)), false)
	return found, err
}

// record writes id's marker, and clears up to cleanupPerOp expired ones.
func (m markers) record(tr kv.Transaction, id int64) error {
	tr.Set(tuple.AppendInt(clone(m.mark), id), nil)
	now := m.opts.now()
	tr.Set(tuple.AppendInt(tuple.AppendInt(clone(m.exp), now.Add(m.opts.ttl()).UnixNano()), id), nil)
	it := tr.Snapshot().GetRange(kv.PrefixRange(m.exp), kv.RangeOptions{Limit: cleanupPerOp})
	for it.Next() {
		k := it.KeyValue().Key
		var v [2]int64
		if err := decodeInts(k[len(m.exp):], v[:]); err != nil {
			return err
		}
		if v[0] > now.UnixNano() {
			break
		}
		tr.Clear(k)
		tr.ClearRange(kv.PrefixRange(tuple.AppendInt(clone(m.mark), v[1])))
	}
	return it.Err()
}

func clone(b []byte) []byte { return append(make([]byte, 0, len(b)+24), b...) }

// markPushed records that the push of id was applied, and reports whether
// it already was (by an earlier attempt of the same push).
func (q *Queue) markPushed(tr kv.Transaction, id int64) (bool, error) {
	if done, err := q.marks.has(tr, id); err != nil || done {
		return done, err
	}
	return false, q.marks.record(tr, id)
}

// RecordCount records, under the operation token, that the operation
// removed n items, for an operation that reports only how many (a DELETE):
// CountReceipt returns it to a retry after commit_unknown_result.
func (q *Queue) RecordCount(tr kv.Transaction, token Token, n int64) error {
	return q.receipts.Record(tr, token, binary.LittleEndian.AppendUint64(nil, uint64(n)))
}

// CountReceipt returns the count an earlier, committed attempt of the
// operation token recorded with RecordCount, and whether there was one.
func (q *Queue) CountReceipt(tr kv.Transaction, token Token) (int64, bool, error) {
	parts, ok, err := q.receipts.Lookup(tr, token)
	if err != nil || !ok {
		return 0, false, err
	}
	if len(parts) != 1 || len(parts[0]) != counterLen {
		return 0, false, fmt.Errorf("%w: count receipt of %d parts", ErrCorrupt, len(parts))
	}
	return int64(binary.LittleEndian.Uint64(parts[0])), true, nil
}

// RecordCounts records, under the operation token, the numbers an
// operation reports (an INSERT ... SELECT: how many rows, and the last
// id), for CountsReceipt to return to a retry after
// commit_unknown_result.
func (q *Queue) RecordCounts(tr kv.Transaction, token Token, ns ...int64) error {
	b := make([]byte, 0, counterLen*len(ns))
	for _, n := range ns {
		b = binary.LittleEndian.AppendUint64(b, uint64(n))
	}
	return q.receipts.Record(tr, token, b)
}

// CountsReceipt returns the numbers an earlier, committed attempt of the
// operation token recorded with RecordCounts, and whether there were any.
func (q *Queue) CountsReceipt(tr kv.Transaction, token Token) ([]int64, bool, error) {
	parts, ok, err := q.receipts.Lookup(tr, token)
	if err != nil || !ok {
		return nil, false, err
	}
	if len(parts) != 1 || len(parts[0])%counterLen != 0 {
		return nil, false, fmt.Errorf("%w: counts receipt of %d parts", ErrCorrupt, len(parts))
	}
	ns := make([]int64, len(parts[0])/counterLen)
	for i := range ns {
		ns[i] = int64(binary.LittleEndian.Uint64(parts[0][i*counterLen:]))
	}
	return ns, true, nil
}

// Receipt returns the items that an earlier, committed attempt of the pop
// operation token recorded with RecordReceipt, and whether there was one
// (no items for a pop that SettlePop settled before it was applied).
func (q *Queue) Receipt(tr kv.Transaction, token Token) ([]Item, bool, error) {
	parts, ok, err := q.receipts.Lookup(tr, token)
	if err != nil || !ok {
		return nil, false, err
	}
	if len(parts) == 1 && len(parts[0]) == 0 {
		return nil, true, nil // settled before it was applied (SettlePop): nothing
	}
	items := make([]Item, 0, len(parts))
	for _, p := range parts {
		// The part as RecordReceipt writes it: the value's bytes after
		// valueRaw, the other fields packed before; or, written before,
		// all of them packed, the value fourth.
		t, raw, err := tuple.UnpackUntil(p, valueRaw)
		if err == nil && raw != nil {
			if len(t) != 4 && len(t) != 7 {
				return nil, false, fmt.Errorf("%w: unreadable receipt", ErrCorrupt)
			}
			t = slices.Insert(t, 3, any(bytes.Clone(raw[1:])))
		}
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
func (q *Queue) RecordReceipt(tr kv.Transaction, token Token, items []Item) error {
	if len(items) == 0 {
		return nil
	}
	parts := make([][]byte, len(items))
	for i, it := range items {
		res := tuple.Tuple{}
		for _, r := range it.Resources {
			res = append(res, r)
		}
		// The value goes last, as it is, as in the item's record
		// (encodeValue): packed, its zero bytes would take two bytes
		// each, and a row INSERT accepts (MaxRecordSize) would make a
		// receipt too large to write, and its pops fail.
		t := tuple.Tuple{it.ID, it.Priority, res}
		if vis := nanos(it.VisibleAt); vis != 0 || it.Lease != 0 || it.Attempts != 0 {
			t = append(t, vis, it.Lease, it.Attempts)
		}
		t = append(t, it.Seq)
		v, err := t.PackWithError()
		if err != nil {
			return err
		}
		parts[i] = append(append(v, valueRaw), it.Value...)
	}
	return q.receipts.Record(tr, token, parts...)
}
