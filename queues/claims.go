package queues

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
)

// Claims: in-process SKIP LOCKED for pops.
//
// Concurrent pops of one queue all want its best rows. Without help they
// read the same head, one commits, and the others conflict and retry; and
// a pop that read past rows that did not fit it conflicts with the pop
// that takes one of them. The more consumers, the more work is thrown
// away. A pop that runs in an Attempt (one attempt of a transaction, tied
// to a Claims registry shared by the process) avoids both:
//
//   - It chooses with snapshot reads, and claims every row it takes; it
//     passes over the rows other attempts in flight claimed, as
//     PostgreSQL's FOR UPDATE SKIP LOCKED does, and the rows that pops
//     which committed after it began removed (its snapshot may still hold
//     them).
//   - It then adds, as explicit read conflicts, the ranges its reads
//     covered minus the keys of the rows it read and did not take: rows
//     that did not fit, rows after what it took (the other heads of the
//     fit index), and rows it passed over. The gaps between rows stay, so
//     a push (or a row made visible again) where it read conflicts as
//     before, and so do the rows it took.
//
// What that means:
//
//   - A row it read and did not take, other than one it passed over, did
//     not decide its choice, and no change other pops and leases make to
//     such a row can change that: they remove it (or hide it, or rewrite
//     it in place with the same resources and place). Its choice stays the
//     best row it could have taken.
//   - A row it passed over was claimed. If the claimer commits first, the
//     pop orders after it: the row is gone. Otherwise (the claimer fails,
//     or commits later) the pop took a later row although that one was
//     still there: the SKIP LOCKED relaxation. It is the only one, and
//     only among pops in flight at the same time in one process.
//   - Exactly-once comes from the read conflicts alone: the rows a pop
//     takes are in them, so two pops that take the same row (a claim lost
//     in a race, or pops of two processes, which share no claims)
//     conflict. Claims are only a hint.
//   - Pops in one transaction see their own earlier pops (the rows are
//     gone from their reads); a pop in a transaction without an Attempt
//     (a caller's transaction, or a queue used without Claims) reads
//     serializably and passes over nothing, as before.
//
// A claim lasts until its attempt ends: Release (which Claims.Run, and so
// Claims.Transact and exec's retry loop, call after every attempt,
// committed or not) drops it, or keeps the claims of a committed pop for
// the attempts that began before the commit.

// Claims is the registry of the rows chosen by pops in flight in one
// process, for one database: share one among every connection to it. It
// is safe for concurrent use.
type Claims struct {
	mu sync.Mutex // guards the fields below
	// held maps the item key of every claimed row to its claim.
	held map[string]*claim
	// seq numbers the attempts in the order they began.
	seq uint64
	// live holds the numbers of the attempts not yet released.
	live map[uint64]struct{}
	// gone lists the claims kept after their pop committed, oldest first.
	gone []*claim
	// inFlight is len(live), read without the lock.
	inFlight atomic.Int64
	// carry is what the last attempt of several pops that committed alone
	// read, for the next attempt that reads at its commit (firsts.go).
	carry *carried
	// idle is how long a carry no attempt took over is kept (carryIdle).
	// sweep is the timer that drops it, running while sweeping; carries
	// numbers the carries made, and seen is the number of the carry the
	// timer saw when it last fired.
	idle          time.Duration
	sweep         *time.Timer
	sweeping      bool
	carries, seen uint64
	// adopted and refused count the attempts that took over what the
	// attempt before them carried, and those that found it stale (tests).
	adopted, refused atomic.Int64
	// aloneMissed counts what attempts alone carried and no one took
	// over, in a row, and aloneSkipped the attempts alone since the last
	// that carried (carryAlone).
	aloneMissed, aloneSkipped atomic.Int64
}

// claim is a row's claim: by the attempt holding it, or, once its pop
// committed (by is nil), for the attempts numbered up to goneSeq.
type claim struct {
	item    string // the row's item key
	by      *Attempt
	goneSeq uint64
}

// maxGone bounds the claims kept after their pops committed: an attempt
// never released would otherwise keep them all.
const maxGone = 1 << 12

