package queues

import (
	"bytes"
	"fmt"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// Push adds it to the queue. it.ID must be positive and unique in the queue
// (see NewID); ErrDuplicateID is returned otherwise. Push is idempotent: a
// retry of a push that was applied (after commit_unknown_result) finds the
// push's marker and does nothing, so make the id outside the transaction.
func (q *Queue) Push(tr kv.Transaction, it Item) error {
	if err := q.checkItem(it); err != nil {
		return err
	}
	done, err := q.markPushed(tr, it.ID)
	if err != nil || done {
		return err
	}
	if err := q.push(tr, it); err != nil {
		return err
	}
	q.signal(tr, 1)
	q.AddStat(tr, StatPushed, 1)
	return nil
}

// PushAll pushes items as one operation. With a token (not the zero Token) it is
// exactly-once under commit_unknown_result for a fraction of Push's cost:
// it records one receipt under the token instead of a marker per item, and
// an attempt that finds the receipt pushes nothing and reports false (an
// earlier attempt was applied). Without a token it writes no marker at all,
// for callers whose retries push under new ids anyway.
//
// Push and PushAll wake the consumers waiting on the queue (see
// WatchSignal) when their transaction commits.
func (q *Queue) PushAll(tr kv.Transaction, token Token, items []Item) (bool, error) {
	return q.pushAll(tr, token, items, true)
}

// PushSome is PushAll for a caller that decides which items to push once
// the push's reads are in: keep runs after the push read the seqs and
// checked the ids (one round trip on FoundationDB, with the reads the
// caller issued before the call, such as exec's unique keys), before it
// writes anything, and returns which of items to push (nil: all), or an
// error, which ends the push with nothing written. It returns which items
// were pushed (nil: all) and, as PushAll, whether this attempt applied
// the push: with a token, the receipt records which items were pushed, and
// an attempt that finds it pushes nothing, does not call keep, and returns
// what the receipt says with false.
func (q *Queue) PushSome(tr kv.Transaction, token Token, items []Item, keep func() ([]bool, error)) ([]bool, bool, error) {
	return q.pushSome(tr, token, items, true, keep)
}

// pushAll adds items as one operation: PushAll's and PutBack's body (see
// PushAll for token). With next, each item takes the next seq of its
// priority (nextSeqs); without, its own (PutBack).
func (q *Queue) pushAll(tr kv.Transaction, token Token, items []Item, next bool) (bool, error) {
	_, applied, err := q.pushSome(tr, token, items, next, nil)
	return applied, err
}

// pushSome is pushAll with PushSome's keep (nil: push every item).
//
// Its reads are independent of each other, and issued together: the
// receipt (only on an attempt after one that may have been applied), the
// seqs of every priority (nextSeqs), the id and directory checks
// (checkNew). On FoundationDB that is one round trip, for one row or a
// hundred of any number of priorities.
func (q *Queue) pushSome(tr kv.Transaction, token Token, items []Item, next bool, keep func() ([]bool, error)) ([]bool, bool, error) {
	for _, it := range items {
		if err := q.checkItem(it); err != nil {
			return nil, false, err
		}
	}
	if parts, done, err := q.receipts.Lookup(tr, token); err != nil || done {
		if err != nil {
			return nil, false, err
		}
		pushed, err := pushedOf(parts, len(items))
		return pushed, false, err
	}
	sc := scratchPool.Get().(*scratch)
	defer sc.put()
	var seqs *nextSeqs
	if next {
		seqs = q.readSeqs(tr, items, &sc.seqs) // in flight during checkNew's wait
	}
	// One clock read for the statement: the directories checkNew makes
	// sure of are those of the items pushChecked then finds visible.
	sc.now = q.opts.now()
	var r run
	var sw sweepRead
	inRun := false
	if next {
		if r, inRun = q.planRun(tr, items, sc.now.UnixNano()); inRun {
			sw = q.readSweep(tr.Snapshot()) // with checkNew's reads
		}
	}
	dirs, pushed, met, err := q.checkNew(tr, items, sc.now.UnixNano(), keep, sc)
	if err != nil {
		return nil, false, err
	}
	if inRun && (met || slices.Contains(pushed, false)) {
		inRun = false
	}
	if inRun {
		for _, prio := range r.prios { // the first seq above all of theirs
			seq, err := seqs.peek(prio)
			if err != nil {
				return nil, false, err
			}
			r.seq = max(r.seq, seq)
		}
		inRun = r.fits()
	}
	if inRun {
		// Before the writes: a read after them would sort them for
		// itself (the engine's read-your-writes), as the commit does.
		if err := q.sweepRuns(tr, sw); err != nil {
			return nil, false, err
		}
	}
	n := 0 // items pushed
	for i, it := range items {
		if pushed != nil && !pushed[i] {
			continue
		}
		n++
		seq := it.Seq
		switch {
		case inRun:
			seq = r.seq + int64(i)
		case seqs != nil:
			if seq, err = seqs.next(q.prioOf(it)); err != nil {
				return nil, false, err
			}
		}
		if err := q.pushChecked(tr, it, seq, dirs, sc, !inRun); err != nil {
			return nil, false, err
		}
	}
	if inRun {
		if err := q.writeRun(tr, r); err != nil {
			return nil, false, err
		}
	}
	sc.tallies.flush(tr)
	if n > 0 { // one ADD each for the whole operation
		tr.Add(q.countKey(), int64(n))
		q.signal(tr, n)
		stat := StatPushed
		if !next {
			stat = StatReturned
		}
		q.AddStat(tr, stat, int64(n))
	}
	return pushed, true, q.receipts.Record(tr, token, pushedPart(pushed))
}

// pushedPart is the receipt of a push of the items pushed says (nil:
// all): "" when it pushed every item, as PushAll's receipts, else a bit
// set, bit i set for the i-th item pushed, of at least one byte.
func pushedPart(pushed []bool) []byte {
	if pushed == nil || !slices.Contains(pushed, false) {
		return nil
	}
	b := make([]byte, (len(pushed)+7)/8)
	for i, p := range pushed {
		if p {
			b[i/8] |= 1 << (i % 8)
		}
	}
	return b
}

// pushedOf reads a push receipt's parts (pushedPart) for n items.
func pushedOf(parts [][]byte, n int) ([]bool, error) {
	if len(parts) != 1 || len(parts[0]) != 0 && len(parts[0]) != (n+7)/8 {
		return nil, fmt.Errorf("%w: push receipt of %d parts for %d items", ErrCorrupt, len(parts), n)
	}
	if len(parts[0]) == 0 {
		return nil, nil
	}
	pushed := make([]bool, n)
	for i := range pushed {
		pushed[i] = parts[0][i/8]&(1<<(i%8)) != 0
	}
	return pushed, nil
}

func (q *Queue) checkItem(it Item) error {
	if it.ID <= 0 {
		return fmt.Errorf("%w: id %d is not positive", ErrInvalidItem, it.ID)
	}
	if it.Attempts < 0 {
		return fmt.Errorf("%w: %d attempts: attempts are 0 or more", ErrInvalidItem, it.Attempts)
	}
	if !ValidVisibleAt(it.VisibleAt) {
		return fmt.Errorf("%w: visible_at %s: it is %s", ErrInvalidItem, it.VisibleAt.UTC().Format(time.RFC3339Nano), VisibleAtRange)
	}
	return q.checkResources(it.Resources, "resources")
}

// push adds it without a push marker: visible, or invisible until
// it.VisibleAt when that is in the future (a delayed item).
func (q *Queue) push(tr kv.Transaction, it Item) error {
	seq, err := q.nextSeq(tr, q.prioOf(it))
	if err != nil {
		return err
	}
	if err := q.pushAt(tr, it, seq, nil); err != nil {
		return err
	}
	tr.Add(q.countKey(), 1)
	return nil
}

// prioOf is the priority it is pushed under: its own in a priority queue,
// 0 in a FIFO one.
func (q *Queue) prioOf(it Item) int64 {
	if q.kind == Priority {
		return it.Priority
	}
	return 0
}

// checkNew reads, in one kv.GetMany, the id keys of items, which must be
// absent (ErrDuplicateID), and the directory keys of the cells and shapes
// the ones visible at now go into, and writes those that are absent. It returns
// the directory keys it made sure of (see ensureDir). Two items with one
// id are ErrDuplicateID too, as the second would find the first's key.
// A run of minIDRun or more consecutive ids is read as one range instead
// (idRun): one search of the tree and one read conflict range, not
// one of each a row. Measured, memory:, 100-row INSERTs, 5 runs
// interleaved: 1 client 165k -> 168k rows/s, 8 clients 172k -> 196k
// (their commits check fewer read ranges), 3,360 -> 3,109 bytes
// allocated a row.
//
// The runs' reads and the GetMany are issued together (one round trip on
// FoundationDB, with the seqs' reads a push issued before). They are made
// through the snapshot, and their read conflicts added once the checks
// are done, as the same reads made one after the other, serializably,
// would have added them: a run that holds a queued id ends the checks
// there. keep, if not nil, runs once the reads are in, before any write,
// and says which items are pushed (see PushSome): only their directory
// keys are written.
//
// Where the queue may hold runs (see Runs), the ids are also checked
// against them (runsMet: one more read for each run of consecutive ids,
// with the others where reads wait for their answer), and checkNew
// reports whether a run holds any of them, queued or not: the push then
// makes no run of its own.
func (q *Queue) checkNew(tr kv.Transaction, items []Item, now int64, keep func() ([]bool, error), sc *scratch) (*dirSet, []bool, bool, error) {
	dirs := &sc.dirs
	ids := sc.ids[:0]
	for _, it := range items {
		ids = append(ids, it.ID)
	}
	sc.ids = ids
	slices.Sort(ids)
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] {
			return nil, nil, false, fmt.Errorf("%w: id %d is given twice", ErrDuplicateID, ids[i])
		}
	}
	// Runs of consecutive ids (NewID hands them out in blocks) are read
	// as one range each, which must be empty; lone ids with the
	// directory keys below, in one GetMany.
	snap := tr.Snapshot()
	var runs []idRun
	var lones [][]byte
	segs := sc.segs[:0]
	mayRuns, atIssue := mayHoldRuns(tr), kv.AnswersAtIssue(tr)
	for i := 0; i < len(ids); {
		j := i + 1
		for j < len(ids) && ids[j] == ids[j-1]+1 {
			j++
		}
		if mayRuns {
			seg := runSeg{first: ids[i], last: ids[j-1]}
			if !atIssue {
				seg.read = q.readRunAt(snap, seg.last) // with the reads below
			}
			segs = append(segs, seg)
		}
		if j-i < minIDRun {
			for _, id := range ids[i:j] {
				lones = append(lones, q.idKey(id))
			}
		} else {
			runs = append(runs, q.readIDRun(snap, ids[i], ids[j-1]))
		}
		i = j
	}
	lone := len(lones)
	q.dirKeys(items, now, dirs)
	keys := dirs.keys // no lone ids (a push of new ids in runs): the set's own
	if lone > 0 {
		keys = append(make([][]byte, 0, lone+len(dirs.keys)), lones...)
		keys = append(keys, dirs.keys...)
	}
	sc.segs = segs
	vals, err := kv.GetMany(snap, keys)
	if err != nil {
		return nil, nil, false, err
	}
	for _, run := range runs {
		if err := run.check(tr); err != nil {
			return nil, nil, false, err
		}
	}
	var dirConflicts []byte // those of the directory keys found (readDir), in one block
	for i, k := range keys {
		if i >= lone && vals[i] == nil {
			continue // absent: see ensureDir
		}
		if i >= lone {
			if dirConflicts == nil {
				dirConflicts = make([]byte, 0, (len(keys)-i)*(len(k)+4))
			}
			start := len(dirConflicts)
			dirConflicts = q.appendDirConflict(dirConflicts, k)
			k = dirConflicts[start:len(dirConflicts):len(dirConflicts)]
		}
		if err := tr.AddReadConflictKey(k); err != nil {
			return nil, nil, false, err
		}
	}
	for i, k := range keys[:lone] {
		if vals[i] != nil {
			return nil, nil, false, q.duplicateID(k)
		}
	}
	met, err := q.runsMet(tr, segs)
	if err != nil {
		return nil, nil, false, err
	}
	var pushed []bool
	if keep != nil {
		if pushed, err = keep(); err != nil {
			return nil, nil, false, err
		}
		if pushed != nil && len(pushed) != len(items) {
			return nil, nil, false, fmt.Errorf("%w: %d items to keep or not for %d items", ErrInvalidItem, len(pushed), len(items))
		}
	}
	// The directories that are not there yet, of the items pushed.
	var needed map[string]bool
	if pushed != nil {
		needed = map[string]bool{}
		var buf [128]byte
		for i, it := range items {
			if pushed[i] && len(it.Resources) > 0 && nanos(it.VisibleAt) <= now {
				needed[string(q.appendKey(buf[:0], tagCellDir, q.cells.cellsOf(it.Resources)...))] = true
				needed[string(q.appendKey(buf[:0], tagShapeDir, it.Resources...))] = true
			}
		}
	}
	for i, k := range keys[lone:] {
		if vals[lone+i] == nil && (needed == nil || needed[string(k)]) {
			tr.Set(k, nil)
		}
	}
	return dirs, pushed, met, nil
}

