package queues

import (
	"slices"
	"sync"
)

// sedimentBudget is step 1's budget for limits whose last fit pop found
// nothing there (see fitHints).
const sedimentBudget = 16

// maxSkipShift bounds the single fit pops that skip step 1 between two
// that try it, after misses in a row: 1<<maxSkipShift - 1 (see skipRun).
const maxSkipShift = 6

// fitHints remembers, per consumer limits, whether step 1 of the last fit
// pop with those limits found its item. Under a mix of consumers the head
// of a queue fills with tasks that only large consumers take (sediment):
// a small consumer then reads scanBudget items for nothing before every
// index search. After such a miss the next pop with the same limits reads
// only sedimentBudget items; a hit there restores the full budget. After
// misses in a row, single pops skip step 1 and go to the index: 1, 3, 7,
// ... up to 63 pops between two that try step 1 again (skipRun), as the
// sediment that made step 1 miss mostly stays. A miss also has the next
// pop read the index's directory in the round of step 1's first read.
// For multi-row pops and leases (findFitN), with the number of rows too,
// it remembers whether step 1 fell short, and only to read the directory
// with step 1. Hints only choose what step 1 reads and when the directory
// is read: the answer is the same either way, as step 2 is exact.
type fitHints struct {
	mu     sync.Mutex
	missed map[string]missStreak // by packed limits (and n)
	// firsts are the first coordinates of the cell directory's keys that
	// searches found, sorted, for reading the directory in one round
	// (readDirAhead): the cells in use change rarely.
	firsts []int64
}

// maxHints bounds the limits remembered: past it the hints start over.
const maxHints = 4096

// hintKey returns the key of the hints of a fit pop in order with limits,
// or, for n > 0, of a multi-row pop or lease of n rows, in buf.
func hintKey(buf []byte, order Order, limits []int64, n int) []byte {
	key := appendInts(append(buf[:0], byte(order)), limits...)
	if n > 0 {
		key = appendInts(append(key, 'n'), int64(n)) // 'n' is no tuple type code
	}
	return key
}

// missStreak is what the hints under a key remember: how many choices in
// a row step 1 missed (at most 255; none: the last one hit), and how many
// single pops skipped step 1 since the last one that tried it.
type missStreak struct {
	misses, skipped uint8
}

// skipRun is how many single pops in a row skip step 1 after the last
// one that tried it, the misses in a row before: none after one miss,
// then 1, 3, 7, ..., 1<<maxSkipShift - 1.
func (m missStreak) skipRun() uint8 {
	if m.misses < 2 {
		return 0
	}
	return 1<<min(m.misses-1, maxSkipShift) - 1
}

// budget returns step 1's budget for the hints under key: 0 to skip it.
func (h *fitHints) budget(key []byte) int {
	m := h.streak(key)
	switch {
	case m.misses == 0:
		return scanBudget
	case m.skipped < m.skipRun():
		return 0
	}
	return sedimentBudget
}

// missedLast reports whether step 1 of the last choice with the hints
// under key missed.
func (h *fitHints) missedLast(key []byte) bool { return h.streak(key).misses > 0 }

// streak returns what the hints under key remember.
func (h *fitHints) streak(key []byte) missStreak {
	if h == nil {
		return missStreak{}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.missed[string(key)]
}

// record remembers whether step 1 of a choice with the hints under key
// missed.
func (h *fitHints) record(key []byte, missed bool) {
	h.update(key, func(m missStreak) missStreak {
		if !missed {
			return missStreak{}
		}
		return missStreak{misses: min(m.misses, 254) + 1}
	})
}

// skipped remembers that a single pop with the hints under key skipped
// step 1 (budget 0).
func (h *fitHints) skipped(key []byte) {
	h.update(key, func(m missStreak) missStreak {
		m.skipped++
		return m
	})
}

func (h *fitHints) update(key []byte, fn func(missStreak) missStreak) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	old := h.missed[string(key)]
	m := fn(old)
	if m == old {
		return
	}
	if h.missed == nil || len(h.missed) >= maxHints {
		h.missed = map[string]missStreak{}
	}
	if m == (missStreak{}) {
		delete(h.missed, string(key))
		return
	}
	h.missed[string(key)] = m
}

// cellFirsts returns the first coordinates of the cell directory's keys
// that searches found.
func (h *fitHints) cellFirsts() []int64 {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.firsts
}

// sawCellFirsts adds the first coordinates of the cell directory's keys
// that a search found, vs, in ascending order.
func (h *fitHints) sawCellFirsts(vs []int64) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	firsts, copied := h.firsts, false
	for _, v := range vs {
		i, ok := slices.BinarySearch(firsts, v)
		if ok {
			continue
		}
		if !copied {
			firsts, copied = slices.Clone(firsts), true // searches hold the old slice
		}
		firsts = slices.Insert(firsts, i, v)
	}
	if len(firsts) > maxHints {
		firsts = vs
	}
	h.firsts = firsts
}
