// Multi-version storage: each live key's chain of versions in the tree (a
// deleted key's in s.dead), reads as of a read version, and installing a
// committed batch at its version.

package embedded

import (
	"bytes"
	"cmp"
	"slices"
	"time"

	"github.com/fdbqueue/fdbqueue/internal/btree"

	"github.com/fdbqueue/fdbqueue/kv"
)

// at returns the value visible at read version rv, from r (the tree's item
// for its key) or an older version. Callers hold s.mu.
func (s *store) at(r rec, rv uint64) ([]byte, bool) {
	for {
		w := r.word()
		if w&verMask <= rv {
			if w&flagDel != 0 || len(s.tombs) > 0 && s.tombed(r.key(), w&verMask, rv) {
				return nil, false
			}
			return r.val(), true
		}
		if w&flagOlder == 0 {
			return nil, false
		}
		r = s.older[r]
	}
}

// get returns the value of key at rv. scratch is the caller's buffer for
// the lookup's probe.
func (s *store) get(rv uint64, key []byte, scratch *[]byte) ([]byte, bool) {
	p := probe(scratch, key)
	s.rlock()
	r, ok := s.tree.Get(p)
	if !ok && rv < s.deadMax && s.dead.Len() > 0 {
		r, ok = s.dead.Get(p)
	}
	var val []byte
	if ok {
		val, ok = s.at(r, rv)
	}
	s.mu.RUnlock()
	return val, ok
}

// getMany reads the keys of keys at the indexes in order (sorted by key)
// at rv, into vals and oks, under one hold of s.mu.
//
// It walks the tree from each key it searches for to the next keys, as
// long as they are near (see near) and come within walkSkips records:
// keys read together are often neighbours (a push's directory keys:
// fdbqueue bench's 100-row INSERTs read about 120, 76 cell directories
// and 44 shape directories, each family a few hundred keys), and a step
// to the next record costs a comparison, where a search from the path
// hint cost about 1,400 instructions (callgrind). Past walkSkips records
// it searches again, from the hint: keys far apart cost a search each,
// as they did.
func (s *store) getMany(rv uint64, keys [][]byte, order []int, vals [][]byte, oks []bool, scratch *[]byte) {
	if len(order) == 0 {
		return
	}
	var hint btree.PathHint
	s.rlock()
	defer s.mu.RUnlock()
	dead := rv < s.deadMax && s.dead.Len() > 0
	// absent reads the key at order[j], which the tree does not hold.
	absent := func(j int) {
		if dead {
			if r, ok := s.dead.Get(probe(scratch, keys[order[j]])); ok {
				i := order[j]
				vals[i], oks[i] = s.at(r, rv)
			}
		}
	}
	for j := 0; j < len(order); {
		if j+1 == len(order) || !near(keys[order[j]], keys[order[j+1]]) {
			// A search alone: the next key is not near.
			p := probe(scratch, keys[order[j]])
			if r, ok := s.tree.GetHint(p, &hint); ok {
				i := order[j]
				vals[i], oks[i] = s.at(r, rv)
			} else {
				absent(j)
			}
			j++
			continue
		}
		skips, again := 0, false // again: stopped walking, to search
		s.tree.AscendHint(probe(scratch, keys[order[j]]), func(r rec) bool {
			k := r.key()
			for j < len(order) {
				switch c := bytes.Compare(k, keys[order[j]]); {
				case c < 0: // a record between the keys
					skips++
					again = skips > walkSkips
					return !again
				case c == 0:
					i := order[j]
					vals[i], oks[i] = s.at(r, rv)
					skips = 0
				default:
					absent(j)
				}
				j++
				if j < len(order) && !near(keys[order[j-1]], keys[order[j]]) {
					again = true
					return false
				}
			}
			return false
		}, &hint)
		if !again { // past the tree's last record, or done
			for ; j < len(order); j++ {
				absent(j)
			}
		}
	}
}