// dirKeys fills dirs, a zero set, with the directory keys of the cells
// and shapes of items visible at now, each key once in its keys, in the order the
// items first name them. Each key is built in a buffer on the stack and
// copied only when new, into the set's arena, which its string shares: a
// 100-row INSERT of a few dozen cells and shapes copies those, where
// building every item's keys, a copy of them all and a map sized for them
// all was 250 bytes a row.
func (q *Queue) dirKeys(items []Item, now int64, dirs *dirSet) {
	dirs.init(min(2*len(items), maxDirsHint))
	var buf [128]byte
	var cells [8]int64
	for _, it := range items {
		if len(it.Resources) == 0 || nanos(it.VisibleAt) > now {
			continue
		}
		k := q.appendKey(buf[:0], tagCellDir, q.cells.appendCells(cells[:0], it.Resources)...)
		if !dirs.has(k) {
			dirs.keep(k, len(items))
		}
		if !q.cells.exact(it.Resources) {
			k = q.appendKey(buf[:0], tagShapeDir, it.Resources...)
			if !dirs.has(k) {
				dirs.keep(k, len(items))
			}
		}
	}
}

// maxDirsHint bounds the size dirKeys makes a set's map for: a push's
// items fill at most a few hundred cells and shapes (fdbqueue bench's
// 100-row INSERTs: about a hundred), however many they are.
const maxDirsHint = 256

