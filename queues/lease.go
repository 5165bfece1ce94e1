package queues

import (
	"fmt"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
)

// Leases, delayed items and the due index: the task lifecycle.
//
// A lease is a visibility move, as in Apple's QuiCK: Lease takes the items
// a pop would take, leaves them in the queue, and makes them invisible
// until the lease ends (Item.VisibleAt), with a fresh token (Item.Lease)
// and one more attempt (Item.Attempts). The holder acks the item (Ack:
// removes it if the token still matches), extends the lease (Extend), or
// releases it for a retry now or later (Release). A lease that is neither
// acked nor extended simply ends: the item is due again, with nothing to
// sweep it.
//
// An invisible item (leased, or pushed with a VisibleAt in the future)
// leaves the visible indexes (the items under tag 0 and the fit index) for
// tag 13, and is filed by due time under tag 12; it keeps its (priority,
// seq, id), and pushes take a seq above it (nextSeq), so when it is due it
// comes back at its original place: before later pushes of its priority.
// Every pop and lease first promotes the items due by now (promote): one
// snapshot read of the head of the due index, which finds nothing in the
// common case, so a pop's cost does not depend on how many items are
// invisible. Count, Get, Peek, PeekFit and Scan see every item, visible or
// not.
//
// The clock is Options.Clock, the client's wall clock (as in QuiCK): a
// client whose clock runs ahead takes leased items early. Keep clocks in
// sync (NTP), and leases well above the clocks' skew.

// promoteBatch is the most due items a pop or lease moves back to the
// visible queue. A pop that finds more (a mass expiry) promotes the oldest
// promoteBatch, and the next pops the rest: until they do, a pop may take an
// item after a due one it should have come after.
const promoteBatch = 64

// Promote moves items whose lease or delay has ended back to their place
// in the visible indexes (up to promoteBatch of them), as every pop and
// lease does first. Call it before ScanVisible in a transaction that takes
// what it finds: ScanVisible reads the visible indexes only.
func (q *Queue) Promote(tr kv.Transaction) error {
	_, err := q.promote(tr)
	return err
}

// promote moves the items due by now back to the visible queue, at their
// original place, up to promoteBatch of them, and reports whether it moved
// any: reads made before it may then be stale.
func (q *Queue) promote(tr kv.Transaction) (bool, error) {
	pr := q.promotion(tr, false)
	return pr.finish(tr)
}

// promotion is promote in two steps: its reads of the due index, issued
// first, then the moves. A pop or lease issues them, then its own first
// read, and only then waits: both are answered together, in one round trip
// on FoundationDB. In the common case nothing is due, and the pop's read
// stands; otherwise the pop reads again after the moves (see findN).
//
// The due index is read with snapshot reads, so pops do not conflict with
// leases; each due item is read serializably before it moves, so two pops
// promoting the same item, or a promotion and an ack or extend of it,
// conflict and one retries.
type promotion struct {
	q   *Queue
	now int64 // the clock when it was issued, unix nanoseconds
	// due are the first promoteBatch+1 keys due by now: a read of the
	// index up to now, empty in the common case, whatever the index holds
	// beyond (leased items, due later).
	due kv.FutureRange
	// later is the first key due after now, for a caller that needs the
	// earliest due time left (Lease); nil otherwise.
	later kv.FutureRange
	// none: nothing is due, as a one-row read found (due is nil).
	none bool

	// Once finished: whether it moved any item, the earliest due time left
	// in the index after the moves (0: none; with later), and the error.
	finished bool
	moved    bool
	earliest int64
	err      error
}

// promotion issues promote's reads of the due index; earliest asks for the
// first key due later too (promotion.earliest).
func (q *Queue) promotion(tr kv.Transaction, earliest bool) promotion {
	pr := promotion{q: q, now: q.opts.now().UnixNano()}
	snap := tr.Snapshot()
	if !earliest && kv.AnswersAtIssue(snap) {
		// Where a read is answered when issued, the common case (nothing
		// due) takes one row's read, without a future and an iterator:
		// 2 us of a fit pop's CPU (memory:, 8 consumers).
		found, err := q.anyDue(tr, snap, pr.now)
		if err == nil && !found {
			pr.none = true
			return pr
		}
	}
	cut := q.key(tagDue, pr.now+1) // past every key due by now
	// Want-all: a mass expiry's promoteBatch+1 keys come in one batch
	// (the iterator mode's first holds about 55).
	r := kv.Range{Begin: q.sub[tagDue], End: cut}
	pr.due = kv.GetRangeAsync(snap, r, kv.RangeOptions{Limit: promoteBatch + 1, Mode: kv.StreamingModeWantAll})
	if earliest {
		// P (12)'s keys end where P (13)'s begin (kv.PrefixRange(P (12)).End
		// is P (13): the tuple integers 12 and 13 are 0x15 0x0c and 0x0d).
		pr.later = kv.GetRangeAsync(snap, kv.Range{Begin: cut, End: q.sub[tagHidden]}, kv.RangeOptions{Limit: 1})
	}
	return pr
}

