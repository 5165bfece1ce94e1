// Conflict detection: the write spans of recent commits, checked against a
// committing transaction's serializable read spans.

package embedded

import (
	"bytes"
	"slices"
	"sync"

	"github.com/fdbqueue/fdbqueue/kv"
)

// span is a key range [begin, end); end == nil means the single key begin.
type span struct {
	begin, end []byte
}

// beforeEnd reports whether x < s's end.
func (s span) beforeEnd(x []byte) bool {
	if s.end == nil {
		return bytes.Compare(x, s.begin) <= 0
	}
	return bytes.Compare(x, s.end) < 0
}

func (s span) intersects(o span) bool {
	return o.beforeEnd(s.begin) && s.beforeEnd(o.begin)
}

func (s span) size() int { return len(s.begin) + len(s.end) }

// commitRecord is one commit's writes, kept for conflict checks: the keys it
// set or mutated, in order, and its cleared ranges and explicit write
// conflicts.
type commitRecord struct {
	ver    uint64
	keys   [][]byte // sorted, distinct
	ranges []span
	bufs   *recordBufs // keys' arrays, back to recordPool with the record
}

// recordBufs are the arrays of a commit record's keys: the slice of them,
// and the bytes of those copied. They were made afresh for every commit,
// 98 of the 985 bytes a row of a 100-row INSERT allocated (its 350 keys
// at 24 bytes a slice); they go back to recordPool once the record leaves
// the history (release), when no conflict check can read them.
type recordBufs struct {
	keys [][]byte
	buf  []byte
}

var recordPool = sync.Pool{New: func() any { return new(recordBufs) }}

// pooledKeys and pooledKeyBytes bound the keys, and their copied bytes, a
// pooled recordBufs keeps: one commit of a million keys does not leave
// its arrays in the pool.
const (
	pooledKeys     = 4096
	pooledKeyBytes = 256 << 10
)

// release returns the arrays of r, a record just dropped from the
// history or never put in it (a refused commit), to recordPool. Its keys
// are cleared: a pooled array pins no slab. Callers hold s.mu, or own r
// alone.
func (r *commitRecord) release() {
	rb := r.bufs
	if rb == nil {
		return
	}
	clear(r.keys)
	r.keys, r.bufs = nil, nil
	if cap(rb.keys) <= pooledKeys && cap(rb.buf) <= pooledKeyBytes {
		recordPool.Put(rb)
	}
}

// conflictsLocked reports whether any commit after rv wrote into reads
// (sorted by begin, disjoint, each with an explicit end). Callers hold s.mu.
func (s *store) conflictsLocked(rv uint64, reads []span) bool {
	// History is in version order: find the first record after rv.
	i := len(s.history)
	for i > 0 && s.history[i-1].ver > rv {
		i--
	}
	for _, rec := range s.history[i:] {
		for _, w := range rec.ranges {
			if readsIntersect(reads, w) {
				return true
			}
		}
		// Both sides are sorted: search the longer one for each of the
		// shorter one's. A 100-row INSERT writes hundreds of keys and
		// reads a few ranges; a fit pop reads dozens and writes a few.
		if len(rec.keys) <= len(reads) {
			for _, k := range rec.keys {
				if readsIntersect(reads, span{begin: k}) {
					return true
				}
			}
			continue
		}
		// The reads ascend too: each search starts where the last one
		// ended, and gallops, as the next key at or after a read is
		// mostly a few keys on. Under 8 clients' 100-row INSERTs (their
		// 100 id reads against each commit since their read version,
		// hundreds of keys each), a binary search of all the keys for
		// every read cost 0.3 us a row under the store's lock.
		j := 0
		for _, r := range reads {
			if j = seekKeys(rec.keys, j, r.begin); j == len(rec.keys) {
				break
			}
			if bytes.Compare(rec.keys[j], r.end) < 0 {
				return true
			}
		}
	}
	return false
}

// seekKeys returns the index of the first of keys (sorted) at or after x,
// from j on (keys[:j] are before x), galloping from j.
func seekKeys(keys [][]byte, j int, x []byte) int {
	lo, step := j, 1
	// keys[:lo] are before x.
	for lo+step-1 < len(keys) && bytes.Compare(keys[lo+step-1], x) < 0 {
		lo += step
		step *= 2
	}
	hi := min(lo+step-1, len(keys)) // keys[hi:] are at or after x
	i, _ := slices.BinarySearchFunc(keys[lo:hi], x, bytes.Compare)
	return lo + i
}

// readsIntersect reports whether w intersects one of reads (sorted by
// begin, disjoint).
func readsIntersect(reads []span, w span) bool {
	// First read span whose end is past w.begin.
	lo, hi := 0, len(reads)
	for lo < hi {
		m := (lo + hi) / 2
		if reads[m].beforeEnd(w.begin) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo < len(reads) && reads[lo].intersects(w)
}

// record lists b's writes for the history: the keys of b.writes (sorted by
// key), and the clears and explicit write-conflict spans. The keys are
// not the writes' own, which are in the transaction's byte blocks, reused
// once it ends (txnBufs): a key set by a pre-built record is the record's
// (its bytes never change), the others are copied.
func (t *txn) record(b *batch) commitRecord {
	rb := recordPool.Get().(*recordBufs)
	if cap(rb.keys) < len(b.writes) {
		rb.keys = make([][]byte, len(b.writes))
	}
	keys := rb.keys[:len(b.writes)] // all nil (release)
	n := 0                          // bytes to copy
	for i, w := range b.writes {
		switch {
		case b.pre != nil && b.pre[i].p != nil:
			keys[i] = b.pre[i].key()
		case len(w.key) == 0:
			keys[i] = []byte{}
		default:
			n += len(w.key)
		}
	}
	if n > 0 {
		if cap(rb.buf) < n {
			rb.buf = make([]byte, 0, n)
		}
		buf := rb.buf[:0]
		for i, w := range b.writes {
			if keys[i] == nil {
				buf = append(buf, w.key...)
				keys[i] = buf[len(buf)-len(w.key) : len(buf) : len(buf)]
			}
		}
	}
	var ranges []span
	if n := len(b.clears) + len(t.wconf); n > 0 {
		ranges = make([]span, 0, n)
		for _, r := range b.clears {
			ranges = append(ranges, span{begin: r.Begin, end: r.End})
		}
		ranges = append(ranges, t.wconf...)
	}
	return commitRecord{keys: keys, ranges: ranges, bufs: rb}
}

// mergeSpans sorts spans by begin and merges overlapping or adjacent ones.
// Every span of the result has an explicit end.
func mergeSpans(in []span) []span {
	slices.SortFunc(in, func(a, b span) int { return bytes.Compare(a.begin, b.begin) })
	out := make([]span, 0, len(in))
	for _, s := range in {
		end := s.end
		if end == nil {
			end = kv.KeyAfter(s.begin)
		} else if bytes.Equal(s.begin, end) {
			continue // a range read that read nothing
		}
		if n := len(out); n > 0 && bytes.Compare(s.begin, out[n-1].end) <= 0 {
			if bytes.Compare(end, out[n-1].end) > 0 {
				out[n-1].end = end
			}
			continue
		}
		out = append(out, span{begin: s.begin, end: end})
	}
	return out
}
