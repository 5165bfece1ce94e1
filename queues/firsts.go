package queues

import (
	"bytes"
	"encoding/binary"
	"sync"
	"time"
	"unsafe"

	"github.com/fdbqueue/fdbqueue/kv"
)

// An Attempt remembers its one-key range reads (kv.First), the reads of a
// fit pop's cell and shape heads, and answers the same read again from
// memory. Several pops in one transaction (a combined group of statements,
// exec/combine.go, or an explicit transaction) each read the heads of
// every cell that fits them, about fifty for random limits, each a tree
// search; between two pops only the cells they popped from change. The
// transaction's view moves only with its own writes, and those go through
// the Attempt, which forgets every read whose range a write touches.
//
// A remembered read answers snapshot reads (a pick's conflictReader) and
// serializable ones; for the latter the Attempt adds the read conflict
// the read would have added. Reads start to be remembered at an
// attempt's second pick (most attempts pick once, and would only pay for
// the memory), or at its first in an attempt that says it runs several
// (Several: exec's combined groups), which also reads the cell
// directory whole once for the skip-scans of all its fit pops (dirKnown).
// With both, 32 consumers' pops (memory:, 100,000 tasks, random limits)
// answered 81% of their head reads from memory.
//
// An attempt of several pops whose commit was the only one since its read
// version hands what it remembers on to the next such attempt that reads
// at its commit (carried); so does a lone fit pop's attempt, while the
// next takes it over (carryAlone): a lone consumer's pop then reads the
// heads of the cells the pop before changed, not of fifty (memory:,
// 100,000 tasks, random limits, one consumer: 65 -> 44 us of CPU a pop).
//
// Measured (memory:, 100,000 tasks, fit pops with random limits through
// database/sql, medians of 3 interleaved runs): 32 consumers 10.2k ->
// 12.7k pops/s, 8 consumers 10.7k -> 11.3k (smaller groups), one
// consumer unchanged; at 32, 74% of the head reads were answered from
// memory.

// maxFirsts bounds the reads an Attempt remembers: past it, it forgets
// them all and starts over.
const maxFirsts = 1024

// remembered is what an Attempt remembers of its one-row reads, handed on
// whole to the next attempt (carried) and kept for another once released
// (firstsMems).
type remembered struct {
	firsts   []firstRead
	firstAt  map[string]int // each read's index in firsts, by its key (firstKey)
	firstBuf []byte
	// firstLo and firstHi bound the ranges in firsts.
	firstLo, firstHi []byte
	// firstSpans[i] is firsts[i]'s range abbreviated (firstSpan), for
	// the scan of every write (writesElse): 16 bytes a read, where a
	// firstRead is 200 and comparing its bounds reads two more places.
	// Each write of a lone fit pop scanned hundreds of carried reads
	// that way, 12% of the pop's CPU (memory:, random limits).
	firstSpans []firstSpan
	// firstAbbr is how many bytes firstLo and firstHi share, and so every
	// key between them: the abbreviations start there.
	firstAbbr int
}

// firstSpan is a remembered read's range [Begin, End) abbreviated: the 8
// bytes of each bound after the prefix every key between firstLo and
// firstHi shares (firstAbbr), big-endian, zero-padded past its end. For
// keys that share that prefix, taking those 8 bytes keeps their order or
// makes them equal, so a key k between firstLo and firstHi lies in the
// range only if lo <= abbr(k) <= hi: a write checks the bounds
// themselves only then. A forgotten read's span holds no key (deadSpan).
type firstSpan struct{ lo, hi uint64 }

var deadSpan = firstSpan{lo: ^uint64(0)}

// abbrAt returns the 8 bytes of k after its first at, big-endian,
// zero-padded past k's end (kv.Abbrev).
func abbrAt(k []byte, at int) uint64 { return kv.Abbrev(k[min(at, len(k)):]) }

// spanOf returns r's span (firstSpan).
func (m *remembered) spanOf(r kv.Range) firstSpan {
	return firstSpan{lo: abbrAt(r.Begin, m.firstAbbr), hi: abbrAt(r.End, m.firstAbbr)}
}

