package queues

import (
	"github.com/fdbqueue/fdbqueue/kv"
)

// The push signal: waiting for work without polling.
//
// Every push adds the number of items it pushed to one key per queue, P
// (11), with an atomic ADD: a blind write, so pushes still never conflict
// with each other, and it costs one more mutation per push operation (one
// per PushAll, whatever its number of items), not per item. A consumer that
// finds nothing to pop watches that key (WatchSignal) in the same
// transaction as its empty pop and commits: the watch compares the key
// with its value at the transaction's read version, so a push that
// committed after the pop read the queue fires it at once, and none can
// slip between the empty pop and the wait. The watch fires when any push
// commits (one that does not fit the consumer too), when the queue is
// dropped (Clear removes the key), and never for a pop or ClearItems.

// signalKey is the push signal's key, P (11).
func (q *Queue) signalKey() []byte { return q.sub[tagSignal] }

// signal records that n items were pushed.
func (q *Queue) signal(tr kv.Transaction, n int) {
	tr.Add(q.signalKey(), int64(n))
}

// WatchSignal returns a watch on the queue's push signal, which fires once
// the first push after tr's read version commits, or once the queue is
// cleared (dropped). Call it in the transaction whose pop found nothing,
// then commit it: the watch is armed by the commit (see kv.Transaction's
// Watch), fails with the commit's error if the commit fails, and must be
// cancelled if it is no longer waited for.
//
// It adds a read conflict on the signal, so a transaction that also writes
// conflicts with a push that commits first (and retries, to find the pushed
// item). A queue that has never been pushed to has no signal key yet, and
// removing an absent key would change nothing: then WatchSignal creates it,
// with an ADD of 0 (a write, once per queue).
func (q *Queue) WatchSignal(tr kv.Transaction) (kv.Watch, error) {
	v, err := tr.Get(q.signalKey())
	if err != nil {
		return nil, err
	}
	if v == nil {
		tr.Add(q.signalKey(), 0)
	}
	return tr.Watch(q.signalKey()), nil
}