// NewClaims returns an empty registry.
func NewClaims() *Claims {
	return &Claims{held: map[string]*claim{}, live: map[uint64]struct{}{}, idle: carryIdle}
}

// Attempt is one attempt of a transaction whose pops claim the rows they
// take in a Claims registry and pass over the rows others claimed. It is
// the transaction for that attempt: pass it to the queue's methods. Begin
// it before the attempt's first read, and release it once the attempt's
// commit ended or the attempt failed; it must not be used after that.
type Attempt struct {
	kv.Transaction
	claims *Claims
	seq    uint64 // its number in the order attempts began
	mine   []*claim
	remove []bool // for each of mine: its pop removes the row (a lease leaves it queued)

	// The one-key range reads it remembers (firsts.go).
	remembered
	picks  int    // the pops and leases it made
	writes uint64 // the writes it made
	// several: it runs several statements that pick (Several).
	several bool
	// carries: it remembers its reads from its first pick on, and
	// carries them to the next attempt once it committed alone (Several,
	// carryAlone).
	carries bool
	// dir is the cell directory it read whole for its skip-scans, if it
	// did (firsts.go).
	dir *dirRead
	// items is the head of a queue's items it read for step 1 of its fit
	// pops, if it did (itemsknown.go).
	items *known
	// adopted: a Several attempt looked for the reads of the attempt
	// before it (adopt), at its first pick.
	adopted bool
}

// Begin starts an attempt of tr: its pops claim rows in c.
func (c *Claims) Begin(tr kv.Transaction) *Attempt {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	c.live[c.seq] = struct{}{}
	c.inFlight.Store(int64(len(c.live)))
	return &Attempt{Transaction: tr, claims: c, seq: c.seq}
}

// Release ends the attempt's claims; committed says that its commit
// succeeded. Call it once the commit ended: a claim dropped before lets
// another pop choose the row and conflict.
//
// The claims on the rows a committed attempt popped are kept until every
// attempt that began before the commit ended: such an attempt may read at
// a version that still holds the row, and would take it and conflict.
// Passing over it instead is exact: the row is gone, and the pop orders
// after the one that removed it. A popped row never comes back under its
// key (a push takes a new seq and id); a leased one does (when its lease
// ends), so its claim ends here.
func (a *Attempt) Release(committed bool) {
	c := a.claims
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.live, a.seq)
	c.inFlight.Store(int64(len(c.live)))
	for i, cl := range a.mine {
		switch {
		case cl.by != a:
		case committed && a.remove[i]:
			cl.by, cl.goneSeq = nil, c.seq
			c.gone = append(c.gone, cl)
		default:
			delete(c.held, cl.item)
		}
	}
	a.mine, a.remove = nil, nil
	switch {
	case committed:
		a.carryLocked()
	case a.carries:
		a.missedAlone()
	}
	a.forgetFirsts()
	oldest := c.seq + 1
	for s := range c.live {
		oldest = min(oldest, s)
	}
	n := 0
	for n < len(c.gone) && (c.gone[n].goneSeq < oldest || len(c.gone)-n > maxGone) {
		if cl := c.gone[n]; cl.by == nil && c.held[cl.item] == cl {
			delete(c.held, cl.item)
		}
		n++
	}
	c.gone = c.gone[n:]
}

// keepsAwayLocked reports whether cl keeps a from taking its row: another
// attempt holds it, or popped the row and committed after a began.
func (a *Attempt) keepsAwayLocked(cl *claim) bool {
	if cl.by != nil {
		return cl.by != a
	}
	return a.seq <= cl.goneSeq
}

// claim claims the row with item key item for a (remove: its pop removes
// the row), and reports whether a may take it.
func (a *Attempt) claim(item []byte, remove bool) bool {
	c := a.claims
	c.mu.Lock()
	defer c.mu.Unlock()
	cl, ok := c.held[string(item)]
	switch {
	case ok && a.keepsAwayLocked(cl):
		return false
	case ok && cl.by == a:
		return true
	case ok: // kept for attempts older than a
		cl.by = a
	default:
		cl = &claim{item: string(item), by: a}
		c.held[cl.item] = cl
	}
	a.mine, a.remove = append(a.mine, cl), append(a.remove, remove)
	return true
}