// firstRead is one remembered read; gone once a write forgot it.
type firstRead struct {
	key     string // its key in Attempt.firstAt
	r       kv.Range
	reverse bool
	e       kv.KeyValue
	ok      bool
	gone    bool
	// conflicts: the transaction has the read's conflict range (it was
	// read, or answered, serializably).
	conflicts bool
	// cov is the read's conflict range, once an answer from memory added
	// it: kept for the attempts it is carried to (carried).
	cov kv.Range
	// at is, once decoded, the position of e, the entry of a fit index
	// cell's head (dirCells.cellHead).
	at      pos
	decoded bool
}

// first reads the first key-value of r through rd (the Attempt's
// transaction, or its snapshot when serializable is false), or answers
// from a remembered read.
func (a *Attempt) first(rd kv.ReadTransaction, r kv.Range, reverse, serializable bool) (kv.KeyValue, bool, error) {
	if !a.remembers() {
		// A transaction's first pick: nothing to answer from yet, and
		// most transactions pick once.
		return kv.First(rd, r, reverse)
	}
	if e, ok, hit, err := a.recall(r, reverse, serializable); hit || err != nil {
		return e, ok, err
	}
	e, ok, err := kv.First(rd, r, reverse)
	if err != nil {
		return e, ok, err
	}
	a.remember(r, reverse, e, ok, serializable)
	return e, ok, nil
}

// remembers reports whether the attempt remembers its reads: from its
// second pick, or its first when it carries them (Several, carryAlone).
func (a *Attempt) remembers() bool { return a.picks >= 2 || a.carries }

// Several says that the attempt runs several statements that pick (a
// combined group of pops, exec/combine.go): it remembers its reads from
// its first pick, and reads the cell directory of a fit pop's search once
// (dirKnown), rather than from its second pick, when a lone pop would
// only pay for the memory; and it carries what it remembers to the next
// such attempt (carried).
func (a *Attempt) Several() { a.several, a.carries = true, true }

// carryAlone decides, at the first pick of a fit pop or lease in an
// attempt that does not run several (Several), whether the attempt
// remembers its reads from that pick on and carries them, as an attempt
// of several pops does: a lone consumer's pops, one attempt each, each
// read the heads of about fifty cells and skip-scan the directory, where
// the pop before changed one cell. It does on an engine whose commits
// tell that they were alone (committedAlone) and that answers a read when
// it is issued (kv.AnswersAtIssue: where reads wait, reads are issued in
// rounds instead), when it takes over what the attempt before it carried
// (adopt), and otherwise unless what attempts alone carried was wasted
// lately (aloneMissed): remembering and reading the directory whole cost
// a lone pop a third more (memory:, random limits) when no one takes
// them over, as where pushes commit between pops or pops run in
// attempts of their own concurrently. After m wasted in a row it carries
// again once 2^(m-1)-1 attempts did not, at most aloneProbe-1.
func (a *Attempt) carryAlone() {
	if a.several || a.picks > 0 || a.adopted {
		return
	}
	if _, ok := a.Transaction.(committedAlone); !ok || !kv.AnswersAtIssue(a.Transaction) {
		return
	}
	c := a.claims
	if took, _ := a.adopt(); took {
		c.aloneMissed.Store(0)
		c.aloneSkipped.Store(0)
		a.carries = true
		return
	}
	m, skipped := c.aloneMissed.Load(), c.aloneSkipped.Load()
	if m > 0 && skipped < min(1<<min(m-1, 30)-1, int64(aloneProbe)-1) {
		c.aloneSkipped.Add(1)
		return
	}
	c.aloneSkipped.Store(0)
	a.carries = true
}

// aloneProbe bounds how many attempts alone in a row do not carry their
// reads once carrying was wasted (carryAlone).
const aloneProbe = 64

// missedAlone counts what an attempt alone carried, or was carried to it,
// as wasted: its commit was not alone, it failed, or it found what was
// carried to it stale (carryAlone).
func (a *Attempt) missedAlone() {
	if !a.several {
		a.claims.aloneMissed.Add(1)
	}
}

// dirRead is the cell directory of a queue, read whole through the
// snapshot by an attempt that runs several fit pops: their skip-scans
// answer their reads from it, and add the read conflicts those reads
// would have (dirAhead.scan). It is dropped once the attempt writes in
// its range (a search clears the key of a cell it found empty).
type dirRead struct {
	k known
	// dc is k decoded for the skip-scans (cells), once decoded is set;
	// nil if it cannot answer them.
	dc      *dirCells
	decoded bool
}

