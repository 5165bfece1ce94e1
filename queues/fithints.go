package queues

import (
	"slices"
	"sync"
)

// sedimentBudget is step 1's budget for limits whose last fit pop found
// nothing there (see fitHints).
const sedimentBudget = 16

// fitHints remembers, per consumer limits, whether step 1 of the last fit
// pop with those limits found its item. Under a mix of consumers the head
// of a queue fills with tasks that only large consumers take (sediment):
// a small consumer then reads scanBudget items for nothing before every
// index search. After such a miss the next pop with the same limits reads
// only sedimentBudget items; a hit there restores the full budget. A miss
// also has the next pop read the index's directory in the round of step
// 1's first read. For multi-row pops and leases (findFitN), with the
// number of rows too, it remembers whether step 1 fell short, and only to
// read the directory with step 1. Hints only choose what step 1 reads and
// when the directory is read: the answer is the same either way, as step
// 2 is exact.
type fitHints struct {
	mu     sync.Mutex
	missed map[string]bool // by packed limits (and n)
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

// budget returns step 1's budget for the hints under key.
func (h *fitHints) budget(key []byte) int {
	if h.missedLast(key) {
		return sedimentBudget
	}
	return scanBudget
}

// missedLast reports whether step 1 of the last choice with the hints
// under key missed.
func (h *fitHints) missedLast(key []byte) bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.missed[string(key)]
}

func (h *fitHints) record(key []byte, missed bool) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.missed[string(key)] == missed {
		return
	}
	if h.missed == nil || len(h.missed) >= maxHints {
		h.missed = map[string]bool{}
	}
	h.missed[string(key)] = missed
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