// anyDue reports whether the due index holds a key due by now, from a
// read of its first key, due by now or not: the same read for every pop of
// an Attempt, which answers it from memory (firsts.go) from the attempt's
// second pick on, so that the pops of a combined group after the first
// search no tree for it. (Not before the first pick: an attempt takes over
// what the attempt before it carried only while it remembers nothing.)
// Pops of any task from 8 and 32 consumers, memory:, 14 alternated
// rounds: 1.08 and 1.12 times as many a second.
func (q *Queue) anyDue(tr kv.Transaction, snap kv.ReadTransaction, now int64) (bool, error) {
	whole := kv.Range{Begin: q.sub[tagDue], End: q.sub[tagHidden]}
	var first kv.KeyValue
	var found bool
	var err error
	if a, ok := tr.(*Attempt); ok && a.picks > 0 {
		first, found, err = a.first(snap, whole, false, false)
	} else {
		first, found, err = kv.First(snap, whole, false)
	}
	if err != nil || !found {
		return false, err
	}
	p, err := q.decodeDueKey(first.Key)
	return err == nil && p.due <= now, err
}

// finish moves the items the promotion found due back to the visible
// queue, up to promoteBatch of them, reading them with one kv.GetMany, and
// reports whether it moved any. Called again, it returns the same.
func (pr *promotion) finish(tr kv.Transaction) (bool, error) {
	if !pr.finished {
		pr.finished = true
		pr.moved, pr.earliest, pr.err = pr.run(tr)
	}
	return pr.moved, pr.err
}

func (pr *promotion) run(tr kv.Transaction) (moved bool, earliest int64, err error) {
	q := pr.q
	if pr.none {
		return false, 0, nil
	}
	rows, err := pr.due.Get()
	if err != nil {
		return false, 0, err
	}
	if len(rows) > promoteBatch {
		p, err := q.decodeDueKey(rows[promoteBatch].Key)
		if err != nil {
			return false, 0, err
		}
		earliest, rows = p.due, rows[:promoteBatch]
	} else if pr.later != nil {
		later, err := pr.later.Get()
		if err != nil {
			return false, 0, err
		}
		if len(later) == 1 {
			p, err := q.decodeDueKey(later[0].Key)
			if err != nil {
				return false, 0, err
			}
			earliest = p.due
		}
	}
	if len(rows) == 0 {
		return false, earliest, nil
	}
	due := make([]pos, len(rows))
	keys := make([][]byte, len(rows))
	for i, e := range rows {
		if due[i], err = q.decodeDueKey(e.Key); err != nil {
			return false, 0, err
		}
		keys[i] = q.itemKey(due[i])
	}
	vals, err := kv.GetMany(tr, keys)
	if err != nil {
		return false, 0, err
	}
	expired := int64(0)
	for i, p := range due {
		if vals[i] == nil {
			continue
		}
		item, _, err := q.decodeItemUnder(tagHidden, keys[i], vals[i])
		if err != nil {
			return false, 0, err
		}
		if item.Held {
			expired++ // its lease ended unacked: the queue takes it back
		}
		if _, err := q.rewrite(tr, p, item, item, pr.now); err != nil {
			return false, 0, err
		}
		moved = true
	}
	q.AddStat(tr, StatExpired, expired)
	return moved, earliest, nil
}

// decodeDueKey returns the position of a due index key.
func (q *Queue) decodeDueKey(k []byte) (pos, error) {
	var v [4]int64
	err := decodeInts(k[len(q.sub[tagDue]):], v[:])
	return pos{due: v[0], prio: v[1], seq: v[2], id: v[3]}, err
}