// walkSkips is how many records between two keys getMany steps over
// before it searches for the next key instead.
const walkSkips = 16

// near reports whether getMany walks from key a to key b, the next one:
// when b differs from a only in its last walkNear bytes (a directory's
// keys, tuples of small integers). Keys further apart (a single-row
// push's id key, its cell's directory key and its shape's, in three
// key families) are searched for at once: stepping over walkSkips records
// first made a single-row INSERT 5% dearer (callgrind, fdbqueue bench).
func near(a, b []byte) bool {
	n := len(b) - walkNear
	return n <= 0 || len(a) >= n && bytes.Equal(a[:n], b[:n])
}

// walkNear is how many last bytes of two keys near lets differ: two
// small integers' (tuple-packed, 2 bytes each).
const walkNear = 4

// Deletions leave the tree at once: the tree holds each live key, and a
// key whose newest version is a deletion moves to s.dead until the
// collector drops it (no reader can see past it any more). A read at the
// newest version (most reads) then never steps over deleted keys. Before,
// it did: a queue's head is where pops delete, and with consumers
// interleaving, one of them always holds a read version a few hundred
// commits old (a goroutine waiting for a core keeps its read version),
// which kept every deletion since in the tree, where each scan of the head
// read past them: 170 deleted keys visited per range read with 2
// consumers, 460 with 8, measured on 100,000 tasks, and pops twice as slow
// with 2 consumers as with 1.
//
// A reader at rv needs from s.dead only the keys deleted after rv that it
// still sees: those are among the records of the commits after rv, which
// are still in the collector's queue (it keeps them while a reader is
// older), so deadSinceLocked finds them there, in the few commits since
// rv, rather than in s.dead.

// deadScanCommits is how many commits since a reader's version
// deadSinceLocked reads through before it reads s.dead's range instead.
var deadScanCommits = 64

// deadSinceLocked returns, sorted by key (descending when reverse), the
// key-values visible at rv of the keys in [begin, end) (begin excluded if
// beginEx) that are deleted now, by commits after rv. Callers hold s.mu,
// shared or not.
func (s *store) deadSinceLocked(rv uint64, begin []byte, beginEx bool, end []byte, reverse bool) []kv.KeyValue {
	if rv >= s.deadMax || s.dead.Len() == 0 {
		return nil
	}
	q := s.gcq[s.gcHead:]
	i, _ := slices.BinarySearchFunc(q, rv+1, func(g gcRecord, v uint64) int { return cmp.Compare(g.ver, v) })
	var out []kv.KeyValue
	if len(q)-i > deadScanCommits {
		// Far behind (a checkpoint, a reader that waited long): the
		// deletions in the range, from s.dead, cost less than every
		// commit since, read again for each batch of a range read.
		s.dead.Ascend(probe(new([]byte), begin), func(r rec) bool {
			key := r.key()
			if bytes.Compare(key, end) >= 0 {
				return false
			}
			if beginEx && bytes.Equal(key, begin) || r.ver() <= rv {
				return true
			}
			if v, ok := s.at(r, rv); ok {
				out = append(out, kv.KeyValue{Key: key, Value: v})
			}
			return true
		})
		if reverse {
			slices.Reverse(out)
		}
		return out
	}
	for _, g := range q[i:] {
		for _, r := range g.entries {
			// The key's newest version is r, a deletion (r in s.dead);
			// a deletion superseded since is stale, and its key is in
			// the tree or deleted again later.
			if w := r.word(); w&flagDel == 0 || w&flagStale != 0 {
				continue
			}
			key := r.key()
			if c := bytes.Compare(key, begin); c < 0 || c == 0 && beginEx || bytes.Compare(key, end) >= 0 {
				continue
			}
			if v, ok := s.at(r, rv); ok {
				out = append(out, kv.KeyValue{Key: key, Value: v})
			}
		}
	}
	slices.SortFunc(out, func(a, b kv.KeyValue) int {
		if reverse {
			return bytes.Compare(b.Key, a.Key)
		}
		return bytes.Compare(a.Key, b.Key)
	})
	return out
}

