// Conflict detection: the write spans of recent commits, checked against a
// committing transaction's serializable read spans.

package embedded

import (
	"bytes"
	"slices"

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

// commitRecord is one commit's writes, kept for conflict checks.
type commitRecord struct {
	ver    uint64
	writes []span
}

// conflictsLocked reports whether any commit after rv wrote into reads
// (sorted by begin, disjoint). Callers hold s.mu.
func (s *store) conflictsLocked(rv uint64, reads []span) bool {
	// History is in version order: find the first record after rv.
	i := len(s.history)
	for i > 0 && s.history[i-1].ver > rv {
		i--
	}
	for _, rec := range s.history[i:] {
		for _, w := range rec.writes {
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
			if lo < len(reads) && reads[lo].intersects(w) {
				return true
			}
		}
	}
	return false
}

// writeSpans lists the write-conflict spans of b and the explicit write
// conflict keys.
func (t *txn) writeSpans(b *batch) []span {
	out := make([]span, 0, len(b.clears)+len(b.writes)+len(t.wconf))
	for _, r := range b.clears {
		out = append(out, span{begin: r.Begin, end: r.End})
	}
	for _, w := range b.writes {
		out = append(out, span{begin: w.key})
	}
	return append(out, t.wconf...)
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