// getAt reads the item at p, serializably.
func (q *Queue) getAt(tr kv.ReadTransaction, p pos) (Item, bool, error) {
	k := q.itemKey(p)
	v, err := tr.Get(k)
	if err != nil || v == nil {
		return Item{}, false, err
	}
	tag := tagItems
	if p.due != 0 {
		tag = tagHidden
	}
	it, _, err := q.decodeItemUnder(tag, k, v)
	return it, err == nil, err
}

// rewrite stores it, the item at old (which was was), with its new
// visible_at, lease and attempts: visible if it.VisibleAt has passed (now,
// unix nanoseconds), invisible until then otherwise, at the same
// (priority, seq, id). It returns the item's new position. The count does
// not change; the statistics move the item from was's state to its new
// one, stamping an item from before statistics with now (see stats.go).
func (q *Queue) rewrite(tr kv.Transaction, old pos, was, it Item, now int64) (pos, error) {
	np := old
	np.due = 0
	if vis := nanos(it.VisibleAt); vis > now {
		np.due = vis
	} else {
		it.Held = false
		q.markVisible(tr, vis, now) // see hidden.go
	}
	if it.PushedAt.IsZero() {
		it.PushedAt = stampTime(time.Unix(0, now))
	}
	q.tally(tr, stateOf(was, old.due), stateOf(it, np.due))
	if old.due != 0 {
		tr.Clear(q.dueKey(old))
	}
	if (old.due == 0) != (np.due == 0) {
		tr.Clear(q.itemKey(old))
	}
	tr.Set(q.itemKey(np), encodeValue(it))
	if np.due != old.due {
		tr.Set(q.idKey(np.id), q.idValue(np))
	}
	switch {
	case np.due != 0:
		tr.Set(q.dueKey(np), nil)
		if old.due == 0 {
			q.indexRemove(tr, old, it.Resources)
		}
	case old.due != 0:
		if err := q.indexAdd(tr, np, it.Resources, nil, nil); err != nil {
			return np, err
		}
	}
	return np, nil
}

// NextDue returns when the earliest invisible item becomes due, and
// whether there is one, with a snapshot read: a consumer that found
// nothing to pop waits for the push signal (WatchSignal) or this time,
// whichever comes first. Leases and releases that make an item due sooner
// than every other add to the push signal, so a waiter never sleeps past
// an item's due time for long (a concurrent ack of the earliest item can
// hide a sooner one from the test: the waiter then wakes at the time it
// read, and looks again).
func (q *Queue) NextDue(tr kv.ReadTransaction) (time.Time, bool, error) {
	return q.ReadNextDue(tr).Get()
}

// ReadNextDue issues NextDue's read, and returns it in flight: a caller
// that reads something else before it calls Get (WatchSignal) waits once
// for both (one round trip on FoundationDB).
func (q *Queue) ReadNextDue(tr kv.ReadTransaction) DueRead {
	return DueRead{q: q, head: kv.GetRangeAsync(tr.Snapshot(), kv.PrefixRange(q.sub[tagDue]), kv.RangeOptions{Limit: 1})}
}

// DueRead is NextDue's read, in flight (ReadNextDue). Like a
// kv.Future, it belongs to the transaction attempt that issued it.
type DueRead struct {
	q    *Queue
	head kv.FutureRange
}

// Get waits for the read, and returns what NextDue returns.
func (d DueRead) Get() (time.Time, bool, error) {
	due, err := d.earliest()
	return fromNanos(due), due != 0, err
}

// earliest returns the earliest due time (0: none).
func (d DueRead) earliest() (int64, error) {
	rows, err := d.head.Get()
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	p, err := d.q.decodeDueKey(rows[0].Key)
	return p.due, err
}

// wakeIfSooner bumps the push signal when an item became due at due
// (unix nanoseconds), sooner than earliest (the earliest due time before
// this operation; 0: none), so that consumers waiting until earliest
// look again.
func (q *Queue) wakeIfSooner(tr kv.Transaction, due, earliest int64) {
	if earliest == 0 || due < earliest {
		q.signal(tr, 1)
	}
}

