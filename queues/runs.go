package queues

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// Runs: one key in place of the id index keys of a push's rows.
//
// A push of minRunRows or more items, all visible, whose ids are
// consecutive in the order given (the ids an INSERT is assigned: see
// IDs), and of at most maxRunPrios priorities, gives its i-th item the
// seq S+i under the item's own priority, S being one more than the last
// seq any of those priorities held (seqs still grow within each
// priority), and files its items under one key, their run:
//
//	P (20, first) = packed (n, S, nonce, priorities...)
//
// (no priorities in a FIFO queue) in place of an id index key each. The
// item with id first+i then sits at (p, S+i, first+i) under tag 0, for
// one p of the run's priorities. With fdbqueue bench's 100-row INSERTs
// of 10 priorities (the driver's BenchmarkMemoryPerRow), a queued row's
// heap went from 215.9 to 176.3 bytes, its keys from 3.03 to 2.04.
//
// A lookup by id (lookup) reads the id index first, then the run whose
// ids hold the id, and the item under each of the run's priorities: one
// read in a FIFO queue.
//
// A run is never rewritten. Its rows leave it as rows leave any place (a
// pop, a DELETE, a new priority); a row rewritten elsewhere (a lease
// makes it invisible) gets an id index key of its own, which lookups find
// first; and a row comes back to its run's place only with such a key (a
// lease's end puts it back at its seq). So the rows a run alone files only
// ever leave its place, and a run found without them stays so: then
// sweepRuns clears it, a few runs a push that makes one, through the
// snapshot (a run is a pointer, never the truth: clearing one that names
// no row changes no read's answer, so nothing conflicts over it). It
// clears the key only if it still holds the run it read
// (COMPARE_AND_CLEAR): once cleared, a run's ids may be given again and
// make a run under the same key, which a sweep that read the old one must
// leave, and a random nonce in each run's value tells them apart (the
// rest may be the same, in a queue that emptied). A run outliving its
// rows for a while costs its key, not a row's.
//
// Runs never share an id: a push whose ids meet a run, even one whose
// rows are gone, files its items under the id index (checkNew finds the
// runs, and whether their rows with the push's ids are still queued).
//
// Pushes make runs where the engine takes a write conflict range
// (kv.CanAddWriteConflictRange: memory:, file:, and file: shared through
// kv/remote): a run's push adds one over its ids' id index keys, so that
// whatever reads those keys (a push's check of its ids, a lookup)
// conflicts with the run's push as it would with the keys' writes.
// Runs are read everywhere but on FoundationDB, whose queues have none
// (mayHoldRuns): there pushes and lookups make no read for them.
const (
	// minRunRows is the fewest items a push files under a run: below it
	// the run's reads and key cost more than the id index keys they
	// spare.
	minRunRows = 16
	// maxRunPrios is the most priorities a run's items may have: a
	// lookup reads the item under each.
	maxRunPrios = fewPriorities
	// runsSwept is how many runs a push that makes a run checks for
	// rows (sweepRuns): more than one, so that runs outliving their rows
	// stay fewer than the runs that hold rows.
	runsSwept = 2
)

// run is a run's key and value decoded: the ids [first, first+n), the
// first seq, its nonce (see Runs), and the priorities of its items ({0}
// in a FIFO queue).
type run struct {
	first, n, seq, nonce int64
	prios                []int64
}

// fits reports whether the id and the seq after the run's last are
// int64s (end, and runEmpty's range): a push makes no run that does not.
func (r run) fits() bool {
	return r.n <= math.MaxInt64-r.first && r.n <= math.MaxInt64-r.seq
}

// holds reports whether id is one of the run's ids.
func (r run) holds(id int64) bool { return id >= r.first && id-r.first < r.n }

// end is the id after the run's last.
func (r run) end() int64 { return r.first + r.n }

// posOf is the position the run gives the item id (one of its ids) under
// priority prio.
func (r run) posOf(id, prio int64) pos {
	return pos{prio: prio, seq: r.seq + (id - r.first), id: id}
}

// mayHoldRuns reports whether the queue may hold runs where tr reads:
// unless nothing that writes its database takes a write conflict range
// (FoundationDB's adapter: kv.WriteConflictRangesNever), as pushes make
// runs only where the engine takes one. A transaction that does not say
// (a wrapper around an engine) reads them.
func mayHoldRuns(tr kv.ReadTransaction) bool {
	return kv.WriteConflictRangesOf(tr) != kv.WriteConflictRangesNever
}

// runKey returns the key of the run whose first id is first.
func (q *Queue) runKey(first int64) []byte { return q.key(tagRuns, first) }

// appendRunValue appends r's value to dst.
func (q *Queue) appendRunValue(dst []byte, r run) []byte {
	dst = appendInts(dst, r.n, r.seq, r.nonce)
	if q.kind == Priority {
		dst = appendInts(dst, r.prios...)
	}
	return dst
}