// outside tells a walk of [begin, end) where key, the item it came to,
// lies: past the range (stop), or not in it yet (skip: a reverse walk,
// which starts at end itself).
func outside(key, begin, end []byte, reverse bool) (stop, skip bool) {
	if reverse {
		return bytes.Compare(key, begin) < 0, bytes.Compare(key, end) >= 0
	}
	return bytes.Compare(key, end) >= 0, false
}

// fetch appends to out up to max key-values visible at rv in [begin, end),
// forward or reverse. done reports that the range holds no more.
// If beginEx, begin itself is excluded. scratch is the caller's buffer for
// the walk's probe.
func (s *store) fetch(rv uint64, begin []byte, beginEx bool, end []byte, reverse bool, max int, out []kv.KeyValue, scratch *[]byte) ([]kv.KeyValue, bool) {
	done := true
	var dead []kv.KeyValue // keys deleted since rv, in the order of the walk
	add := func(key, val []byte) bool {
		if len(out) == max {
			done = false
			return false
		}
		out = append(out, kv.KeyValue{Key: key, Value: val})
		return true
	}
	// before reports whether a comes before b in the walk's order.
	before := func(a, b []byte) bool {
		if reverse {
			return bytes.Compare(a, b) > 0
		}
		return bytes.Compare(a, b) < 0
	}
	visit := func(r rec) bool {
		key := r.key()
		if beginEx && bytes.Equal(key, begin) {
			if reverse {
				return false
			}
			return true
		}
		if stop, skip := outside(key, begin, end, reverse); stop || skip {
			return !stop
		}
		for len(dead) > 0 && before(dead[0].Key, key) {
			if !add(dead[0].Key, dead[0].Value) {
				return false
			}
			dead = dead[1:]
		}
		if v, ok := s.at(r, rv); ok {
			return add(key, v)
		}
		return true
	}
	s.rlock()
	dead = s.deadSinceLocked(rv, begin, beginEx, end, reverse)
	if reverse {
		s.tree.Descend(probe(scratch, end), visit)
	} else {
		s.tree.Ascend(probe(scratch, begin), visit)
	}
	for done && len(dead) > 0 && add(dead[0].Key, dead[0].Value) {
		dead = dead[1:]
	}
	s.mu.RUnlock()
	return out, done
}

// first returns the first key-value visible at rv in [begin, end), or
// the last reading in reverse: fetch with max 1, without its closures'
// state or an out slice, and from the path of the last seek for its
// pivot (heads.go). scratch is the caller's buffer for the seek's probe.
func (s *store) first(rv uint64, begin, end []byte, reverse bool, scratch *[]byte) (kv.KeyValue, bool) {
	var e kv.KeyValue
	found := false
	pivot := begin
	if reverse {
		pivot = end
	}
	slot := s.heads.slot(pivot)
	hint := slot.load()
	// visit stops at the first key visible at rv, or past the range.
	visit := func(r rec) bool {
		key := r.key()
		if stop, skip := outside(key, begin, end, reverse); stop || skip {
			return !stop
		}
		if v, ok := s.at(r, rv); ok {
			e, found = kv.KeyValue{Key: key, Value: v}, true
			return false
		}
		return true
	}
	s.rlock()
	if reverse {
		s.tree.DescendHint(probe(scratch, pivot), visit, &hint)
	} else {
		s.tree.AscendHint(probe(scratch, pivot), visit, &hint)
	}
	// A key deleted since rv that comes before it (fetch's merge, for one
	// key): only a reader older than the last deletion has any.
	if dead := s.deadSinceLocked(rv, begin, false, end, reverse); len(dead) > 0 {
		if d := dead[0]; !found || reverse && bytes.Compare(d.Key, e.Key) > 0 || !reverse && bytes.Compare(d.Key, e.Key) < 0 {
			e, found = d, true
		}
	}
	s.mu.RUnlock()
	slot.store(&hint)
	if found {
		e.Value = presence(e.Value, true)
	}
	return e, found
}