// LeaseRequest says which items Lease takes and for how long.
type LeaseRequest struct {
	// Order, Limits and N select the items as PopN (Limits nil) or PopFitN
	// (Limits in the order of the queue's resources) would.
	Order  Order
	Limits []int64
	N      int
	// IDs, when not nil, are the items to lease instead, in this order
	// (Order, Limits and N are then ignored): those that are queued and
	// visible now; the others are skipped. A caller that chose the items
	// itself (by a condition the queue does not index) leases them so.
	IDs []int64
	// For is how long the lease lasts; it must be positive.
	For time.Duration
	// MaxAttempts, when positive, is how many times an item may be
	// leased: an item that would be leased again after MaxAttempts
	// attempts is removed and passed to Dead (in the same transaction),
	// and Lease goes on to the next item.
	MaxAttempts int64
	// Dead receives the items removed for MaxAttempts, with their id and
	// attempts (a dead-letter queue pushes them). It may be nil.
	Dead func(Item) error
	// Backoff, when not nil, returns how long an item stays invisible
	// after its lease ends, given the item as leased (its new attempts):
	// the item is invisible until now + For + Backoff(item), so that if
	// the lease ends with neither an ack nor a release, its next attempt
	// waits that long. It may be nil (no backoff).
	Backoff func(Item) time.Duration
}

// Lease takes up to req.N of the visible items a pop would take, in
// order, and leases them: each stays in the queue, invisible until now +
// req.For, with one more attempt and a fresh random non-zero lease token.
// It returns the items with those new values. Ack, Extend and Release
// take the token. Make the operation exactly-once with RecordReceipt, as
// for pops: the lease token is drawn in the transaction, so a retry that
// leased again would hand out other tokens.
func (q *Queue) Lease(tr kv.Transaction, req LeaseRequest) ([]Item, error) {
	if req.For <= 0 {
		return nil, fmt.Errorf("%w: a lease of %v: a lease lasts a positive duration", ErrInvalidItem, req.For)
	}
	if req.Limits != nil {
		if err := q.checkResources(req.Limits, "limits"); err != nil {
			return nil, err
		}
	}
	if req.IDs != nil {
		req.N = len(req.IDs)
	}
	if req.N <= 0 {
		return nil, nil
	}
	// The promotion finishes in the first find, after that find's first
	// read was issued (see promotion). It reads the clock first: what it
	// finds due is visible now.
	pr := q.promotion(tr, true)
	now := q.opts.now()
	until := now.Add(req.For)
	if err := checkEnd("a lease", req.For, until); err != nil {
		return nil, err
	}
	var out []Item
	soonest := until // the earliest any leased item becomes visible
	for len(out) < req.N {
		var items []Item
		var poss []pos
		var err error
		if req.IDs != nil {
			if _, err := pr.finish(tr); err != nil {
				return nil, err
			}
			items, poss, err = q.findIDs(tr, req.IDs, now.UnixNano())
		} else {
			items, poss, err = q.find(tr, req.Order, req.Limits, req.N-len(out), &pr)
		}
		if err != nil {
			return nil, err
		}
		dead := 0
		for i, it := range items {
			if poss[i].due != 0 && it.Held {
				q.AddStat(tr, StatExpired, 1) // by id: its lease ended unacked
			}
			if req.MaxAttempts > 0 && it.Attempts >= req.MaxAttempts {
				if err := q.remove(tr, poss[i], it); err != nil {
					return nil, err
				}
				if req.Dead != nil {
					if err := req.Dead(it); err != nil {
						return nil, err
					}
				}
				q.AddStat(tr, StatDeadLettered, 1)
				dead++
				continue
			}
			was := it
			it.VisibleAt, it.Lease, it.Attempts, it.Held = until, newToken(), it.Attempts+1, true
			if req.Backoff != nil {
				if d := req.Backoff(it); d > 0 {
					it.VisibleAt = until.Add(d)
					if err := checkEnd("a lease and its backoff", req.For+d, it.VisibleAt); err != nil {
						return nil, err
					}
				}
			}
			if len(out) == 0 || it.VisibleAt.Before(soonest) {
				soonest = it.VisibleAt
			}
			if _, err := q.rewrite(tr, poss[i], was, it, now.UnixNano()); err != nil {
				return nil, err
			}
			out = append(out, it)
		}
		if dead == 0 || req.IDs != nil {
			break // fewer than wanted: nothing else is visible
		}
	}
	if len(out) > 0 {
		q.wakeIfSooner(tr, soonest.UnixNano(), pr.earliest)
		q.AddStat(tr, StatLeased, int64(len(out)))
	}
	return out, nil
}