// decodeRunSpan decodes a run's first id, from its key k, and its size,
// the first integer of its value v, which it returns with the rest of v.
func (q *Queue) decodeRunSpan(k, v []byte) (first, n int64, rest []byte, err error) {
	first, krest, kerr := tuple.DecodeInt(k[len(q.sub[tagRuns]):])
	if kerr == nil && len(krest) == 0 {
		n, rest, err = tuple.DecodeInt(v)
	}
	if kerr != nil || len(krest) > 0 || err != nil || first < 1 || n < 1 || n > math.MaxInt64-first {
		return 0, 0, nil, fmt.Errorf("%w: run key %x, value %x", ErrCorrupt, k, v)
	}
	return first, n, rest, nil
}

// decodeRun decodes a run's key and value.
func (q *Queue) decodeRun(k, v []byte) (run, error) {
	var r run
	first, n, rest, err := q.decodeRunSpan(k, v)
	if err != nil {
		return r, err
	}
	vs := []int64{n}
	for len(rest) > 0 {
		var x int64
		if x, rest, err = tuple.DecodeInt(rest); err != nil {
			return r, fmt.Errorf("%w: run of id %d: %v", ErrCorrupt, first, err)
		}
		vs = append(vs, x)
	}
	const fixed = 3 // n, seq, nonce
	want := len(vs) == fixed
	if q.kind == Priority {
		want = len(vs) > fixed && len(vs) <= fixed+maxRunPrios
	}
	// The id and the seq after its last are int64s too (run.fits).
	r = run{first: first, n: n}
	if want {
		r.seq, r.nonce = vs[1], vs[2]
	}
	if !want || r.seq < 1 || !r.fits() {
		return run{}, fmt.Errorf("%w: run of id %d holds %v", ErrCorrupt, first, vs)
	}
	r.prios = []int64{0}
	if q.kind == Priority {
		r.prios = vs[fixed:]
	}
	return r, nil
}

// readRunAt issues the read of the last run whose first id is at most id,
// through snap.
func (q *Queue) readRunAt(snap kv.ReadTransaction, id int64) kv.FutureRange {
	return kv.GetRangeAsync(snap, q.runsTo(nil, id), kv.RangeOptions{Limit: 1, Reverse: true})
}

// runsTo returns the range of the runs whose first id is at most id, its
// end built in buf's space.
func (q *Queue) runsTo(buf []byte, id int64) kv.Range {
	end := append(q.appendKey(buf[:0], tagRuns, id), 0) // kv.KeyAfter
	return kv.Range{Begin: q.sub[tagRuns], End: end}
}

// runSpanAt returns the first id and the size of the last run whose first
// id is at most id, read through snap now, if there is one: the check of
// a push's ids on an engine that answers reads when issued, where no
// future is needed, and only the run's span (decodeRun decodes the rest).
func (q *Queue) runSpanAt(snap kv.ReadTransaction, id int64) (first, n int64, _ bool, _ error) {
	var buf [32]byte
	e, ok, err := kv.First(snap, q.runsTo(buf[:0], id), true)
	if err != nil || !ok {
		return 0, 0, false, err
	}
	first, n, _, err = q.decodeRunSpan(e.Key, e.Value)
	return first, n, err == nil, err
}

// runOf returns the run a readRunAt found, if it found one.
func (q *Queue) runOf(f kv.FutureRange) (run, bool, error) {
	rows, err := f.Get()
	if err != nil || len(rows) == 0 {
		return run{}, false, err
	}
	r, err := q.decodeRun(rows[0].Key, rows[0].Value)
	return r, err == nil, err
}

// findInRun returns the position and the value of the first item with
// an id in [lo, hi], ids of r, queued where r files it, if there is one:
// the items' keys under each of r's priorities, read through tr in one
// kv.GetMany
// (one round trip where reads wait for their answer: a push of given ids
// over a run whose rows are gone is no slower than another).
func (q *Queue) findInRun(tr kv.ReadTransaction, r run, lo, hi int64) (pos, []byte, bool, error) {
	keys := make([][]byte, 0, int(hi-lo+1)*len(r.prios))
	for id := lo; id <= hi; id++ {
		for _, prio := range r.prios {
			keys = append(keys, q.itemKey(r.posOf(id, prio)))
		}
	}
	vals, err := kv.GetMany(tr, keys)
	if err != nil {
		return pos{}, nil, false, err
	}
	for i, v := range vals {
		if v != nil {
			return r.posOf(lo+int64(i/len(r.prios)), r.prios[i%len(r.prios)]), v, true, nil
		}
	}
	return pos{}, nil, false, nil
}