// claimed reports whether a claim keeps a from taking the row with item
// key item.
func (a *Attempt) claimed(item []byte) bool {
	c := a.claims
	c.mu.Lock()
	defer c.mu.Unlock()
	cl, ok := c.held[string(item)]
	return ok && a.keepsAwayLocked(cl)
}

// Held returns how many rows are claimed, by attempts in flight or kept
// after their pops committed, for tests and statistics.
func (c *Claims) Held() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.held)
}

// Transact is kv.Transact with claims: each attempt of fn runs in an
// Attempt of c (see Run).
func (c *Claims) Transact(ctx context.Context, db kv.Database, fn func(kv.Transaction) error) error {
	tr, err := db.CreateTransaction(ctx)
	if err != nil {
		return err
	}
	defer tr.Cancel()
	for {
		if err = c.Run(tr, fn); err == nil {
			return nil
		}
		if err = tr.OnError(err); err != nil {
			return err
		}
	}
}

// Run runs fn in an Attempt of tr and commits it, then releases the
// attempt: one attempt of a retry loop.
func (c *Claims) Run(tr kv.Transaction, fn func(kv.Transaction) error) (err error) {
	a := c.Begin(tr)
	defer func() { a.Release(err == nil) }()
	if err := fn(a); err != nil {
		return err
	}
	return tr.Commit()
}

// pick is one choice of rows by a pop or lease: the reads it chooses
// through, and the claims it makes and honours. Without an Attempt it reads
// serializably through tr and passes over nothing; with one it reads
// through a conflictReader and done adds the read conflicts.
type pick struct {
	q  *Queue
	tr kv.Transaction     // for writes (directory clears); nil in a peek
	rd kv.ReadTransaction // the reads the choice is made through
	a  *Attempt           // nil: no claims
	rm bool               // with a: the pick removes what it takes
	cr *conflictReader    // with a: records rd's reads
	// took are the keys of the rows the pick takes (with a): their item
	// key, and their fit index entries.
	took [][]byte
	snap kv.ReadTransaction // rd's snapshot, once asked for
	// ahead is what the fit pop or lease read ahead, if anything
	// (fitAhead).
	ahead *fitAhead
	// cells is the decoded cell directory the last skip-scan of the cell
	// directory walked (cellsScan), if it did: its cells keep where their
	// heads' reads are remembered (headSlot).
	cells *dirCells
}

// What a pick does with the rows it chooses.
type pickMode uint8

const (
	peeking  pickMode = iota // reads them: claims nothing
	removing                 // pops them
	leasing                  // leases them: they come back
)

// newPick starts a pick in tr; when tr is an Attempt, a pick that takes
// what it chooses (mode removing or leasing) claims it.
func (q *Queue) newPick(tr kv.ReadTransaction, mode pickMode) *pick {
	pk := &pick{q: q, rd: tr}
	pk.tr, _ = tr.(kv.Transaction)
	if a, ok := tr.(*Attempt); ok && mode != peeking {
		pk.a, pk.rm = a, mode == removing
		a.picks++
		if a.several && !a.adopted {
			a.adopt()
		}
		// Alone, a pick reads serializably, which costs less than
		// recording its reads, and claims what it takes all the same.
		if a.claims.inFlight.Load() > 1 {
			pk.cr = &conflictReader{a: a, snap: tr.Snapshot(), done: make([]kv.Range, 0, 16), seen: make([][]byte, 0, 32)}
			pk.rd = pk.cr
		}
	}
	return pk
}

// take claims the visible row at p, with resources res, and reports
// whether the pick may take it: false when a claim keeps it away.
func (pk *pick) take(p pos, res []int64) bool {
	if pk.a == nil {
		return true
	}
	if !pk.a.claim(pk.q.itemKey(p), pk.rm) {
		return false
	}
	pk.taking(p, res)
	return true
}

// claim claims the row at p, with resources res, that the pick takes
// although it chose it before (through the index): best effort, as the
// row stays in the read conflicts.
func (pk *pick) claim(p pos, res []int64) {
	if pk.a != nil {
		pk.a.claim(pk.q.itemKey(p), pk.rm)
		pk.taking(p, res)
	}
}