// find returns up to n visible items in order, as PopN (limits nil) or
// PopFitN would, without removing them, finishing pr first where it reads.
func (q *Queue) find(tr kv.Transaction, order Order, limits []int64, n int, pr *promotion) ([]Item, []pos, error) {
	if limits != nil {
		var ahead *fitAhead
		if !pr.finished {
			ahead = q.readFitAhead(tr, order, limits, n)
		}
		moved, err := pr.finish(tr)
		if err != nil {
			return nil, nil, err
		}
		if moved {
			ahead = nil // promote's moves land where it read
		}
		return q.findFitNAhead(tr, leasing, order, limits, n, ahead)
	}
	return q.findN(tr, leasing, order, n, pr)
}

// findIDs returns the items with ids that are queued and visible at now
// (unix nanoseconds), in the order of ids.
func (q *Queue) findIDs(tr kv.Transaction, ids []int64, now int64) ([]Item, []pos, error) {
	var items []Item
	var poss []pos
	for _, id := range ids {
		it, p, ok, err := q.getByID(tr, id)
		if err != nil {
			return nil, nil, err
		}
		if ok && nanos(it.VisibleAt) <= now {
			items, poss = append(items, it), append(poss, p)
		}
	}
	return items, poss, nil
}

// newToken returns a random non-zero (positive) lease token.
func newToken() int64 { return NewID() }

// Ack removes the item with id if its current lease is lease (the token
// Lease returned), and reports whether it did: false when the item is
// gone or was leased again after the lease ended (the lease was lost).
func (q *Queue) Ack(tr kv.Transaction, id, lease int64) (bool, error) {
	it, p, ok, err := q.holding(tr, id, lease)
	if err != nil || !ok {
		return false, err
	}
	return true, q.remove(tr, p, it)
}

// Extend makes the lease of the item with id last until now + d, if it is
// still lease, and reports whether it was (a heartbeat).
func (q *Queue) Extend(tr kv.Transaction, id, lease int64, d time.Duration) (bool, error) {
	if d <= 0 {
		return false, fmt.Errorf("%w: an extension of %v: a lease lasts a positive duration", ErrInvalidItem, d)
	}
	until := q.opts.now().Add(d)
	if err := checkEnd("an extension", d, until); err != nil {
		return false, err
	}
	return q.setVisibleIfHeld(tr, id, lease, until, false)
}

// Release ends the lease of the item with id, if it is still lease, and
// makes the item visible again after delay (0: at once), at its original
// place; it reports whether the lease was held. The item keeps its lease
// token and attempts.
func (q *Queue) Release(tr kv.Transaction, id, lease int64, delay time.Duration) (bool, error) {
	at := q.opts.now().Add(max(delay, 0))
	if err := checkEnd("a delay", delay, at); err != nil {
		return false, err
	}
	return q.setVisibleIfHeld(tr, id, lease, at, true)
}

// checkEnd reports a lease, an extension or a delay of d that would end
// at end, after MaxVisibleAt: it could not hide the item.
func checkEnd(what string, d time.Duration, end time.Time) error {
	if end.After(MaxVisibleAt) {
		return fmt.Errorf("%w: %s of %v would end at %s, after %s, the latest an item can stay invisible", ErrInvalidItem, what, d, end.UTC().Format(time.RFC3339), MaxVisibleAt.Format(time.RFC3339Nano))
	}
	return nil
}

// setVisibleIfHeld is setVisible for the holder of lease; release ends
// the lease (see setVisible).
func (q *Queue) setVisibleIfHeld(tr kv.Transaction, id, lease int64, at time.Time, release bool) (bool, error) {
	it, p, ok, err := q.holding(tr, id, lease)
	if err != nil || !ok {
		return false, err
	}
	return true, q.setVisible(tr, it, p, at, release)
}

// holding returns the item with id if its lease is lease.
func (q *Queue) holding(tr kv.Transaction, id, lease int64) (Item, pos, bool, error) {
	if lease == 0 {
		return Item{}, pos{}, false, fmt.Errorf("%w: lease token 0: a token is what Lease returned, never 0", ErrInvalidItem)
	}
	it, p, ok, err := q.getByID(tr, id)
	if err != nil || !ok || it.Lease != lease {
		return Item{}, pos{}, false, err
	}
	return it, p, true, nil
}