// dirKnown returns the cell directory under base as one read, made now
// if the attempt has none, when the attempt carries its reads (Several,
// carryAlone); nil otherwise. The directory is read up to maxDirAhead
// keys: past them the skip-scan reads the rest itself.
func (a *Attempt) dirKnown(base []byte) (*known, error) {
	if !a.carries {
		return nil, nil
	}
	r := kv.PrefixRange(base)
	if d := a.dir; d != nil && bytes.Equal(d.k.r.Begin, r.Begin) {
		return &d.k, nil
	}
	k, err := a.readKnown(r, maxDirAhead)
	if err != nil {
		return nil, err
	}
	a.dir = &dirRead{k: k}
	return &a.dir.k, nil
}

// readKnown reads the first limit rows of r through the attempt's
// snapshot, for the reads of its pops to be answered from (known).
func (a *Attempt) readKnown(r kv.Range, limit int) (known, error) {
	rows, err := kv.GetRangeAsync(a.Transaction.Snapshot(), r, kv.RangeOptions{Limit: limit, Mode: kv.StreamingModeWantAll}).Get()
	if err != nil {
		return known{}, err
	}
	return newKnown(r, limit, rows), nil
}

// committedAlone is an engine's transaction that tells, once it
// committed, the version of its commit, and whether that was the only
// commit since its read version (kv/embedded's: its commits take
// consecutive versions). At that version the database is what the
// transaction read with its own writes applied.
type committedAlone interface {
	CommittedAlone() (version int64, alone bool)
}

// carried is what an attempt that carries its reads (Several,
// carryAlone) remembered (its one-row reads, its reads of the cell
// directory and of the items' head) when it committed alone: what its own
// writes did not make it forget is still the database's at its commit's
// version. The next such attempt that reads at that version takes it
// over from its first pick (adopt): a group of pops
// reads the heads of most cells, and the next group, without this, read
// them all again (the heads the engine answered were 30% of a pop's
// time with 8 consumers, memory:). Its read conflicts are the same: a
// remembered read answered serializably adds the conflict the read would
// have (recall), and the attempt starts with none.
type carried struct {
	ver   int64
	rem   remembered
	dir   *dirRead
	items *known
}

// carryLocked hands what the attempt, which carries its reads (Several,
// carryAlone) and just committed, remembers to the next attempt of its
// Claims, if its commit was alone (committedAlone). Callers hold the
// Claims' mu.
func (a *Attempt) carryLocked() {
	if !a.carries || a.firstAt == nil && a.dir == nil && a.items == nil {
		return
	}
	ca, ok := a.Transaction.(committedAlone)
	if !ok {
		return
	}
	ver, alone := ca.CommittedAlone()
	if !alone {
		if a.writes > 0 { // (a commit without writes tells nothing)
			a.missedAlone()
		}
		return
	}
	c := a.claims
	if old := c.carry; old != nil {
		old.drop()
	}
	a.compactFirsts()
	c.carry = &carried{ver: ver, rem: a.remembered, dir: a.dir, items: a.items}
	a.remembered, a.dir, a.items = remembered{}, nil, nil
	c.armSweepLocked()
}

// carryIdle is how long a carry no attempt takes over is kept, at least
// (at most twice that). What a carry holds points into the engine's
// records, and keeps their blocks (32 KiB each in kv/embedded) alive: a
// consumer that goes idle while other writers churn the database would
// otherwise pin up to a few thousand of them until its next pop. A
// consumer that pops less often than this reads afresh anyway: its
// carry is stale by then unless nothing at all was written.
const carryIdle = time.Second

// armSweepLocked numbers the carry just kept and makes sure a timer will
// drop it if no attempt takes it over within one or two idle periods:
// the timer fires every period while there is a carry, and drops the
// carry it saw the time before if that is still the one kept. Arming
// costs a pop nothing while the timer runs, where resetting a timer at
// every carry would cost each one. Callers hold mu.
func (c *Claims) armSweepLocked() {
	c.carries++
	if c.sweeping {
		return
	}
	c.sweeping, c.seen = true, 0
	if c.sweep == nil {
		c.sweep = time.AfterFunc(c.idle, c.sweepCarry)
		return
	}
	c.sweep.Reset(c.idle)
}