// installLocked applies b at version ver, makes it readable and collects
// garbage. Callers hold s.mu, and install versions in order.
func (s *store) installLocked(now time.Time, ver uint64, b *batch) {
	s.gcLocked(now, s.applyAtLocked(ver, b))
}

// applyAtLocked applies b at version ver and makes it readable, leaving
// garbage collection to the caller: it returns the budget the collection
// should get for it. Callers hold s.mu, and apply versions in order.
func (s *store) applyAtLocked(ver uint64, b *batch) int {
	return s.publishLocked(ver, s.stageLocked(ver, b), b.bump)
}

// stageLocked installs b at version ver, newer than s.version, and
// returns the records it wrote: readers, at s.version or older, do not see
// them until publishLocked makes ver readable (a file database stages a
// group while its fsync runs, wal.go). The records join s.gcq at once, as
// a reader's range read finds there the keys deleted since its version.
// Callers hold s.mu.
func (s *store) stageLocked(ver uint64, b *batch) []rec {
	touched := s.applyLocked(ver, b)
	s.gcq = append(s.gcq, gcRecord{ver: ver, entries: touched})
	return touched
}

// publishLocked makes ver, staged with the records touched, the version
// new readers read, then fires the watches its changes fire: a watcher
// woken reads at ver or later. A commit that bumped the metadata version
// makes ver its version too, in the same hold of activeMu, under which
// readers take both (acquireReadVersion). It returns a collection budget
// for gcLocked. Callers hold s.mu exclusively.
func (s *store) publishLocked(ver uint64, touched []rec, bump bool) int {
	if bump {
		s.activeMu.Lock()
		s.mdv = stamp(ver)
		s.version.Store(ver)
		s.activeMu.Unlock()
	} else {
		s.version.Store(ver)
	}
	s.fireWatchesLocked(ver, touched)
	return 2*len(touched) + 64
}

// supersedeLocked makes r, just set in the tree in place of prev, the
// newest version of its key, with prev the next older one. Callers hold
// s.mu.
func (s *store) supersedeLocked(r, prev rec) {
	prev.mark(flagStale)
	if s.older == nil {
		s.older = make(map[rec]rec)
	}
	s.older[r] = prev
	r.mark(flagOlder)
}