// minIDRun is the fewest consecutive ids checkNew reads as a range.
const minIDRun = 4

// idRun is a read of the id index's range of a run of ids, through a
// snapshot, in flight: the run is new if the range is empty.
type idRun struct {
	q    *Queue
	r    kv.Range
	head kv.FutureRange
}

// readIDRun issues the read of the id index's range of the ids in [first,
// last].
func (q *Queue) readIDRun(snap kv.ReadTransaction, first, last int64) idRun {
	r := kv.Range{Begin: q.idKey(first), End: kv.KeyAfter(q.idKey(last))}
	return idRun{q: q, r: r, head: kv.GetRangeAsync(snap, r, kv.RangeOptions{Limit: 1})}
}

// check adds the read conflict the read would have added made through tr
// (the range up to the first id found, all of it when none), and fails
// with ErrDuplicateID if it found a queued id.
func (run idRun) check(tr kv.Transaction) error {
	rows, err := run.head.Get()
	if err != nil {
		return err
	}
	var e kv.KeyValue
	if len(rows) == 1 {
		e = rows[0]
	}
	if err := tr.AddReadConflictRange(covered(run.r, false, e, len(rows) == 1)); err != nil {
		return err
	}
	if len(rows) == 1 {
		return run.q.duplicateID(e.Key)
	}
	return nil
}

