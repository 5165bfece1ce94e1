package queues

import (
	"sync"

	"github.com/fdbqueue/fdbqueue/kv"
)

// searchMem is the memory a search of the fit index reads into: its
// arrays of reads, the cells' coordinates and the ranges it reads, handed
// out one after another and reused by the next search (searchMems). Issued
// in rounds, a search holds every read of a round at once, and would
// otherwise allocate about as many bytes as its reads.
//
// Nothing a search hands on keeps what it took from here: the reads copy
// their ranges (the engines, the conflictReader, an Attempt's memory), and
// a search returns positions.
type searchMem struct {
	heads  []cellHeadRead
	levels []oneRow
	strs   []straddleRead
	ints   []int64
	at     []int // the whole cells' indexes in a decoded directory
	bytes  []byte
	// search is the search using m, and res its scratch resources.
	search indexSearch
	res    []int64
	// whole and straddling are the coordinates of the cells a search
	// lists (cells): whole in ints, straddling in an array of its own.
	whole, straddling []int64
	// wholeCells is the most whole cells a search of this memory listed
	// (cells reserves room for as many).
	wholeCells int
	// levelRows holds scanStraddleMax's entries of one priority.
	levelRows []kv.KeyValue
}

// searchMems holds the memory of the searches not running.
var searchMems = sync.Pool{New: func() any { return new(searchMem) }}

// bump returns n elements of *buf after those handed out before, zeroed,
// in a new array when *buf has no room left (those handed out before stay
// where they are).
func bump[T any](buf *[]T, n int) []T {
	if cap(*buf)-len(*buf) < n {
		*buf = make([]T, 0, max(n, 2*cap(*buf), 16))
	}
	b := *buf
	*buf = b[:len(b)+n]
	out := b[len(b) : len(b)+n : len(b)+n]
	clear(out)
	return out
}

// appendTo returns what app appends to the room left in *buf, after what
// was handed out before, in a new array when *buf has no room left (what
// was handed out before stays where it is): app must append at most room
// bytes.
func appendTo(buf *[]byte, room int, app func([]byte) []byte) []byte {
	if cap(*buf)-len(*buf) < room {
		*buf = make([]byte, 0, max(room, 2*cap(*buf), 256))
	}
	b := app((*buf)[len(*buf):len(*buf)])
	*buf = (*buf)[:len(*buf)+len(b)]
	return b[:len(b):len(b)]
}

// extending returns the range extending prefix with vs appended (see
// extending), in m.
func (m *searchMem) extending(prefix []byte, vs ...int64) kv.Range {
	b := appendTo(&m.bytes, 2*(len(prefix)+maxIntLen*len(vs))+1, func(b []byte) []byte {
		b = appendInts(append(b, prefix...), vs...)
		return append(append(b, b...), tupleEnd)
	})
	n := len(b) / 2
	return kv.Range{Begin: b[:n:n], End: b[n:]}
}

// prefixRange is kv.PrefixRange of prefix with vs appended, in m.
func (m *searchMem) prefixRange(prefix []byte, vs ...int64) kv.Range {
	b := appendTo(&m.bytes, 2*(len(prefix)+maxIntLen*len(vs)), func(b []byte) []byte {
		b = appendInts(append(b, prefix...), vs...)
		return append(b, b...)
	})
	n := len(b) / 2
	end := b[n:]
	for len(end) > 0 && end[len(end)-1] == 0xff {
		end = end[:len(end)-1]
	}
	end[len(end)-1]++ // (a key under a queue's prefix is never all 0xff)
	return kv.Range{Begin: b[:n:n], End: end[:len(end):len(end)]}
}

// release gives m back for the next search, dropping what it refers to:
// what bump handed out from the arrays m holds now.
func (m *searchMem) release() {
	clear(m.heads)
	clear(m.levels)
	clear(m.strs)
	m.heads, m.levels, m.strs, m.ints, m.at, m.bytes = m.heads[:0], m.levels[:0], m.strs[:0], m.ints[:0], m.at[:0], m.bytes[:0]
	m.whole, m.straddling, m.res = nil, m.straddling[:0], m.res[:0]
	m.search = indexSearch{}
	searchMems.Put(m)
}
