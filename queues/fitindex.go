package queues

import (
	"github.com/fdbqueue/fdbqueue/kv"
)

// bestFromIndex finds the best fitting task through the cell and shape
// directories. It reads them in rounds, each of reads issued together and
// then waited for (on FoundationDB a round is one round trip, however many
// reads it holds):
//
//  1. the cell directory, for the cells whose lower corner fits: one range
//     read (dir, when the caller issued it already, with step 1), from
//     which the skip-scan of the directory picks the cells;
//  2. the head of every cell wholly inside the limits, and the first
//     straddleAhead entries of every cell that straddles a limit (in Max
//     order of a priority queue: the last entry of each, which gives its
//     highest priority);
//  3. in Max order, the head of that priority, for the cells that can
//     still win, and the first entries of the straddling cells' highest
//     priority;
//
// then, only where a search needs them: more entries of the straddling
// cells whose first entries did not settle them (one round for all),
// the shapes of a straddling cell past its budget (their directory, then
// their heads), and a scan of a cell whose head another attempt claimed.
//
// The rows it reads and the read conflicts it adds are exactly those of
// reading one after another: wholeCells offers the heads of the cells
// wholly inside the limits, in directory order, then straddlingCell
// resolves each cell that straddles a limit. What a round reads ahead
// (the directory whole, the first entries of a straddling cell) it reads
// through the snapshot, and the pick records what the reads that use it
// covered (known.go).
//
// On an engine that answers a read when it is issued (kv.AnswersAtIssue:
// memory: and file:), rounds save no wait: the search reads nothing ahead
// (pick.readsAhead), its one-row reads are made as they are issued
// (issueFirst), and in Max order each head's level is read right after
// the head (readHeads). What it chooses and the read conflicts it adds
// are the same: only what the reads cost changes.
//
// A listed cell or shape that turns out empty has its directory key cleared
// when the search runs in a pop; the read that found it empty is in the
// read conflicts, so a concurrent push into it conflicts with the clear. A
// cell or shape that holds only entries of claimed items is not empty.
//
// The best entry it returns is not claimed by another attempt (when it
// looked); the caller claims it.
func (q *Queue) bestFromIndex(pk *pick, order Order, limits []int64, dir *dirAhead) (pos, bool, error) {
	// The search itself lives in its memory too, handed back with it.
	m := searchMems.Get().(*searchMem)
	s := &m.search
	*s = indexSearch{q: q, pk: pk, tr: pk.rd, order: order, limits: limits, res: bump(&m.res, len(limits)),
		maxFirst: order == Max && q.kind == Priority, mem: m}
	defer m.release()
	if dir == nil {
		dir = q.readCellDir(pk, limits)
	}
	if err := s.cells(dir); err != nil {
		return pos{}, false, err
	}
	return s.best, s.found, nil
}

// readCellDir issues the read of the cell directory for a search with
// limits (round 1), if the pick reads ahead.
func (q *Queue) readCellDir(pk *pick, limits []int64) *dirAhead {
	noMin := noMins(len(limits))
	if !pk.readsAhead() {
		// (Nor does it learn the first coordinates, which only say what
		// to read ahead.)
		d := newDirAhead(q.sub[tagCellDir], noMin, limits, nil)
		d.cellDir = true
		return d
	}
	return readDirAhead(pk.snapshot(), q.sub[tagCellDir], noMin, limits, q.hints.cellFirsts(), q.hints.sawCellFirsts)
}

// indexSearch is one search of the fit index for the best fitting entry.
type indexSearch struct {
	q        *Queue
	pk       *pick
	tr       kv.ReadTransaction // pk.rd
	order    Order
	limits   []int64
	maxFirst bool // Max order of a priority queue: heads take two reads

	best  pos  // the best fitting entry offered so far,
	found bool // if any

	res []int64    // scratch: an entry's resources
	mem *searchMem // what its reads are read into
}