// applyLocked installs b at version ver and returns the records it wrote.
// Callers hold s.mu.
func (s *store) applyLocked(ver uint64, b *batch) []rec {
	var touched []rec
	if len(b.clears) > 0 {
		touched = s.applyClearsLocked(ver, b.clears, touched)
	}
	if len(b.writes) == 0 {
		return touched
	}
	if cap(touched)-len(touched) < len(b.writes) {
		grown := make([]rec, len(touched), len(touched)+len(b.writes))
		copy(grown, touched)
		touched = grown
	}
	// The writes are in key order, and most land next to the previous one
	// (a push's keys sit at the ends of their ranges): a path hint starts
	// each search where the last one ended, and the Set of a record reuses
	// its Get's path. Measured: 407 -> 264 key comparisons per row of a
	// 100-row INSERT into a 100,000-task queue. SetHintNext inserts a key
	// that lands right after the previous one with two comparisons, no
	// search: 14.3 -> 9.8 comparisons a key of BenchmarkApplyBatch; and
	// s.fing one that lands right after a key of the last commits
	// (fingers.go).
	var hint btree.PathHint
	// The keys s.dead holds span [deadLo, deadHi]: a key outside, most
	// of them (a dropped table's deletions sit under its own prefix,
	// which no later table shares), is not looked up there.
	var deadLo, deadHi []byte
	if s.dead.Len() > 0 {
		lo, _ := s.dead.Min()
		hi, _ := s.dead.Max()
		deadLo, deadHi = lo.key(), hi.key()
	}
	s.fing.start(ver, len(b.writes), s.tree.Len())
	for i := 0; i < len(b.writes); i++ {
		w := b.writes[i]
		if j := setsFrom(b.writes, i); j-i > 1 {
			touched = s.setRunsLocked(ver, b, i, j, &hint, deadLo, deadHi, touched)
			i = j - 1
			continue
		}
		if len(w.ops) == 0 && w.base != baseDB {
			// A plain set or clear does not depend on the value it
			// replaces: one search does it, where reading the current
			// record first took two.
			pre, _ := b.pre.take(i, ver, &s.slabs)
			if r, ok := s.replaceLocked(ver, i, w, pre, &hint, deadLo, deadHi); ok {
				touched = append(touched, r)
			}
			continue
		}
		pk := probe(&s.probeBuf, w.key)
		cur, exists := s.tree.GetHint(pk, &hint)
		tombed := exists && len(s.tombs) > 0 && s.tombed(w.key, cur.ver(), ver)
		inDead := false
		if !exists && deadLo != nil && bytes.Compare(w.key, deadLo) >= 0 && bytes.Compare(w.key, deadHi) <= 0 {
			cur, inDead = s.dead.Get(pk)
		}
		var curVal []byte
		if exists && !tombed {
			curVal = cur.val()
		}
		val, ok := w.resolve(curVal, exists && !tombed)
		if !ok && (!exists || tombed) {
			continue // absent before and after (a tombed key leaves with its tombstone)
		}
		if !ok {
			val = nil
		}
		r := s.slabs.put(ver, w.key, val, !ok)
		switch {
		case !ok: // a live key deleted
			s.tree.DeleteHint(cur, &hint)
			s.buryLocked(r, cur)
		case inDead: // a deleted key back
			s.dead.Delete(cur)
			s.tree.SetHint(r, &hint)
			s.supersedeLocked(r, cur)
		default:
			if prev, replaced := s.fing.insert(s.tree, r, &hint); replaced {
				s.supersedeLocked(r, prev)
			}
		}
		touched = append(touched, r)
	}
	s.fing.finish()
	if len(s.unchanged) > 0 {
		s.forgetUnchangedLocked(ver, len(b.writes))
	}
	return touched
}

// replaceLocked applies w, the batch's write i, a plain set or clear (no
// atomic operations), at ver, and returns the record it wrote, if any: a
// clear of an absent key writes none. pre is a set's record written ahead
// (prebuilt.go), if not zero. deadLo and deadHi are the span of s.dead's
// keys (nil if it is empty). Callers hold s.mu.
func (s *store) replaceLocked(ver uint64, i int, w *write, pre rec, hint *btree.PathHint, deadLo, deadHi []byte) (rec, bool) {
	if w.base == baseCleared {
		prev, deleted := s.tree.DeleteHint(probe(&s.probeBuf, w.key), hint)
		if !deleted {
			return rec{}, false // absent before and after
		}
		r := s.slabs.put(ver, w.key, nil, true)
		s.buryLocked(r, prev)
		return r, true
	}
	r := pre
	if r.p == nil {
		r = s.slabs.put(ver, w.key, w.val, false)
	}
	if prev, replaced := s.fing.insert(s.tree, r, hint); replaced {
		s.supersedeLocked(r, prev)
		s.noteUnchangedLocked(i, r, prev, ver)
	} else {
		s.undeadLocked(r, deadLo, deadHi)
	}
	return r, true
}

// setsFrom returns the end of the stretch of plain sets (prebuildable)
// that starts at writes[i], of at most maxSetRun: i if writes[i] is not
// one.
func setsFrom(writes []*write, i int) int {
	end := min(len(writes), i+maxSetRun)
	for i < end && prebuildable(writes[i]) {
		i++
	}
	return i
}