// sweepCarry drops the carry if it is the one it saw an idle period
// ago, and fires again while a newer one is kept.
func (c *Claims) sweepCarry() {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch cr := c.carry; {
	case cr == nil:
		c.sweeping = false // armed again by the next carry
	case c.seen == c.carries:
		c.carry, c.sweeping = nil, false
		cr.drop()
	default:
		c.seen = c.carries
		c.sweep.Reset(c.idle)
	}
}

// adopt takes over what the attempt before it carried (carryLocked), if
// it reads at that attempt's commit, and reports whether it did, and
// whether anything was carried: at the first pick of an attempt that
// carries its reads, before it remembers anything of its own.
func (a *Attempt) adopt() (took, carried bool) {
	a.adopted = true
	c := a.claims
	c.mu.Lock()
	cr := c.carry
	c.carry = nil
	c.mu.Unlock()
	if cr == nil {
		return false, false
	}
	rv, err := a.Transaction.GetReadVersion()
	// Writes before the first pick (a fit pop's promote, moving items
	// whose delay ended back into the indexes) had nothing to forget:
	// what was carried does not hold them.
	if err != nil || rv != cr.ver || a.firstAt != nil || a.dir != nil || a.items != nil || a.writes != 0 {
		c.refused.Add(1)
		a.missedAlone()
		cr.drop()
		return false, true
	}
	c.adopted.Add(1)
	for i := range cr.rem.firsts {
		cr.rem.firsts[i].conflicts = false // none in this attempt yet
	}
	a.remembered, a.dir, a.items = cr.rem, cr.dir, cr.items
	return true, true
}

// drop gives the memory of reads carried and not taken over back.
func (cr *carried) drop() {
	if cr.rem.firstAt == nil {
		return
	}
	cr.rem.release()
}

// compactFirsts drops the reads the attempt forgot (wrote) from firsts,
// whose every write scans them. The last reads fill the holes: a pop
// forgets a few reads of hundreds, and moving only those few keeps
// their indexes in firstAt, which moving every read after a hole
// rewrote (6% of a lone pop's time, memory:).
func (a *Attempt) compactFirsts() {
	// The decoded directory's slots follow the reads (dirCells.remap).
	var to []int
	if a.dir != nil && a.dir.dc != nil {
		to = bump(&a.dir.dc.to, len(a.firsts))
		a.dir.dc.to = a.dir.dc.to[:0]
		for i := range to {
			to[i] = i
		}
	}
	n := len(a.firsts)
	for i := 0; i < n; i++ {
		if !a.firsts[i].gone {
			continue
		}
		if to != nil {
			to[i] = -1
		}
		for n--; n > i && a.firsts[n].gone; n-- {
			if to != nil {
				to[n] = -1
			}
		}
		if n > i {
			a.firsts[i] = a.firsts[n]
			a.firstSpans[i] = a.firstSpans[n]
			a.firstAt[a.firsts[i].key] = i
			if to != nil {
				to[n] = i
			}
		}
	}
	clear(a.firsts[n:])
	a.firsts, a.firstSpans = a.firsts[:n], a.firstSpans[:n]
	// firstLo and firstHi still bound the reads left: looser bounds cost
	// a write the scan of the reads only where it falls between them,
	// and computing them again cost a lone pop 2 us (memory:).
	if to != nil {
		a.dir.dc.remap(to)
	}
}

// firstsMems keeps the memory of an Attempt's remembered reads for the
// next attempt that remembers once one is released: an attempt of a
// group of pops remembers hundreds of reads, and growing their array and
// map anew for each cost a fifth of the bytes a pop allocated (32
// consumers, memory:).
var firstsMems = sync.Pool{New: func() any { return &remembered{firstAt: make(map[string]int)} }}

// forgetFirsts drops the attempt's remembered reads, and gives their
// memory back for another attempt, once it is released.
func (a *Attempt) forgetFirsts() {
	a.dir, a.items = nil, nil
	if a.firstAt == nil {
		return
	}
	a.remembered.release()
	a.remembered = remembered{}
}