// offer makes p the best entry if it is better.
func (s *indexSearch) offer(p pos) {
	if !s.found || better(p, s.best, s.order) {
		s.best, s.found = p, true
	}
}

// cells searches the cells that dir lists: it offers the heads of those
// wholly inside the limits (wholeCells), then resolves those that straddle
// a limit (straddlingCell).
func (s *indexSearch) cells(dir *dirAhead) error {
	// Their coordinates, one after another, and, when the skip-scan
	// walked the directory decoded (pk.cells), the index there of each
	// whole cell: in the search's memory, which the function passed to
	// the scan reaches through m alone (variables it captured would each
	// be an allocation).
	m := s.mem
	// Room for as many whole cells as the last search of this memory
	// listed: appending past the room took a new array each search.
	m.whole, m.straddling, m.at = bump(&m.ints, max(64, m.wholeCells)*len(s.limits))[:0], m.straddling[:0], m.at[:0]
	if err := dir.scan(s.pk, func(cell []int64) error {
		if s.q.cells.straddles(cell, s.limits) {
			m.straddling = append(m.straddling, cell...)
		} else {
			m.whole = append(m.whole, cell...)
			if dc := s.pk.cells; dc != nil {
				m.at = append(m.at, dc.at)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	whole, straddling, at := m.whole, m.straddling, m.at
	m.wholeCells = max(m.wholeCells, len(whole)/len(s.limits))
	if s.pk.cells == nil {
		at = nil
	}
	heads := s.readHeads(tagCells, whole, at)
	strs := s.readStraddling(straddling)
	if err := s.waitHeads(heads); err != nil {
		return err
	}
	if s.maxFirst {
		prio, found, err := s.readLevels(heads)
		if err == nil {
			err = s.readStraddlingLevels(strs, prio, found)
		}
		if err == nil {
			err = s.waitLevels(heads)
		}
		if err != nil {
			return err
		}
	}
	if err := s.wholeCells(heads, tagCellDir); err != nil {
		return err
	}
	if err := s.readMoreStraddling(strs); err != nil {
		return err
	}
	for i := range strs {
		if err := s.straddlingCell(&strs[i]); err != nil {
			return err
		}
	}
	return nil
}

// cellHeadRead is the reads of the head of a cell or shape in a search's
// rounds.
type cellHeadRead struct {
	coords []int64
	r      kv.Range // its entries' range: extending its prefix, r.Begin
	top    oneRow   // its first entry, or in Max order its last
	// level is, in Max order, the read of the first entry of top's
	// priority, once issued.
	level *oneRow
}

// topPos returns the position of e, the entry top found.
func (h *cellHeadRead) topPos(e kv.KeyValue) (pos, error) {
	if h.top.decoded {
		return h.top.at, nil
	}
	return decodeEntry(h.r.Begin, e.Key)
}

// readHeads issues the first read of the head of every cell or shape under
// tag with the coordinates in flat, one after another (round 2).
//
// In Max order on an engine that answers a read when it is issued
// (kv.AnswersAtIssue), it also reads each level that readLevels will
// read, right after its head's first read, in the part of the tree that
// read just walked: which levels readLevels reads depends only on the
// heads before, and a read answered when issued answers the same in any
// order, as long as the search writes nothing in between.
//
// at, if not nil, holds the index of each cell in the decoded directory
// the skip-scan walked (pk.cells), whose slots find the heads an attempt
// remembers (dirCells.cellHead).
func (s *indexSearch) readHeads(tag int, flat []int64, at []int) []cellHeadRead {
	d := len(s.limits)
	hs := bump(&s.mem.heads, len(flat)/d)
	lv := s.levelRound()
	inline := s.maxFirst && kv.AnswersAtIssue(s.tr)
	for i := range hs {
		h := &hs[i]
		h.coords = flat[i*d : (i+1)*d : (i+1)*d]
		if at != nil {
			h.r = s.pk.cells.cellHead(s.tr, at[i], s.maxFirst, func() kv.Range { return s.mem.extending(s.q.sub[tag], h.coords...) }, &h.top)
		} else {
			h.r = s.mem.extending(s.q.sub[tag], h.coords...)
			issueFirst(s.tr, h.r, s.maxFirst, &h.top)
		}
		if inline && lv.next(s, h) != nil {
			inline = false // waitHeads or readLevels returns the error
		}
	}
	return hs
}

// waitHeads waits for the heads' first reads: every answer is in before
// the search writes (clears a directory key), so that an Attempt
// remembers them.
func (s *indexSearch) waitHeads(hs []cellHeadRead) error {
	for i := range hs {
		if _, _, err := hs[i].top.get(); err != nil {
			return err
		}
	}
	return nil
}

// readLevels issues, in Max order, the read of the first entry of the
// highest priority of every cell or shape whose highest priority can
// still win when wholeCells comes to it (round 3; waitLevels waits for
// them). It returns the highest priority wholeCells will have offered (if
// found). Only a claimed head, which wholeCells replaces by a worse entry,
// can make wholeCells need a level read not made here; it makes that one
// then.
func (s *indexSearch) readLevels(hs []cellHeadRead) (int64, bool, error) {
	lv := s.levelRound()
	for i := range hs {
		if err := lv.next(s, &hs[i]); err != nil {
			return 0, false, err
		}
	}
	return lv.prio, lv.found, nil
}

// levelRound is readLevels going through the heads in order: the highest
// priority offered by the heads so far (if found).
type levelRound struct {
	prio  int64
	found bool
}

func (s *indexSearch) levelRound() levelRound {
	return levelRound{prio: s.best.prio, found: s.found}
}

// next issues the level read of h unless its highest priority cannot win
// or the read was issued already (readHeads), and counts h's priority.
func (lv *levelRound) next(s *indexSearch, h *cellHeadRead) error {
	e, ok, err := h.top.get()
	if err != nil || !ok {
		return err
	}
	p, err := h.topPos(e)
	if err != nil {
		return err
	}
	if lv.found && p.prio < lv.prio {
		return nil // cannot win
	}
	if h.level == nil {
		h.level = &bump(&s.mem.levels, 1)[0]
		issueFirst(s.tr, s.mem.extending(h.r.Begin, p.prio), false, h.level)
	}
	if !lv.found || p.prio > lv.prio {
		lv.prio, lv.found = p.prio, true
	}
	return nil
}

// waitLevels waits for the level reads of readLevels, before the search
// writes (as waitHeads does).
func (s *indexSearch) waitLevels(hs []cellHeadRead) error {
	for i := range hs {
		if hs[i].level != nil {
			if _, _, err := hs[i].level.get(); err != nil {
				return err
			}
		}
	}
	return nil
}

// wholeCells offers the head of every cell or shape of hs, all wholly
// inside the limits, in order, or clears its directory key (under dirTag)
// if it is empty. In Max order a head is the first entry of the highest
// priority (head): when that priority is below the best offered, nothing
// in the cell can win.
func (s *indexSearch) wholeCells(hs []cellHeadRead, dirTag int) error {
	ahead, limit := s.readClaimedCells(hs)
	for i := range hs {
		h := &hs[i]
		e, ok, err := h.top.get()
		if err != nil {
			return err
		}
		if !ok {
			s.clearDir(dirTag, h.coords)
			continue
		}
		p, err := h.topPos(e)
		if err != nil {
			return err
		}
		if s.maxFirst {
			if s.found && p.prio < s.best.prio {
				// The read covered the cell from this entry to its end,
				// so a concurrent push of a higher priority conflicts.
				continue
			}
			if h.level == nil {
				h.level = &bump(&s.mem.levels, 1)[0]
				issueFirst(s.tr, s.mem.extending(h.r.Begin, p.prio), false, h.level)
			}
			if e, ok, err = h.level.get(); err != nil {
				return err
			}
			if !ok {
				s.clearDir(dirTag, h.coords)
				continue
			}
			if p, err = decodeEntry(h.r.Begin, e.Key); err != nil {
				return err
			}
		}
		var cutoff *pos
		if s.found {
			cutoff = &s.best
		}
		switch {
		case cutoff != nil && !better(p, *cutoff, s.order):
			continue // it cannot win, claimed or not
		case s.pk.claimed(p):
			var next kv.FutureRange
			if ahead != nil {
				next = ahead[i]
			}
			if p, ok, err = s.unclaimedHead(h.r.Begin, cutoff, next, limit); err != nil {
				return err
			}
			if !ok {
				continue
			}
		}
		s.offer(p)
	}
	return nil
}

// readClaimedCells issues, where reads wait and other attempts are in
// flight, a read ahead of the first entries of every cell or shape of hs
// whose head another attempt claimed, in one round: wholeCells scans such
// a cell for its first entry no claim keeps away (unclaimedHead), which
// would otherwise read one cell after another, each in the iterator's
// batches, past the rows the others claimed. It returns the reads, by
// index in hs (nil: none), and their row limit: a row more than twice the
// attempts in flight, which claim about one row each, and whose pops that
// committed since this attempt began keep theirs for it. In Max order a
// cell's scan starts with its last entry: it reads nothing ahead.
func (s *indexSearch) readClaimedCells(hs []cellHeadRead) ([]kv.FutureRange, int) {
	if s.maxFirst || s.pk.a == nil || !s.pk.readsAhead() {
		return nil, 0
	}
	limit := int(min(2*s.pk.a.claims.inFlight.Load(), maxBatch)) + 1
	var fs []kv.FutureRange
	for i := range hs {
		h := &hs[i]
		e, ok, err := h.top.get()
		if err != nil || !ok {
			continue // wholeCells says
		}
		p, err := h.topPos(e)
		if err != nil || !s.pk.claimed(p) {
			continue
		}
		if fs == nil {
			fs = make([]kv.FutureRange, len(hs))
		}
		fs[i] = kv.GetRangeAsync(s.pk.snapshot(), kv.PrefixRange(h.r.Begin), kv.RangeOptions{Limit: limit, Mode: kv.StreamingModeWantAll})
	}
	return fs, limit
}

// unclaimedHead returns the best entry of the cell or shape under prefix
// whose item no claim keeps the pick away from, if one beats cutoff. ahead,
// if not nil, is the read ahead of its first limit entries
// (readClaimedCells): the scan reads through them, and records what it
// used, as its reads would have covered it.
func (s *indexSearch) unclaimedHead(prefix []byte, cutoff *pos, ahead kv.FutureRange, limit int) (pos, bool, error) {
	var head pos
	found := false
	tr := s.tr
	var x *knownReader
	if ahead != nil {
		rows, err := ahead.Get()
		if err != nil {
			return pos{}, false, err
		}
		x = newKnownReader(s.tr, false)
		defer x.release()
		x.ks = append(x.ks, newKnown(kv.PrefixRange(prefix), limit, rows))
		tr = x
	}
	_, err := s.q.scanEntries(tr, prefix, s.order, func(_ kv.KeyValue, p pos) (bool, error) {
		if cutoff != nil && !better(p, *cutoff, s.order) {
			return false, nil
		}
		if s.pk.claimed(p) {
			return true, nil
		}
		head, found = p, true
		return false, nil
	})
	if err == nil && x != nil {
		err = s.pk.record(x, false)
	}
	return head, found, err
}

// noDir is the dirTag of heads whose directory keys a search leaves
// alone (see cornerCell).
const noDir = -1

// clearDir clears the directory key under dirTag of a cell or shape found
// empty, when the search runs in a pop.
func (s *indexSearch) clearDir(dirTag int, coords []int64) {
	if s.pk.tr != nil && dirTag != noDir {
		s.q.clearDir(s.pk.tr, s.q.key(dirTag, coords...))
	}
}