// maxSetRun bounds the stretches setRunsLocked takes, and so the
// records its scratch keeps: a load of many thousand rows a commit
// leaves no larger a buffer behind than a 100-row INSERT. A leaf takes at
// most 127 keys of a run anyway; a cut costs one more TrySetRun.
const maxSetRun = 512

// setRunsLocked applies the plain sets b.writes[i:j] at ver, as
// replaceLocked does each, and returns touched with their records
// appended. Their keys ascend, and most of them come in runs of adjacent
// keys (a priority's items, consecutive ids): btree.TrySetRun inserts
// each run where the last key went with one walk of the path and one
// shift of the leaf; a key it does not take goes through the fingers or
// a search. Callers hold s.mu.
func (s *store) setRunsLocked(ver uint64, b *batch, i, j int, hint *btree.PathHint, deadLo, deadHi []byte, touched []rec) []rec {
	recs := s.fing.run[:0]
	for k := i; k < j; k++ {
		r, ok := b.pre.take(k, ver, &s.slabs)
		if !ok {
			w := b.writes[k]
			r = s.slabs.put(ver, w.key, w.val, false)
		}
		recs = append(recs, r)
	}
	for k := 0; k < len(recs); {
		if m := s.tree.TrySetRun(recs[k:], hint); m > 0 {
			for _, r := range recs[k : k+m] {
				s.undeadLocked(r, deadLo, deadHi)
			}
			touched = append(touched, recs[k:k+m]...)
			if s.fing.adding {
				s.fing.extend(s.tree, recs[k+m-1], hint)
			}
			k += m
			continue
		}
		r := recs[k]
		if prev, replaced := s.fing.insertFar(s.tree, r, hint); replaced {
			s.supersedeLocked(r, prev)
			s.noteUnchangedLocked(i+k, r, prev, ver)
		} else {
			s.undeadLocked(r, deadLo, deadHi)
		}
		touched = append(touched, r)
		k++
	}
	clear(recs) // pins no slab
	s.fing.run = recs[:0]
	return touched
}

// undeadLocked makes r, a set just inserted into the tree of a key it did
// not hold, supersede the key's deletion if s.dead holds one (a deleted
// key back). deadLo and deadHi are the span of s.dead's keys (nil if it
// is empty). Callers hold s.mu.
func (s *store) undeadLocked(r rec, deadLo, deadHi []byte) {
	if deadLo == nil {
		return
	}
	if key := r.key(); bytes.Compare(key, deadLo) < 0 || bytes.Compare(key, deadHi) > 0 {
		return
	}
	if cur, inDead := s.dead.Get(r); inDead {
		s.dead.Delete(cur)
		s.supersedeLocked(r, cur)
	}
}

// buryLocked files r, the deletion at version r.ver() of prev's key, just
// removed from the tree, in s.dead. Callers hold s.mu.
func (s *store) buryLocked(r, prev rec) {
	s.dead.Set(r)
	s.deadMax = max(s.deadMax, r.ver())
	s.supersedeLocked(r, prev)
}

// applyClearsLocked writes a deletion at ver for every key the clears
// cover that is not deleted already, and appends them to touched. Callers
// hold s.mu.
func (s *store) applyClearsLocked(ver uint64, clears []kv.Range, touched []rec) []rec {
	var cleared []rec
	for _, r := range clears {
		if s.clearManyLocked(ver, r) {
			continue
		}
		s.tree.Ascend(probe(&s.probeBuf, r.Begin), func(e rec) bool {
			key := e.key()
			if bytes.Compare(key, r.End) >= 0 {
				return false
			}
			cleared = append(cleared, e)
			return true
		})
	}
	if len(cleared) == 0 {
		return touched
	}
	var hint btree.PathHint
	for _, prev := range cleared {
		r := s.slabs.put(ver, prev.key(), nil, true)
		s.tree.DeleteHint(prev, &hint)
		s.buryLocked(r, prev)
		touched = append(touched, r)
	}
	return touched
}
