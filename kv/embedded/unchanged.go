// Writes that leave a key as it was: no conflict for its readers.

package embedded

import (
	"bytes"
	"sort"
)

// A set of a key to the value it already holds changes nothing a reader
// can see, at any version: a transaction that read the key before it,
// and commits after it, read what the key holds at its commit as well,
// so it can be ordered there, as the conflict check orders every
// commit. The check therefore does not count such a write: once the
// batch is installed, its commit record (the history the checks read)
// forgets the keys it set to their values (forgetUnchangedLocked).
//
// Why: a queue writes a cell's directory key when a push finds it
// absent, and a push that finds it present depends on it, with a read
// conflict. Concurrent pushes into a new table all find the new cells
// absent, and each writes their keys; every one of those writes but the
// first rewrote a key already there, and made every push that had read
// it there since conflict. 8 clients' 100-row INSERTs into a new table
// of 20,000 rows on file: conflicted in 1 statement of 4, retried, and
// waited for their backoff.
//
// Readers see the same values, and the same versions of them, as
// before: the write is installed as any other (its record is the key's
// newest version, the one before it older), and a watch on the key
// fires. FoundationDB checks its writes by key alone, so the same
// transactions may conflict there: this only spares conflicts no
// serializable order needs.

// noteUnchangedLocked notes b.writes[i], a plain set that installed r at
// ver in place of prev, as leaving its key unchanged if prev held r's
// value and was visible just before ver: not hidden by a range clear
// whose keys are still in the tree (tombs.go). Callers hold s.mu
// exclusively, and note a batch's writes in their order.
func (s *store) noteUnchangedLocked(i int, r, prev rec, ver uint64) {
	if !bytes.Equal(prev.val(), r.val()) {
		return
	}
	if len(s.tombs) > 0 && s.tombed(r.key(), prev.ver(), ver) {
		return
	}
	s.unchanged = append(s.unchanged, i)
}

// forgetUnchangedLocked removes from the commit record of ver, a batch of
// n writes, the keys of the writes noted as leaving their keys unchanged,
// and empties the note. A commit is recorded (settleLocked) before it is
// installed: a check made in between counts those writes, which only
// costs a retry. Callers hold s.mu exclusively.
func (s *store) forgetUnchangedLocked(ver uint64, n int) {
	unchanged := s.unchanged
	s.unchanged = unchanged[:0]
	h := s.history
	i := sort.Search(len(h), func(i int) bool { return h[i].ver >= ver })
	if i == len(h) || h[i].ver != ver || len(h[i].keys) != n {
		return // no record of this batch: recovery replays a log without one
	}
	keys := h[i].keys
	kept, u := 0, 0
	for j, k := range keys {
		if u < len(unchanged) && unchanged[u] == j {
			u++
			continue
		}
		keys[kept] = k
		kept++
	}
	clear(keys[kept:]) // pins no slab once pooled (release clears keys[:kept])
	h[i].keys = keys[:kept]
}