// duplicateID returns the DuplicateIDError of the id index key k, found
// where a new item's key was to go.
func (q *Queue) duplicateID(k []byte) error {
	id, err := q.idOfKey(k)
	if err != nil {
		return err
	}
	return &DuplicateIDError{ID: id}
}

// pushAt adds it at seq (see nextSeq), without counting it: the caller
// adds to the count, PushAll once for all its items. dirs, if not nil,
// holds the directory keys this transaction already made sure of.
func (q *Queue) pushAt(tr kv.Transaction, it Item, seq int64, dirs *dirSet) error {
	if _, _, queued, err := q.lookup(tr, it.ID); err != nil {
		return err
	} else if queued {
		return &DuplicateIDError{ID: it.ID}
	}
	return q.pushChecked(tr, it, seq, dirs, nil, true)
}

// pushChecked is pushAt for an item whose id is known to be new. Its keys
// and values go through sc, if not nil.
//
// An item without a PushedAt gets the clock's time: every item pushed is
// counted by the statistics (see stats.go). An invisible one is leased if
// it.Held says so (Move keeps it), delayed otherwise.
func (q *Queue) pushChecked(tr kv.Transaction, it Item, seq int64, dirs *dirSet, sc *scratch, idKey bool) error {
	p := pos{id: it.ID, seq: seq}
	if q.kind == Priority {
		p.prio = it.Priority
	}
	now := sc.clock(q)
	if it.PushedAt.IsZero() {
		it.PushedAt = stampTime(now)
	}
	if due := nanos(it.VisibleAt); due > now.UnixNano() {
		p.due = due
		q.insert(tr, p, it, sc, true)
		tr.Set(q.dueKey(p), nil)
		sc.tally(tr, q, stateOf(it, p.due))
		return nil
	}
	it.Held = false
	q.markVisible(tr, nanos(it.VisibleAt), now.UnixNano()) // see hidden.go
	q.insert(tr, p, it, sc, idKey)
	sc.tally(tr, q, stateOf(it, 0))
	return q.indexAdd(tr, p, it.Resources, dirs, sc)
}

// nextSeq returns the seq a push of priority prio takes: one more than the
// last in use by the priority's items, visible or not (so an invisible item
// comes back before later pushes), read with snapshot reads, so pushes never
// conflict with each other over it.
func (q *Queue) nextSeq(tr kv.Transaction, prio int64) (int64, error) {
	return q.readSeqs(tr, []Item{{Priority: prio}}, nil).next(prio)
}

// nextSeqs are the seqs a push of several items takes (nextSeq), each
// priority's read once, with its two reads (the last visible item and the
// last invisible one) and those of every other priority issued together:
// one round trip on FoundationDB however many priorities there are. A push
// reads its own writes, so reading again would only find the previous
// item's seq and take one more: next counts on from the first read.
type nextSeqs struct {
	q     *Queue
	tails []seqTail
	at    map[int64]int // index in tails by priority, past a few priorities
	// few is tails' first array: a push of one or two priorities (a
	// single-row INSERT) allocates no slice of its own. spare is the
	// larger array a push of more grew, kept with its scratch
	// (scratch.put) for the next.
	few   [2]seqTail
	spare []seqTail
	// bounds holds the bounds of the tails' reads (readTails), one
	// priority's after the other's: the engines copy a read's range when
	// it is issued.
	bounds []byte
}

// seqTail is one priority's reads, and then its next seq.
type seqTail struct {
	prio          int64
	items, hidden kv.FutureRange
	seq           int64 // 0: not yet read
}

// fewPriorities is how many priorities nextSeqs looks up by a scan of its
// tails, not a map: a scan of 16 is faster than a map's lookup, which
// was 1% of a 100-row INSERT's time with 10 priorities.
const fewPriorities = 16

// readSeqs issues the reads of the seqs of items' priorities, into s, a
// zero nextSeqs, or a new one if s is nil, and returns it.
func (q *Queue) readSeqs(tr kv.Transaction, items []Item, s *nextSeqs) *nextSeqs {
	if s == nil {
		s = &nextSeqs{}
	}
	s.q = q
	s.tails = s.few[:0]
	if len(items) > len(s.few) && cap(s.spare) > 0 {
		s.tails = s.spare[:0]
	}
	snap := tr.Snapshot()
	noHidden := len(items) > 1 && q.noneHidden(snap)
	for _, it := range items {
		prio := q.prioOf(it)
		if s.find(prio) >= 0 {
			continue
		}
		var visible, hidden kv.FutureRange
		visible, hidden, s.bounds = q.readTails(snap, prio, noHidden, s.bounds[:0])
		s.tails = append(s.tails, seqTail{prio: prio, items: visible, hidden: hidden})
		switch n := len(s.tails); {
		case s.at != nil:
			s.at[prio] = n - 1
		case n > fewPriorities:
			s.at = make(map[int64]int, len(items))
			for i, t := range s.tails {
				s.at[t.prio] = i
			}
		}
	}
	return s
}

