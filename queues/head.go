package queues

import (
	"sync/atomic"

	"github.com/fdbqueue/fdbqueue/kv"
)

// The head of a single-row pop or lease: its first visible item in order,
// read in the same round trip as promote's read of the due index.
//
// The two reads do not depend on each other unless something is due, which
// is rare. A pop or lease issues promote's read first (promotion); findN
// reads the head through a snapshot (popHead), and only then waits for
// promote: on FoundationDB both are answered together. When promote moved
// nothing, the head it read stands, and confirm adds the read conflicts
// that the same reads, made through the pick (serializably, or through its
// conflictReader), would have added: those of a head read after promote.
// When promote moved items, one of them may now come first: the head is
// read again, through the pick, after the moves, and the first reads,
// snapshot reads, leave nothing behind.
//
// The explicit conflicts are the serializable reads' exactly on the
// embedded engine. On FoundationDB a serializable read adds no conflict
// on keys its transaction wrote before it (ReadYourWrites.cpp,
// updateConflictMap), and an explicit range covers them: a pop after
// writes of its own into the queue's items, in one explicit transaction,
// also conflicts on the items it wrote itself (a unique key no other
// transaction writes but by taking it, which it cannot see before the
// commit). A statement in its own transaction writes nothing before its
// head.
//
// In Max order the head takes two reads of a priority queue: the last key,
// whose priority is the highest, then the first key of that priority. The
// second depends on the first, unless the highest priority is known
// beforehand: the queue remembers the one its last Max-order head found
// (topHint) and reads that priority's first key together with the last
// key. When the last key's priority is the one remembered (a queue whose
// highest priority stays), that is one round trip; otherwise the read of
// the right priority follows, a second one, as without the hint. A
// speculative read that turned out unneeded was a snapshot read: it adds
// no conflict. Without a hint, or with another layout (priorities stored
// negated for Max order, which a queue popped in both orders cannot have),
// no single FoundationDB read finds the first key of the last prefix: a key
// selector moves by keys, not by prefixes.

// headRead is a head as a pick read it, with the one-row reads that found
// it, for confirm.
type headRead struct {
	e     kv.KeyValue
	ok    bool
	reads [2]oneRead
	n     int // reads[:n] were made
}

// oneRead is a one-row range read (kv.First) and what it found.
type oneRead struct {
	r       kv.Range
	reverse bool
	e       kv.KeyValue
	ok      bool
}

func (h *headRead) add(r kv.Range, reverse bool, e kv.KeyValue, ok bool) {
	h.reads[h.n] = oneRead{r: r, reverse: reverse, e: e, ok: ok}
	h.n++
	h.e, h.ok = e, ok
}

// popHead reads the first visible item in order for pk, and finishes pr,
// whose reads must have been issued before (see above).
func (q *Queue) popHead(pk *pick, order Order, pr *promotion) (headRead, error) {
	ahead := !pr.finished // else the moves are made: the head is read after them
	h, err := q.readHead(pk.rd.Snapshot(), order)
	if err != nil {
		return h, err
	}
	moved, err := pr.finish(pk.tr)
	if err != nil {
		return h, err
	}
	if ahead && moved {
		// One of the moved items may come first: the head is read again,
		// through the pick, as it was read after promote.
		e, ok, err := q.first(pk.rd, order)
		return headRead{e: e, ok: ok}, err
	}
	return h, pk.confirm(h)
}

// readHead reads the first visible item in order through snap.
func (q *Queue) readHead(snap kv.ReadTransaction, order Order) (headRead, error) {
	var h headRead
	items := q.prefixRange(tagItems)
	if q.kind == FIFO || order == Min {
		e, ok, err := kv.First(snap, items, false)
		h.add(items, false, e, ok)
		return h, err
	}
	// The remembered priority's first key, in flight while the last key
	// is read.
	guess, hinted := q.top.get()
	var guessed kv.FutureRange
	var guessR kv.Range
	if hinted {
		guessR = q.prefixRange(tagItems, guess)
		guessed = kv.GetRangeAsync(snap, guessR, kv.RangeOptions{Limit: 1})
	}
	last, ok, err := kv.First(snap, items, true)
	h.add(items, true, last, ok)
	if err != nil || !ok {
		return h, err
	}
	p, err := q.decodeItemKey(last.Key)
	if err != nil {
		return h, err
	}
	if hinted && p.prio == guess {
		rows, err := guessed.Get()
		if err != nil {
			return h, err
		}
		var e kv.KeyValue
		if len(rows) == 1 {
			e = rows[0]
		}
		h.add(guessR, false, e, len(rows) == 1)
		return h, nil
	}
	q.top.remember(p.prio)
	r := q.prefixRange(tagItems, p.prio)
	e, ok, err := kv.First(snap, r, false)
	h.add(r, false, e, ok)
	return h, err
}

// confirm adds the read conflicts of h's reads as the pick's own reads
// would have: explicit read conflicts in a transaction, the ranges and
// keys its conflictReader records otherwise (conflictReader.First's).
func (pk *pick) confirm(h headRead) error {
	for _, rd := range h.reads[:h.n] {
		c := covered(rd.r, rd.reverse, rd.e, rd.ok)
		if cr := pk.cr; cr != nil {
			cr.done = append(cr.done, c)
			if rd.ok {
				cr.seen = append(cr.seen, rd.e.Key)
			}
			continue
		}
		if err := pk.tr.AddReadConflictRange(c); err != nil {
			return err
		}
	}
	return nil
}

// topHint is the highest priority the queue's last Max-order head read
// found (see above), shared by the copies WithOptions makes. It is only a
// guess: a wrong one costs a round trip, never a wrong answer.
type topHint struct {
	prio atomic.Int64
	set  atomic.Bool
}

func (t *topHint) get() (int64, bool) {
	if t == nil || !t.set.Load() {
		return 0, false
	}
	return t.prio.Load(), true
}

func (t *topHint) remember(prio int64) {
	if t != nil {
		t.prio.Store(prio)
		t.set.Store(true)
	}
}