// planRun returns the run items would make pushed at now (its seq still to
// be found), if they make one: see Runs.
func (q *Queue) planRun(tr kv.Transaction, items []Item, now int64) (run, bool) {
	if len(items) < minRunRows || !kv.CanAddWriteConflictRange(tr) {
		return run{}, false
	}
	r := run{first: items[0].ID, n: int64(len(items)), nonce: rand.Int64()}
	if r.n > math.MaxInt64-r.first {
		return run{}, false
	}
	var few [maxRunPrios]int64
	prios := few[:0]
	for i, it := range items {
		if it.ID != r.first+int64(i) || nanos(it.VisibleAt) > now {
			return run{}, false
		}
		if p := q.prioOf(it); !slices.Contains(prios, p) {
			if len(prios) == maxRunPrios {
				return run{}, false
			}
			prios = append(prios, p)
		}
	}
	r.prios = slices.Clone(prios)
	return r, true
}

// writeRun writes r, whose items the transaction pushes, and its write
// conflict over the id index keys of its ids, first: a run is never
// written without it.
func (q *Queue) writeRun(tr kv.Transaction, r run) error {
	if err := kv.AddWriteConflictRange(tr, kv.Range{Begin: q.idKey(r.first), End: q.idKey(r.end())}); err != nil {
		return err
	}
	tr.Set(q.runKey(r.first), q.appendRunValue(nil, r))
	return nil
}

// runsMet checks the runs that hold any of ids (sorted, distinct, the ids
// of a push) once the reads segments issued are in: it fails with
// ErrDuplicateID if one of ids is queued where its run files it, and
// reports whether any run holds one of ids.
func (q *Queue) runsMet(tr kv.Transaction, segs []runSeg) (bool, error) {
	met := false
	snap := tr.Snapshot()
	for _, s := range segs {
		f := s.read
		if f == nil { // an engine that answers at issue: see checkNew
			first, n, ok, err := q.runSpanAt(snap, s.last)
			if err != nil {
				return false, err
			}
			if !ok || first+n <= s.first {
				continue
			}
			f = q.readRunAt(snap, s.last) // a run holds some of the ids
		}
		for {
			r, ok, err := q.runOf(f)
			if err != nil {
				return false, err
			}
			if !ok || r.end() <= s.first {
				break
			}
			met = true
			if p, _, queued, err := q.findInRun(tr, r, max(s.first, r.first), min(s.last, r.end()-1)); err != nil {
				return false, err
			} else if queued {
				return false, &DuplicateIDError{ID: p.id}
			}
			if r.first <= s.first {
				break
			}
			f = q.readRunAt(snap, r.first-1)
		}
	}
	return met, nil
}

// runSeg is a push's run of consecutive ids, [first, last], and the read
// of the last run that may hold one of them (readRunAt of last), or nil
// to read it when checked (runSpanAt).
type runSeg struct {
	first, last int64
	read        kv.FutureRange
}

// sweepRead is sweepRuns' read of the runs it checks, in flight: the
// runsSwept runs from the cursor on (from), and the first ones, round
// the runs, if those are fewer.
type sweepRead struct {
	from        int64
	after, wrap kv.FutureRange
}

// readSweep issues sweepRuns' reads through snap, to be in flight with a
// push's others. Where reads are answered when issued, the read round the
// runs waits until sweepRuns finds it needs it: it seldom does.
func (q *Queue) readSweep(snap kv.ReadTransaction) sweepRead {
	sw := sweepRead{from: q.runSweep.Load()}
	sw.after = kv.GetRangeAsync(snap, kv.Range{Begin: q.runKey(sw.from), End: q.runsEnd()}, kv.RangeOptions{Limit: runsSwept})
	if sw.from > 0 && !kv.AnswersAtIssue(snap) {
		sw.wrap = q.readSweepWrap(snap, sw.from)
	}
	return sw
}

// readSweepWrap issues the read of the first runs, before the cursor's.
func (q *Queue) readSweepWrap(snap kv.ReadTransaction, from int64) kv.FutureRange {
	return kv.GetRangeAsync(snap, kv.Range{Begin: q.sub[tagRuns], End: q.runKey(from)}, kv.RangeOptions{Limit: runsSwept})
}

// runsEnd is the end of the runs' keys.
func (q *Queue) runsEnd() []byte { return kv.PrefixRange(q.sub[tagRuns]).End }