// readTails issues the reads of the last item of priority prio under
// tagItems and under tagHidden, their ranges' bounds in buf (grown to
// hold them), which it returns: the reads copy them when issued. With
// noHidden (noneHidden said so) the second is not read: its future finds
// nothing.
func (q *Queue) readTails(snap kv.ReadTransaction, prio int64, noHidden bool, buf []byte) (items, hidden kv.FutureRange, _ []byte) {
	var vs []int64
	if q.kind == Priority {
		vs = []int64{prio}
	}
	buf = slices.Grow(buf[:0], 2*(len(q.sub[tagItems])+len(q.sub[tagHidden])+2*maxIntLen*len(vs)))
	var r [2]kv.Range
	for i, tag := range [2]int{tagItems, tagHidden} {
		start := len(buf)
		buf = q.appendKey(buf, tag, vs...)
		n := len(buf)
		buf = append(buf, buf[start:n]...) // within the capacity
		r[i] = kv.Range{Begin: buf[start:n:n], End: strincInPlace(buf[n:len(buf):len(buf)])}
	}
	opts := kv.RangeOptions{Limit: 1, Reverse: true}
	items = kv.GetRangeAsync(snap, r[0], opts)
	if noHidden {
		return items, noRows{}, buf
	}
	return items, kv.GetRangeAsync(snap, r[1], opts), buf
}

// noneHidden reports whether the queue holds no invisible item at all, as
// one read of the whole of tagHidden through snap finds, on an engine that
// answers a read when it is issued (kv.AnswersAtIssue: memory: and file:).
// A push of several priorities then reads no priority's hidden tail:
// fdbqueue bench's 100-row INSERTs of 10 priorities made 20 one-row reads
// for their seqs, each taking the store's lock, where 11 do. Elsewhere
// (FoundationDB, remote) the priorities' reads are issued together, one
// round trip, which a read made first would double: it reports false.
// A failed read reports false too, and the reads it saves then fail the
// push as they would have.
func (q *Queue) noneHidden(snap kv.ReadTransaction) bool {
	if !kv.AnswersAtIssue(snap) {
		return false
	}
	_, found, err := kv.First(snap, kv.PrefixRange(q.sub[tagHidden]), true)
	return err == nil && !found
}

// noRows is a range read's future that found nothing.
type noRows struct{}

func (noRows) Get() ([]kv.KeyValue, error) { return nil, nil }

// strincInPlace is kv.Strinc of a packed key, in place: a tuple's first
// byte is a type code, never 0xff, so some byte is left to increment.
func strincInPlace(b []byte) []byte {
	for b[len(b)-1] == 0xff {
		b = b[:len(b)-1]
	}
	b[len(b)-1]++
	return b
}

// find returns the index of prio's tail, or -1.
func (s *nextSeqs) find(prio int64) int {
	if s.at != nil {
		if i, ok := s.at[prio]; ok {
			return i
		}
		return -1
	}
	for i := range s.tails {
		if s.tails[i].prio == prio {
			return i
		}
	}
	return -1
}

// next returns the next seq of prio, one of the priorities readSeqs was
// given, and takes it.
func (s *nextSeqs) next(prio int64) (int64, error) {
	t, err := s.tail(prio)
	if err != nil {
		return 0, err
	}
	t.seq++
	return t.seq - 1, nil
}

// peek returns the next seq of prio, as next does, without taking it.
func (s *nextSeqs) peek(prio int64) (int64, error) {
	t, err := s.tail(prio)
	if err != nil {
		return 0, err
	}
	return t.seq, nil
}