// taking records the keys of a row the pick takes: they stay in the read
// conflicts.
func (pk *pick) taking(p pos, res []int64) {
	q := pk.q
	pk.took = append(pk.took, q.itemKey(p))
	if len(q.resources) > 0 {
		pk.took = append(pk.took, q.entryKey(tagCells, q.cells.cellsOf(res), p), q.entryKey(tagShapes, res, p))
	}
}

// claimNow claims the visible row at p, which the pick chose through the
// fit index (its resources not read yet: claim records them), and reports
// whether it may take it: false when another attempt claimed it since the
// search looked. Claiming as soon as the choice is made, rather than once
// the row is read, leaves another pop of the same head no round trip in
// which to choose it too.
func (pk *pick) claimNow(p pos) bool {
	return pk.a == nil || pk.a.claim(pk.q.itemKey(p), pk.rm)
}

// maxResearch is how many times a fit pop searches the index again for a
// row another pop claimed meanwhile.
const maxResearch = 2

// claimed reports whether a claim keeps the pick from taking the visible
// row at p.
func (pk *pick) claimed(p pos) bool {
	if pk.a == nil {
		return false
	}
	// A search asks this of every head that can win: the key in a
	// buffer of its own, which the lookup does not keep.
	var buf [64]byte
	return pk.a.claimed(pk.q.appendItemKey(buf[:0], p))
}

// snapshot returns the snapshot view of the pick's transaction, for the
// reads a search makes ahead of the reads that use them (known.go).
func (pk *pick) snapshot() kv.ReadTransaction {
	if pk.snap == nil {
		pk.snap = pk.rd.Snapshot()
	}
	return pk.snap
}

// readsAhead reports whether the pick's search reads ranges ahead of the
// reads that use them (known.go): where a read waits for an answer, as on
// FoundationDB. On an engine that answers a read when it is issued
// (kv.AnswersAtIssue: memory: and file:) reading ahead saves no wait, and
// costs the rows' copies and answering from them: the reads that would
// use them read themselves, with the same answers and read conflicts.
func (pk *pick) readsAhead() bool { return !kv.AnswersAtIssue(pk.rd) }

// dirs returns the reads of the fit index's directories: serializable
// ones, with no holes, as a directory key changes only when its cell or
// shape empties, rarely (the holes are for rows, which other pops take).
func (pk *pick) dirs() kv.ReadTransaction {
	if pk.tr != nil {
		return pk.tr
	}
	return pk.rd
}

// forget drops what the pick read so far from its read conflicts (with
// an Attempt: a read transaction cannot drop its serializable reads),
// when what it reads next decides its choice alone.
func (pk *pick) forget() {
	if pk.cr != nil {
		pk.cr.forget()
	}
}

// done ends the pick: with an Attempt, it adds the read conflicts, the
// ranges its reads covered minus the keys they returned, but those of the
// rows it takes (see above).
func (pk *pick) done() error {
	if pk.cr == nil {
		return nil
	}
	rs, err := pk.cr.ranges()
	if err != nil {
		return err
	}
	seen, merged := pk.cr.seen, mergeRanges(rs)
	slices.SortFunc(seen, bytes.Compare)
	seen = slices.CompactFunc(seen, bytes.Equal)
	for _, r := range merged {
		for len(seen) > 0 && bytes.Compare(seen[0], r.End) < 0 {
			k := seen[0]
			seen = seen[1:]
			if bytes.Compare(k, r.Begin) < 0 || slices.ContainsFunc(pk.took, func(t []byte) bool { return bytes.Equal(t, k) }) {
				continue
			}
			if bytes.Compare(r.Begin, k) < 0 {
				if err := pk.a.AddReadConflictRange(kv.Range{Begin: r.Begin, End: k}); err != nil {
					return err
				}
			}
			r.Begin = kv.KeyAfter(k)
		}
		if bytes.Compare(r.Begin, r.End) < 0 {
			if err := pk.a.AddReadConflictRange(r); err != nil {
				return err
			}
		}
	}
	return nil
}