// SetVisibleAt sets the visible_at of the item with id, whoever holds it:
// invisible until at if at is in the future, visible at once otherwise,
// at its original place. It reports whether the item is queued. An item
// hidden by a lease stays leased while it stays invisible (a heartbeat:
// see setVisible).
func (q *Queue) SetVisibleAt(tr kv.Transaction, id int64, at time.Time) (bool, error) {
	if !ValidVisibleAt(at) {
		return false, fmt.Errorf("%w: visible_at %s: it is %s", ErrInvalidItem, at.UTC().Format(time.RFC3339Nano), VisibleAtRange)
	}
	it, p, ok, err := q.getByID(tr, id)
	if err != nil || !ok {
		return false, err
	}
	return true, q.setVisible(tr, it, p, at, false)
}

// SetVisibleWith rewrites the item with id, whoever holds it, as f says,
// and reports whether it did: f gets the item, and returns its new
// visible_at (as SetVisibleAt takes it), its new value (nil: unchanged),
// and whether to rewrite it at all (false: it is left as it is, and
// SetVisibleWith reports false, as for an item that is not queued). It
// reads the item once, and the due index's head in the same round trip:
// a release or heartbeat that checks the item's lease token, or computes
// the time from its attempts, waits no longer than SetVisibleAt. An item
// hidden by a lease stays leased while it stays invisible (a heartbeat:
// see setVisibleDue).
func (q *Queue) SetVisibleWith(tr kv.Transaction, id int64, f func(Item) (at time.Time, value []byte, ok bool, err error)) (bool, error) {
	return q.setVisibleWith(tr, id, f, false)
}

// ReleaseWith is SetVisibleWith for a release: the item's lease ends, and
// an item that stays invisible is delayed, no longer leased.
func (q *Queue) ReleaseWith(tr kv.Transaction, id int64, f func(Item) (at time.Time, value []byte, ok bool, err error)) (bool, error) {
	return q.setVisibleWith(tr, id, f, true)
}

func (q *Queue) setVisibleWith(tr kv.Transaction, id int64, f func(Item) (at time.Time, value []byte, ok bool, err error), release bool) (bool, error) {
	due := q.ReadNextDue(tr) // issued first: answered with the item's reads
	it, p, ok, err := q.getByID(tr, id)
	if err != nil || !ok {
		return false, err
	}
	at, value, ok, err := f(it)
	if err != nil || !ok {
		return false, err
	}
	if !ValidVisibleAt(at) {
		return false, fmt.Errorf("%w: visible_at %s: it is %s", ErrInvalidItem, at.UTC().Format(time.RFC3339Nano), VisibleAtRange)
	}
	if value != nil {
		it.Value = value
	}
	return true, q.setVisibleDue(tr, it, p, at, due, release)
}

func (q *Queue) setVisible(tr kv.Transaction, it Item, p pos, at time.Time, release bool) error {
	return q.setVisibleDue(tr, it, p, at, q.ReadNextDue(tr), release)
}

// setVisibleDue rewrites it, the item at p, visible at at; due is the read
// of the due index's head, in flight, which says whom to wake. An item
// hidden by a lease (Held) that stays invisible stays leased, unless
// release; one that becomes visible, or delayed, counts as released.
func (q *Queue) setVisibleDue(tr kv.Transaction, it Item, p pos, at time.Time, due DueRead, release bool) error {
	now := q.opts.now().UnixNano()
	was := it
	it.VisibleAt = at
	if release {
		it.Held = false
	}
	vis := nanos(at)
	if p.due != 0 && was.Held && (vis <= now || release) {
		q.AddStat(tr, StatReleased, 1)
	}
	if vis > now && vis == p.due || vis <= now && p.due == 0 {
		// It stays where it is (a value rewritten, or the same time set
		// again): no consumer has anything new to look at.
		_, err := q.rewrite(tr, p, was, it, now)
		return err
	}
	earliest, err := due.earliest()
	if err != nil {
		return err
	}
	np, err := q.rewrite(tr, p, was, it, now)
	if err != nil {
		return err
	}
	switch {
	case np.due == 0 && p.due != 0:
		q.signal(tr, 1) // visible again: wake a consumer
	case np.due != 0:
		q.wakeIfSooner(tr, np.due, earliest)
	}
	return nil
}
