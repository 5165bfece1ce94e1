package queues

import (
	"bytes"
	"slices"

	"github.com/fdbqueue/fdbqueue/kv"
)

// An attempt of several fit pops reads the head of a queue's items once
// through the snapshot (Attempt.items), for step 1 of each of them
// (scanFits): every pop of a combined group read the same first rows again
// through the engine, about twenty a pop (random limits, where the head
// fills with tasks only large consumers take), 6-9 us a pop with 8
// consumers (memory:). Step 1 reads them through a knownReader, which
// answers as the engine would, and the pick records what the reads
// covered and returned (pick.record): the choice and the read conflicts
// are the same.
//
// The attempt's writes keep it what the transaction reads: a clear of a
// row it holds (a pop's removal) drops the row, as the engine's view of
// the transaction does; any other write before its end (a promotion moving
// an item whose delay ended back, a lease, a push) drops the whole read.

// itemsAhead is how many rows itemsKnown reads: about what step 1 of a
// group's pops reads, most under sedimentBudget; a scan that goes on past
// them reads the rest itself.
const itemsAhead = 2 * sedimentBudget

// itemsKnown returns the first rows of the items under prefix as one read,
// made now if the attempt has none, or holds fewer than sedimentBudget of
// them after its pops removed the others, when the attempt carries its
// reads (Several, carryAlone) on an engine that answers a read when it is
// issued (kv.AnswersAtIssue: where reads wait, a fit pop reads step 1
// ahead with promote's, fitAhead); nil otherwise. What it read is carried
// to the next attempt with the rest (carried): a lone consumer's pop
// otherwise read its step 1 through the engine each time.
//
// An attempt of several pops reads from its second pick on, unless it
// took a read over: its first reads for itself through the engine, as a
// group of one pop would otherwise pay for rows it does not scan (with 8
// consumers, reading at the first pick cost 7% more CPU a pop).
func (a *Attempt) itemsKnown(prefix []byte) (*known, error) {
	if !a.carries || !kv.AnswersAtIssue(a.Transaction) {
		return nil, nil
	}
	r := kv.PrefixRange(prefix)
	if it := a.items; it != nil && bytes.Equal(it.r.Begin, r.Begin) && (len(it.rows) >= sedimentBudget || it.complete()) {
		return it, nil
	}
	if a.several && a.picks < 2 {
		return nil, nil
	}
	k, err := a.readKnown(r, itemsAhead)
	if err != nil {
		return nil, err
	}
	a.items = &k
	return a.items, nil
}

// wroteItems keeps the items read (itemsKnown) what the transaction reads
// after a write to [begin, end) (end nil: the one key begin); clear says
// the write clears the key.
func (a *Attempt) wroteItems(begin, end []byte, clear bool) {
	it := a.items
	if it == nil || bytes.Compare(begin, it.upTo) >= 0 {
		return
	}
	if end == nil {
		if bytes.Compare(begin, it.r.Begin) < 0 {
			return
		}
		i, found := slices.BinarySearchFunc(it.rows, begin, func(e kv.KeyValue, key []byte) int { return bytes.Compare(e.Key, key) })
		if clear {
			if found {
				it.rows = slices.Delete(it.rows, i, i+1)
			}
			return
		}
	} else if bytes.Compare(end, it.r.Begin) <= 0 {
		return
	}
	a.items = nil
}