// release gives m's memory back for another attempt (firstsMems).
func (m *remembered) release() {
	clear(m.firsts)
	clear(m.firstAt)
	firstsMems.Put(&remembered{firsts: m.firsts[:0], firstAt: m.firstAt, firstBuf: m.firstBuf[:0], firstSpans: m.firstSpans[:0]})
}

// firstKey returns the key of a one-row read of r in firstAt, in firstBuf:
// both bounds, the length of the first, the direction.
func (a *Attempt) firstKey(r kv.Range, reverse bool) []byte {
	b := append(append(a.firstBuf[:0], r.Begin...), r.End...)
	b = binary.AppendUvarint(b, uint64(len(r.Begin)))
	if reverse {
		b = append(b, 1)
	}
	a.firstBuf = b
	return b
}

// recall answers a one-row read of r from the remembered reads: hit
// reports whether it remembers one. For a serializable read the
// transaction gets the read's conflict range.
func (a *Attempt) recall(r kv.Range, reverse, serializable bool) (e kv.KeyValue, ok, hit bool, err error) {
	i, hit := a.firstAt[string(a.firstKey(r, reverse))]
	if !hit {
		return kv.KeyValue{}, false, false, nil
	}
	e, ok, err = a.answer(i, serializable)
	return e, ok, err == nil, err
}

// answer answers a read from the remembered read firsts[i]; for a
// serializable read the transaction gets the read's conflict range.
func (a *Attempt) answer(i int, serializable bool) (kv.KeyValue, bool, error) {
	f := &a.firsts[i]
	if serializable && !f.conflicts {
		if f.cov.End == nil {
			f.cov = covered(f.r, f.reverse, f.e, f.ok) // f.r: never written
		}
		if err := a.Transaction.AddReadConflictRange(f.cov); err != nil {
			return kv.KeyValue{}, false, err
		}
		f.conflicts = true
	}
	return f.e, f.ok, nil
}

// remember remembers the answer of a one-row read of r, made serializably
// or not.
func (a *Attempt) remember(r kv.Range, reverse bool, e kv.KeyValue, ok, serializable bool) {
	if len(a.firsts) == maxFirsts {
		clear(a.firstAt)
		clear(a.firsts)
		a.firsts, a.firstSpans = a.firsts[:0], a.firstSpans[:0]
	}
	if a.firstAt == nil {
		a.remembered = *firstsMems.Get().(*remembered)
	}
	k := string(a.firstKey(r, reverse))
	a.firstAt[k] = len(a.firsts)
	// The range's bounds are read from the key, which holds them: never
	// written to.
	kb := unsafe.Slice(unsafe.StringData(k), len(r.Begin)+len(r.End))
	kr := kv.Range{Begin: kb[:len(r.Begin):len(r.Begin)], End: kb[len(r.Begin):]}
	if len(a.firsts) == 0 {
		a.firstLo, a.firstHi = kr.Begin, kr.End
		a.firstAbbr = kv.CommonPrefix(kr.Begin, kr.End)
	} else if lo, hi := bytes.Compare(kr.Begin, a.firstLo) < 0, bytes.Compare(kr.End, a.firstHi) > 0; lo || hi {
		if lo {
			a.firstLo = kr.Begin
		}
		if hi {
			a.firstHi = kr.End
		}
		if p := kv.CommonPrefix(a.firstLo, a.firstHi); p < a.firstAbbr {
			// Wider bounds share fewer bytes: abbreviate every
			// range again after them.
			a.firstAbbr = p
			for i := range a.firsts {
				if !a.firsts[i].gone {
					a.firstSpans[i] = a.spanOf(a.firsts[i].r)
				}
			}
		}
	}
	a.firsts = append(a.firsts, firstRead{key: k, r: kr, reverse: reverse, e: e, ok: ok, conflicts: serializable})
	a.firstSpans = append(a.firstSpans, a.spanOf(kr))
}

// oneRow is a one-row range read (kv.First) issued in a round: a search
// issues every read of a round (issueFirst), then takes each answer (get).
type oneRow struct {
	f   kv.FutureRange // nil once answered
	e   kv.KeyValue
	ok  bool
	err error
	mem *firstMemo // set: the answer is to be remembered once it is in
	// at is e's position as a fit index entry, if decoded (as a cell's
	// head answered from memory is: dirCells.cellHead).
	at      pos
	decoded bool
}

