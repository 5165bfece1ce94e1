package queues

import (
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// A table's unique keys (exec/unique.go) live under its queue's prefix,
// tags 15 and 16 (layout.go), so that Clear (DROP TABLE) drops them with
// the items. The queue itself never reads or writes them: these build
// their keys for exec, which keeps them in the transactions that add and
// remove the items.

// UniqueKey appends to dst the unique index entry of values (a packed
// tuple of a row's values in the key's columns) in unique key k:
// P (15, k, values...).
func (q *Queue) UniqueKey(dst []byte, k int, values []byte) []byte {
	return append(q.appendKey(dst, tagUnique, int64(k)), values...)
}

// UniqueIndex returns the range of every unique index entry: exec clears
// it with ClearItems, for a table with unique keys.
func (q *Queue) UniqueIndex() kv.Range { return kv.PrefixRange(q.sub[tagUnique]) }

// UniqueUntilKey appends to dst the window entry of values in unique key
// k, in bucket: P (16, k, bucket, values...).
func (q *Queue) UniqueUntilKey(dst []byte, k int, bucket int64, values []byte) []byte {
	return append(q.appendKey(dst, tagUniqueUntil, int64(k), bucket), values...)
}

// UniqueUntilBefore returns the range of unique key k's window entries in
// the buckets before bucket: P (16, k) up to P (16, k, bucket).
func (q *Queue) UniqueUntilBefore(k int, bucket int64) kv.Range {
	return kv.Range{Begin: q.key(tagUniqueUntil, int64(k)), End: q.key(tagUniqueUntil, int64(k), bucket)}
}

// UniqueEntry is the value of a unique index entry: the packed id of the
// item holding it. Removing the item clears the entry only if it still
// holds this value (kv.Transaction.CompareAndClear).
func UniqueEntry(id int64) []byte { return tuple.AppendInt(nil, id) }