// tail returns prio's tail, its seq the next one, read if it was not yet.
func (s *nextSeqs) tail(prio int64) (*seqTail, error) {
	t := &s.tails[s.find(prio)]
	if t.seq == 0 {
		seq, err := s.q.afterTail(t.items, tagItems, 1)
		if err != nil {
			return nil, err
		}
		if t.seq, err = s.q.afterTail(t.hidden, tagHidden, seq); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// afterTail returns the seq after the last item f found under tag, or seq
// if that is more.
func (q *Queue) afterTail(f kv.FutureRange, tag int, seq int64) (int64, error) {
	last, err := f.Get()
	if err != nil || len(last) == 0 {
		return seq, err
	}
	lp, err := q.decodeKeyUnder(tag, last[0].Key)
	if err != nil {
		return 0, err
	}
	return max(seq, lp.seq+1), nil
}

// insert writes an item and, with idKey, its id index entry (without, a
// run files it: see Runs), through sc if not nil.
func (q *Queue) insert(tr kv.Transaction, p pos, it Item, sc *scratch, idKey bool) {
	b := q.appendItemKey(sc.take(), p)
	k := len(b)
	b = appendValue(b, it)
	tr.Set(b[:k:k], b[k:])
	if !idKey {
		sc.keep(b)
		return
	}
	b = q.appendKey(b[:0], tagIDs, p.id)
	k = len(b)
	b = q.appendIDValue(b, p)
	tr.Set(b[:k:k], b[k:])
	sc.keep(b)
}

// scratch is a buffer that a push writes its keys and values through, one
// after the other, as the writes copy them (kv.Transaction): a 100-row
// INSERT allocated 3,445 bytes a row, 600 of them keys and values built
// only to be copied. It gathers the push's statistics counts too.
type scratch struct {
	// b starts at scratchLen bytes: a row's keys and value fit, and a
	// single-row INSERT grows it never (it grew twice: 2 of its 55
	// allocations). Its array is an allocation of its own, holding no
	// pointers: keys made in it go to FoundationDB's C client, and cgo
	// refuses memory that holds Go pointers (an array inside scratch).
	b       []byte
	tallies tallies
	// now is the push's time, read once for all its items: a clock
	// read a row was 1% of a 100-row INSERT's time.
	now time.Time
	// seqs and dirs are the push's next seqs and directory keys, here
	// rather than objects of their own.
	seqs nextSeqs
	dirs dirSet
	// ids is checkNew's array of the items' ids, and segs its runs of
	// consecutive ids.
	ids  []int64
	segs []runSeg
}

// scratchLen is the size of a push's first key buffer.
const scratchLen = 512

// scratchPool holds the scratches of pushes done, for the next push's:
// made afresh, a 100-row INSERT's scratch, its seqs' tails (grown for
// its 10 priorities), its tails' bounds and its ids were 45 of the 781
// bytes a row of BenchmarkSQL/push100 allocated, 15 allocations a
// statement. Nothing holds them once the push is done: its writes and
// reads copied the keys and bounds built in them (kv.Transaction; every
// engine copies a read's range when it is issued).
var scratchPool = sync.Pool{New: func() any { return &scratch{b: make([]byte, 0, scratchLen)} }}

// maxPooledScratch bounds the key buffer, and maxPooledItems the ids and
// priorities, of a scratch scratchPool keeps: a push of a million items,
// or of a huge value, does not leave its memory in the pool.
const (
	maxPooledScratch = 64 << 10
	maxPooledItems   = 4096
)

// put hands sc back to scratchPool, emptied: its futures and directory
// keys let go of. The push is done with sc.
func (sc *scratch) put() {
	sc.dirs.release()
	s := &sc.seqs
	clear(s.tails) // the futures
	clear(sc.segs[:cap(sc.segs)])
	spare := s.spare
	if cap(s.tails) > len(s.few) {
		spare = s.tails[:0]
	}
	if cap(sc.b) > maxPooledScratch || cap(sc.ids) > maxPooledItems || cap(spare) > maxPooledItems || cap(sc.segs) > maxPooledItems {
		return
	}
	*sc = scratch{b: sc.b[:0], ids: sc.ids[:0], segs: sc.segs[:0], tallies: tallies{counts: sc.tallies.counts[:0]}, seqs: nextSeqs{spare: spare, bounds: s.bounds[:0]}}
	scratchPool.Put(sc)
}

// clock returns the push's time: sc's, or the clock's without a scratch.
func (sc *scratch) clock(q *Queue) time.Time {
	if sc == nil {
		return q.opts.now()
	}
	return sc.now
}

// tally counts a new item in state s: gathered in sc, or at once without
// a scratch.
func (sc *scratch) tally(tr kv.Transaction, q *Queue, s rowState) {
	if sc == nil {
		q.tally(tr, rowState{}, s)
		return
	}
	sc.tallies.tally(q, rowState{}, s)
}

// take returns the buffer, empty (nil without a scratch).
func (sc *scratch) take() []byte {
	if sc == nil {
		return nil
	}
	return sc.b[:0]
}

// keep keeps b, grown from take's buffer, for the next take.
func (sc *scratch) keep(b []byte) {
	if sc != nil {
		sc.b = b
	}
}

// ensureDir makes sure the directory key exists. It writes the key only
// when absent, so that pushes into a live cell do not conflict with pops
// reading the directory. On a key it finds there it adds a read conflict,
// on the key's guard (readDir), so that a pop removing it concurrently
// conflicts with us; a key it writes needs no read conflict: the write
// puts it there whatever a concurrent push or pop did to it (a pop clears
// it only with the cell read empty, which our entry conflicts with), and
// concurrent pushes into a new cell, which all find its key absent, do
// not conflict over it. A key already in dirs was made sure of earlier in
// the transaction: the key is there (the transaction reads its own
// writes), so nothing is read again.
func (q *Queue) ensureDir(tr kv.Transaction, key []byte, dirs *dirSet) error {
	if dirs.has(key) {
		return nil
	}
	key = bytes.Clone(key) // key may be a scratch buffer; reads may keep it
	v, err := tr.Snapshot().Get(key)
	if err != nil {
		return err
	}
	if v == nil {
		tr.Set(key, nil)
	} else if err := q.readDir(tr, key); err != nil {
		return err
	}
	if dirs != nil {
		dirs.add(string(key))
	}
	return nil
}

// readDir adds the read conflict of a push that found the directory key
// dir there and relies on it: with the key's guard (dirGuard), which only
// the pops that clear the key write, so that a push that writes the key
// again (it found the key absent, at an earlier read version) is no
// conflict. With the key itself, in a queue whose cells are those of
// versions before 2026-11-27 (LegacyExactCellsBelow), which those
// versions may pop: their pops clear the key alone. A fresh table's first
// pushes on file: conflicted so: a push that read a cell's new key before
// another push, which had found it absent, wrote it again.
func (q *Queue) readDir(tr kv.Transaction, dir []byte) error {
	return tr.AddReadConflictKey(q.appendDirConflict(nil, dir))
}

// appendDirConflict appends to dst the key readDir adds the read conflict
// of for the directory key dir: its guard, or dir in a queue of legacy
// cells.
func (q *Queue) appendDirConflict(dst, dir []byte) []byte {
	if q.cells == LegacyExactCellsBelow {
		return append(dst, dir...)
	}
	return q.appendDirGuard(dst, dir)
}

// dirGuard returns the guard of the directory key dir, a cell's or a
// shape's: P (19, dir tag, coords...), which no transaction writes but the
// pops that clear dir (clearDir), with it, and ClearItems.
func (q *Queue) dirGuard(dir []byte) []byte { return q.appendDirGuard(nil, dir) }

// appendDirGuard appends the guard of dir (dirGuard) to dst.
func (q *Queue) appendDirGuard(dst, dir []byte) []byte {
	tag := tagCellDir
	if bytes.HasPrefix(dir, q.sub[tagShapeDir]) {
		tag = tagShapeDir
	}
	dst = tuple.AppendInt(append(dst, q.sub[tagDirGuard]...), int64(tag))
	return append(dst, dir[len(q.sub[tag]):]...)
}

// clearDir clears the directory key dir of a cell or shape a pop found
// empty, and its guard, which the pushes that rely on the key read.
func (q *Queue) clearDir(tr kv.Transaction, dir []byte) {
	tr.Clear(dir)
	tr.Clear(q.dirGuard(dir))
}

// dirSet holds the directory keys a transaction made sure of (ensureDir):
// up to fewDirs in a slice, searched in order, more in a map. A
// single-row push makes sure of one or two, for which a map was two
// allocations and a hash a lookup. keys holds those dirKeys found, in
// the order found, in arena.
type dirSet struct {
	few  []string
	m    map[string]struct{}
	two  [2]string // few's array, for a single-row push
	keys [][]byte
	// arena holds the bytes of keys, which the set's strings share:
	// bytes appended are never written again (a full arena is left to
	// the keys cut from it, and a new one begun). It is an allocation of
	// its own, holding no pointers: keys cut from it go to FoundationDB's
	// C client, and cgo refuses memory that holds Go pointers (an array
	// inside the set, as the scratch's key buffer was). twoKeys is the
	// first array of keys: a single-row push's one or two directories.
	arena   []byte
	twoKeys [2][]byte
	// pool, if not nil, is where m, keys and arena came from, in
	// dirSetBufs, and where release hands them back.
	pool *dirBufs
}

// dirSetBufs holds the map, key slice and arena of the sets of pushes of
// several items, for the next push: made afresh, they were 21 of the 178
// MB a run of 200,000 rows in 100-row INSERTs allocated (memprofile, 1
// client). Nothing holds the keys once the push is done: its writes,
// reads and read conflicts copied them (kv.Transaction; FoundationDB's
// client copies them into its requests).
var dirSetBufs = sync.Pool{New: func() any { return new(dirBufs) }}

// dirBufs is what dirSetBufs keeps of a set.
type dirBufs struct {
	m     map[string]struct{}
	keys  [][]byte
	arena []byte
}

// maxPooledDirBytes bounds the arena, and maxPooledDirs the keys of the
// map, that dirSetBufs keeps.
const (
	maxPooledDirBytes = 16 << 10
	maxPooledDirs     = 4 * maxDirsHint
)

// fewDirBytes sizes a single-row push's arena: its one or two keys.
const fewDirBytes = 96

// fewDirs is the most keys a dirSet holds in its slice.
const fewDirs = 8

// newDirSet returns a set for about n keys.
func newDirSet(n int) *dirSet {
	d := &dirSet{}
	d.init(n)
	return d
}

// init prepares d, a zero set, for about n keys.
func (d *dirSet) init(n int) {
	switch {
	case n > fewDirs:
		b := dirSetBufs.Get().(*dirBufs)
		if b.m == nil {
			b.m = make(map[string]struct{}, n)
		}
		d.m, d.keys, d.arena, d.pool = b.m, b.keys[:0], b.arena[:0], b
	case n > len(d.two):
		d.few = make([]string, 0, n)
	default:
		d.few = d.two[:0]
	}
}

// release hands a pooled set's map, keys and arena back to dirSetBufs,
// emptied, and leaves d empty. The push is done with d and its keys.
func (d *dirSet) release() {
	b := d.pool
	if b == nil {
		return
	}
	m := d.m
	if len(m) > maxPooledDirs {
		m = nil // clearing it would cost the next push as much as a new one
	} else {
		clear(m) // its strings are the arena's, written over by the next push
	}
	clear(d.keys)
	*b = dirBufs{m: m, keys: d.keys[:0]}
	if cap(d.arena) <= maxPooledDirBytes {
		b.arena = d.arena[:0]
	}
	*d = dirSet{}
	dirSetBufs.Put(b)
}

// keep adds a copy of k, which the set does not hold, to the set and to
// its keys; items sizes a new arena.
func (d *dirSet) keep(k []byte, items int) {
	switch {
	case d.arena == nil && len(k) <= fewDirBytes && items <= 1:
		d.arena = make([]byte, 0, fewDirBytes)
	case cap(d.arena)-len(d.arena) < len(k):
		d.arena = make([]byte, 0, max(len(k)*min(2*items, 16), 2*cap(d.arena)))
	}
	start := len(d.arena)
	d.arena = append(d.arena, k...)
	c := d.arena[start:len(d.arena):len(d.arena)]
	if d.keys == nil {
		if items <= 1 {
			d.keys = d.twoKeys[:0]
		} else {
			d.keys = make([][]byte, 0, min(2*items, maxDirsHint))
		}
	}
	d.keys = append(d.keys, c)
	d.add(unsafe.String(unsafe.SliceData(c), len(c)))
}

// has reports whether the set (nil: empty) holds key.
func (d *dirSet) has(key []byte) bool {
	switch {
	case d == nil:
		return false
	case d.m != nil:
		_, ok := d.m[string(key)]
		return ok
	}
	for _, k := range d.few {
		if k == string(key) {
			return true
		}
	}
	return false
}

// add adds key, which the set does not hold.
func (d *dirSet) add(key string) {
	if d.m == nil && len(d.few) < fewDirs {
		d.few = append(d.few, key)
		return
	}
	if d.m == nil {
		d.m = make(map[string]struct{}, 2*fewDirs)
		for _, k := range d.few {
			d.m[k] = struct{}{}
		}
		d.few = nil
	}
	d.m[key] = struct{}{}
}

// indexAdd files a visible item under its cell and, when the cell spans
// more than one shape, under its shape: an exact cell (cellGrid.exact)
// never straddles a limit, so its shape entry would never be read.
// Its keys and values go through sc, if not nil.
func (q *Queue) indexAdd(tr kv.Transaction, p pos, res []int64, dirs *dirSet, sc *scratch) error {
	if len(res) == 0 {
		return nil
	}
	cell := q.cells.cellsOf(res)
	b := q.appendKey(sc.take(), tagCellDir, cell...)
	if err := q.ensureDir(tr, b, dirs); err != nil {
		return err
	}
	// The entry carries the task's resources, so that a cell straddling a
	// limit can be scanned without reading the items; an exact cell's,
	// which no limit straddles, nothing (its resources are its cell).
	exact := q.cells.exact(res)
	b = q.appendEntryKey(b[:0], tagCells, cell, p)
	k := len(b)
	if !exact {
		b = appendInts(b, res...)
	}
	tr.Set(b[:k:k], b[k:])
	if !exact {
		b = q.appendKey(b[:0], tagShapeDir, res...)
		if err := q.ensureDir(tr, b, dirs); err != nil {
			return err
		}
		b = q.appendEntryKey(b[:0], tagShapes, res, p)
		tr.Set(b, nil)
	}
	sc.keep(b)
	return nil
}

// removeAll removes items, at poss (remove), and writes their statistics
// counts once for all.
func (q *Queue) removeAll(tr kv.Transaction, poss []pos, items []Item) {
	var tl tallies
	for i, it := range items {
		q.removeCounted(tr, poss[i], it, &tl)
	}
	tl.flush(tr)
}

// remove deletes it, the item at p, visible or not. It leaves the
// directory keys of the item's cell and shape even if they are now empty:
// a fit pop that finds a listed cell empty clears its key (see
// bestFromIndex). Checking for emptiness here would read the cell
// serializably and make concurrent pops of one cell conflict.
func (q *Queue) remove(tr kv.Transaction, p pos, it Item) error {
	q.removeCounted(tr, p, it, nil)
	return nil
}

// removeCounted is remove, with the statistics counts gathered in tl if
// not nil.
//
// Its keys are built one after the other in one buffer, as a
// transaction's writes copy their keys: a pop's removal allocated a key
// a write before.
func (q *Queue) removeCounted(tr kv.Transaction, p pos, it Item, tl *tallies) {
	buf := make([]byte, 0, len(q.sub[tagItems])+6*maxIntLen)
	buf = q.appendItemKey(buf[:0], p)
	tr.Clear(buf)
	buf = q.appendKey(buf[:0], tagIDs, p.id)
	tr.Clear(buf)
	tr.Add(q.countKey(), -1)
	if tl != nil {
		tl.tally(q, stateOf(it, p.due), rowState{})
	} else {
		buf = q.tallyIn(tr, buf, stateOf(it, p.due), rowState{})
	}
	if p.due != 0 {
		buf = q.appendKey(buf[:0], tagDue, p.due, p.prio, p.seq, p.id)
		tr.Clear(buf)
		return
	}
	q.indexRemoveIn(tr, buf, p, it.Resources)
}

// indexRemove clears a visible item's fit index entries. It clears the
// shape entry of an exact cell too: versions before exact cells, which
// filed every item under its shape, wrote one.
func (q *Queue) indexRemove(tr kv.Transaction, p pos, res []int64) {
	q.indexRemoveIn(tr, nil, p, res)
}

// indexRemoveIn is indexRemove, building the keys in buf's space; it
// returns that space.
func (q *Queue) indexRemoveIn(tr kv.Transaction, buf []byte, p pos, res []int64) []byte {
	if len(res) == 0 {
		return buf
	}
	var cells [8]int64
	buf = q.appendEntryKey(buf[:0], tagCells, q.cells.appendCells(cells[:0], res), p)
	tr.Clear(buf)
	buf = q.appendEntryKey(buf[:0], tagShapes, res, p)
	tr.Clear(buf)
	return buf
}