// firstMemo is what an Attempt needs to remember a one-row read issued in
// its second pick or later, once the answer is in: unless it wrote since
// the read was issued (writes then), as the answer is as of the issue.
type firstMemo struct {
	a            *Attempt
	r            kv.Range // owned by the read: not reused before get
	reverse      bool
	writes       uint64
	serializable bool
}

// issueFirst issues the one-row read of r through rd (a pick's reader)
// into o, or answers it from an Attempt's remembered reads when rd is the
// Attempt or its conflictReader. On an engine that answers a read when it
// is issued (kv.AnswersAtIssue: memory: and file:), it makes the read now,
// as First does, into o: a future would cost an allocation and save no
// wait.
func issueFirst(rd kv.ReadTransaction, r kv.Range, reverse bool, o *oneRow) {
	*o = oneRow{}
	via, a, cr := attemptOf(rd)
	remember := a != nil && a.remembers()
	if remember {
		e, ok, hit, err := a.recall(r, reverse, cr == nil)
		if hit || err != nil {
			if hit && cr != nil {
				cr.recordFirst(r, reverse, e, ok)
			}
			o.e, o.ok, o.err = e, ok, err
			return
		}
	}
	if kv.AnswersAtIssue(via) {
		if cr != nil {
			// Its First records the read and remembers it.
			o.e, o.ok, o.err = cr.First(r, reverse)
			return
		}
		o.e, o.ok, o.err = kv.First(via, r, reverse)
		if remember && o.err == nil {
			a.remember(r, reverse, o.e, o.ok, true)
		}
		return
	}
	if remember {
		o.mem = &firstMemo{a: a, r: r, reverse: reverse, writes: a.writes, serializable: cr == nil}
	}
	o.f = kv.GetRangeAsync(via, r, kv.RangeOptions{Limit: 1, Reverse: reverse})
}

// attemptOf returns the Attempt that rd (a pick's reader) reads in, if
// any, and the conflictReader it is, if it is one; via is what reads the
// engine: the Attempt's transaction, or rd.
func attemptOf(rd kv.ReadTransaction) (via kv.ReadTransaction, a *Attempt, cr *conflictReader) {
	switch x := rd.(type) {
	case *Attempt:
		return x.Transaction, x, nil
	case *conflictReader:
		return rd, x.a, x
	}
	return rd, nil, nil
}

// get returns the read's answer, waiting for it if need be.
func (o *oneRow) get() (kv.KeyValue, bool, error) {
	if o.f == nil {
		return o.e, o.ok, o.err
	}
	rows, err := o.f.Get()
	o.f = nil
	if err != nil {
		o.err = err
		return kv.KeyValue{}, false, err
	}
	if len(rows) > 0 {
		o.e, o.ok = rows[0], true
	}
	if m := o.mem; m != nil && m.a.writes == m.writes {
		m.a.remember(m.r, m.reverse, o.e, o.ok, m.serializable)
	}
	return o.e, o.ok, nil
}

// covered returns the range a one-key read of r covered: up to the key it
// found, or from it reading in reverse, or all of r when it found none.
func covered(r kv.Range, reverse bool, e kv.KeyValue, ok bool) kv.Range {
	switch {
	case !ok:
		return r
	case reverse:
		return kv.Range{Begin: e.Key, End: r.End}
	}
	return kv.Range{Begin: r.Begin, End: kv.KeyAfter(e.Key)}
}

// wrote forgets the remembered reads whose ranges hold a key in [begin,
// end): end nil stands for the one key begin.
func (a *Attempt) wrote(begin, end []byte) {
	a.wroteItems(begin, end, false)
	a.writesElse(begin, end)
}

// wroteClear is wrote for a clear of the one key begin: the items read
// drops just its row (wroteItems).
func (a *Attempt) wroteClear(key []byte) {
	a.wroteItems(key, nil, true)
	a.writesElse(key, nil)
}