// sweepRuns checks the runs sw read (up to runsSwept, on from where this
// process's last sweep of the queue stopped, round the runs) for the rows
// they alone file, and clears those without: see Runs. It reads through
// the snapshot. Where reads wait for their answer, the checks' first
// reads of all the runs are issued together (see runsEmpty).
func (q *Queue) sweepRuns(tr kv.Transaction, sw sweepRead) error {
	rows, err := sw.after.Get()
	if err != nil {
		return err
	}
	if len(rows) < runsSwept && sw.from > 0 {
		if sw.wrap == nil {
			sw.wrap = q.readSweepWrap(tr.Snapshot(), sw.from)
		}
		more, err := sw.wrap.Get()
		if err != nil {
			return err
		}
		rows = append(rows[:len(rows):len(rows)], more[:min(len(more), runsSwept-len(rows))]...)
	}
	runs := make([]run, len(rows))
	for i, e := range rows {
		if runs[i], err = q.decodeRun(e.Key, e.Value); err != nil {
			return err
		}
	}
	empty, err := q.runsEmpty(tr.Snapshot(), runs)
	if err != nil {
		return err
	}
	next := sw.from
	for i, e := range rows {
		next = runs[i].end()
		if empty[i] {
			tr.CompareAndClear(e.Key, e.Value)
		}
	}
	q.runSweep.Store(next)
	return nil
}

// runsEmpty reports which of runs are empty (runEmpty). Where reads wait
// for their answer, it first reads the first item where each run files
// items under each of its priorities, all together: a run whose first
// item there is one of its own is not empty, and one with no item there
// is; only a run that shares those places with other items is read on,
// one range after the other.
func (q *Queue) runsEmpty(snap kv.ReadTransaction, runs []run) ([]bool, error) {
	empty := make([]bool, len(runs))
	if kv.AnswersAtIssue(snap) {
		for i, r := range runs {
			var err error
			if empty[i], err = q.runEmpty(snap, r); err != nil {
				return nil, err
			}
		}
		return empty, nil
	}
	firsts := make([][]kv.FutureRange, len(runs))
	for i, r := range runs {
		for _, prio := range r.prios {
			firsts[i] = append(firsts[i], kv.GetRangeAsync(snap, q.runPlaces(r, prio), kv.RangeOptions{Limit: 1}))
		}
	}
	for i, r := range runs {
		found, other := false, false
		for j, f := range firsts[i] {
			rows, err := f.Get()
			if err != nil {
				return nil, err
			}
			if len(rows) == 0 {
				continue
			}
			own, err := q.filedBy(r, r.prios[j], rows[0].Key)
			if err != nil {
				return nil, err
			}
			found = found || own
			other = other || !own
		}
		switch {
		case found:
		case !other:
			empty[i] = true
		default:
			var err error
			if empty[i], err = q.runEmpty(snap, r); err != nil {
				return nil, err
			}
		}
	}
	return empty, nil
}

// runPlaces is the range of the keys where r files items under prio:
// seqs r.seq to r.seq+r.n-1 under tag 0.
func (q *Queue) runPlaces(r run, prio int64) kv.Range {
	var vs []int64
	if q.kind == Priority {
		vs = []int64{prio}
	}
	return kv.Range{Begin: q.key(tagItems, append(vs, r.seq)...), End: q.key(tagItems, append(vs, r.seq+r.n)...)}
}

// filedBy reports whether the item key k, under prio, is one r files.
func (q *Queue) filedBy(r run, prio int64, k []byte) (bool, error) {
	p, err := q.decodeKeyUnder(tagItems, k)
	if err != nil {
		return false, err
	}
	return r.holds(p.id) && r.posOf(p.id, prio) == p, nil
}

// runEmpty reports whether none of the items r alone files is left where
// it files them: under none of its priorities is an item with one of its
// ids at the seq r gives it. (Items of other ids sit at those seqs when
// their priority emptied and its seqs started over: a read passes them.)
func (q *Queue) runEmpty(snap kv.ReadTransaction, r run) (bool, error) {
	for _, prio := range r.prios {
		// The first item there first, as one read: it is the run's own
		// in a run that lives, and there is none in an empty one.
		places := q.runPlaces(r, prio)
		e, found, err := kv.First(snap, places, false)
		if err != nil || !found {
			if err != nil {
				return false, err
			}
			continue
		}
		if own, err := q.filedBy(r, prio, e.Key); err != nil || own {
			return false, err
		}
		places.Begin = kv.KeyAfter(e.Key)
		it := snap.GetRange(places, kv.RangeOptions{Mode: kv.StreamingModeIterator})
		for it.Next() {
			if own, err := q.filedBy(r, prio, it.KeyValue().Key); err != nil || own {
				return false, err
			}
		}
		if err := it.Err(); err != nil {
			return false, err
		}
	}
	return true, nil
}

// runsFloor returns the last id of the last run whose ids lie below
// MaxAssignedID, or 0 (see IDFloor).
func (q *Queue) runsFloor(snap kv.ReadTransaction) (int64, error) {
	r, ok, err := q.runOf(q.readRunAt(snap, MaxAssignedID-1))
	if err != nil || !ok {
		return 0, err
	}
	return min(r.end()-1, MaxAssignedID-1), nil
}
