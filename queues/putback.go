package queues

import "github.com/fdbqueue/fdbqueue/kv"

// PutBack returns items that a pop of this queue removed, as the pop
// returned them, to their places, as if they had never been popped: each
// at its (priority, seq, id) (Item.Seq), with its resources, value,
// visible_at, lease and attempts. A caller that popped items and could
// not hand them on (exec: rows of an autocommit pop the program never
// read) gives them back so, in a transaction of its own.
//
// An item comes back before every item pushed after it was first pushed,
// as an item whose lease ended does (see lease.go); among items pushed
// with the same seq (concurrent pushes) ids decide, as they always do. An
// item without a seq (0: from a pop receipt of a version before PutBack)
// goes back at the head of its priority.
//
// With a token (not the zero Token) it is exactly-once under commit_unknown_result,
// as PushAll is: an attempt that finds the token's receipt puts nothing
// back and reports false (an earlier attempt was applied, and its items
// may have been popped again since). An item whose id is queued is
// ErrDuplicateID: the items were not popped, or were put back already
// (without a token). Put-back items count, and wake waiting consumers, as
// pushes do.
func (q *Queue) PutBack(tr kv.Transaction, token Token, items []Item) (bool, error) {
	return q.pushAll(tr, token, items, false)
}

// SettlePop settles the pop operation token, whose last commit
// had an unknown outcome and which its caller gives up on: if it was
// applied (its receipt is there, see RecordReceipt), its items go back to
// their places, as PutBack puts them, exactly once under putBack (a token of
// its own); if not, it never will be: SettlePop records under token that
// the operation was settled, which an attempt still in flight read (every
// attempt looks the receipt up first, or takes a read conflict on it: see
// Receipts.Lookup), so that attempt conflicts instead of landing later. Either way, once SettlePop commits, the operation took
// nothing. It reports whether the operation had been applied; running it
// again (after commit_unknown_result) changes nothing.
func (q *Queue) SettlePop(tr kv.Transaction, token, putBack Token) (bool, error) {
	token.Unsure = true // it may have been applied: read the receipt
	items, applied, err := q.Receipt(tr, token)
	switch {
	case err != nil:
		return false, err
	case !applied:
		return false, q.receipts.Record(tr, token, settled)
	case len(items) == 0:
		return false, nil // settled by an earlier attempt, or an empty pop
	}
	_, err = q.PutBack(tr, putBack, items)
	return true, err
}

// settled is the receipt of a pop that SettlePop settled before it was
// applied: one empty part, which no pop receipt is.
var settled = []byte{}