// writesElse is wrote but for the items read.
func (a *Attempt) writesElse(begin, end []byte) {
	a.writes++
	if d := a.dir; d != nil && (end == nil && d.k.r.Contains(begin) ||
		end != nil && bytes.Compare(begin, d.k.r.End) < 0 && bytes.Compare(d.k.r.Begin, end) < 0) {
		a.dir = nil
	}
	if len(a.firstAt) == 0 || bytes.Compare(begin, a.firstHi) >= 0 ||
		bytes.Compare(a.firstLo, begin) > 0 && (end == nil || bytes.Compare(a.firstLo, end) >= 0) {
		return // outside every remembered range
	}
	if end == nil {
		// begin lies between firstLo and firstHi: its abbreviation
		// says which ranges may hold it (firstSpan).
		ab := abbrAt(begin, a.firstAbbr)
		for i, sp := range a.firstSpans {
			if ab < sp.lo || ab > sp.hi || !a.firsts[i].r.Contains(begin) {
				continue
			}
			a.forget(i)
		}
		return
	}
	for i := range a.firsts {
		f := &a.firsts[i]
		if f.gone || bytes.Compare(begin, f.r.End) >= 0 || bytes.Compare(f.r.Begin, end) >= 0 {
			continue
		}
		a.forget(i)
	}
}

// forget forgets the remembered read firsts[i], which a write changed.
func (a *Attempt) forget(i int) {
	f := &a.firsts[i]
	delete(a.firstAt, f.key)
	f.gone = true
	a.firstSpans[i] = deadSpan
}

// First is kv.First, answered from the Attempt's remembered reads when it
// can.
func (a *Attempt) First(r kv.Range, reverse bool) (kv.KeyValue, bool, error) {
	return a.first(a.Transaction, r, reverse, true)
}

// GetMany keeps the engine's path for reading many keys (kv.GetMany).
func (a *Attempt) GetMany(keys [][]byte) ([][]byte, error) {
	return kv.GetMany(a.Transaction, keys)
}

// AnswersAtIssue is the engine's (kv.AnswersAtIssue).
func (a *Attempt) AnswersAtIssue() bool { return kv.AnswersAtIssue(a.Transaction) }

// GetAsync and GetRangeAsync keep the engine's reads in flight together
// (kv.GetAsync, kv.GetRangeAsync). They do not use the remembered reads,
// which answer First, and the one-row reads of a search's rounds
// (issueFirst).
func (a *Attempt) GetAsync(key []byte) kv.FutureValue { return kv.GetAsync(a.Transaction, key) }

func (a *Attempt) GetRangeAsync(r kv.Range, opts kv.RangeOptions) kv.FutureRange {
	return kv.GetRangeAsync(a.Transaction, r, opts)
}

// AddWriteConflictRange and WriteConflictRanges are the engine's
// (kv.AddWriteConflictRange).
func (a *Attempt) AddWriteConflictRange(r kv.Range) error {
	return kv.AddWriteConflictRange(a.Transaction, r)
}

func (a *Attempt) WriteConflictRanges() kv.WriteConflictRangeSupport {
	return kv.WriteConflictRangesOf(a.Transaction)
}

// MetadataVersion and BumpMetadataVersion reach the engine's metadata
// version (kv.MetadataVersion): a bump lost here would leave every cache
// checked against it stale.
func (a *Attempt) MetadataVersion() ([]byte, error) { return kv.MetadataVersion(a.Transaction) }

func (a *Attempt) BumpMetadataVersion() { kv.BumpMetadataVersion(a.Transaction) }

// The writes of an Attempt forget the reads they change.

func (a *Attempt) Set(key, value []byte) {
	a.wrote(key, nil)
	a.Transaction.Set(key, value)
}

func (a *Attempt) Clear(key []byte) {
	a.wroteClear(key)
	a.Transaction.Clear(key)
}

func (a *Attempt) ClearRange(r kv.Range) {
	a.wrote(r.Begin, r.End)
	a.Transaction.ClearRange(r)
}

func (a *Attempt) Add(key []byte, delta int64) {
	a.wrote(key, nil)
	a.Transaction.Add(key, delta)
}

func (a *Attempt) BitAnd(key, param []byte) {
	a.wrote(key, nil)
	a.Transaction.BitAnd(key, param)
}

func (a *Attempt) CompareAndClear(key, value []byte) {
	a.wrote(key, nil)
	a.Transaction.CompareAndClear(key, value)
}
