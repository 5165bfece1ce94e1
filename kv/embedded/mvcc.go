// Multi-version storage: each key's chain of versions in the tree, reads as
// of a read version, and installing a committed batch at its version.

package embedded

import (
	"bytes"
	"time"

	"github.com/tidwall/btree"

	"github.com/fdbqueue/fdbqueue/kv"
)

// version is one version of a key's value: the version number and two
// flags share one word, so that an entry is 64 bytes (one size class, and
// 16 bytes less a key than with separate fields).
type version struct {
	word  uint64 // the version number | flagDel | flagRemoved
	val   []byte
	older *version
}

const (
	// flagDel marks a deletion.
	flagDel = 1 << 63
	// flagRemoved, on an entry's newest version only, marks an entry that
	// left the tree (its newest version was a deletion nobody can read past
	// any more). Guarded by store.mu.
	flagRemoved = 1 << 62
	verMask     = flagRemoved - 1
)

func newVersion(ver uint64, val []byte, del bool, older *version) version {
	w := ver
	if del {
		w |= flagDel
	}
	return version{word: w, val: val, older: older}
}

func (v *version) ver() uint64 { return v.word & verMask }
func (v *version) del() bool   { return v.word&flagDel != 0 }

// entry is a key in the tree with its versions, newest inline.
type entry struct {
	key []byte
	v   version
}

func (e *entry) removed() bool { return e.v.word&flagRemoved != 0 }

// at returns the value visible at read version rv.
func (e *entry) at(rv uint64) ([]byte, bool) {
	if e.v.ver() <= rv {
		return e.v.val, !e.v.del()
	}
	for o := e.v.older; o != nil; o = o.older {
		if o.ver() <= rv {
			return o.val, !o.del()
		}
	}
	return nil, false
}

// latest returns the newest committed value.
func (e *entry) latest() ([]byte, bool) {
	return e.v.val, !e.v.del()
}

func entryLess(a, b *entry) bool { return bytes.Compare(a.key, b.key) < 0 }

// get returns the value of key at rv. probe is the caller's scratch entry
// for the lookup.
func (s *store) get(rv uint64, key []byte, probe *entry) ([]byte, bool) {
	probe.key = key
	s.rlock()
	e, ok := s.tree.Get(probe)
	probe.key = nil
	var val []byte
	if ok {
		val, ok = e.at(rv)
	}
	s.mu.RUnlock()
	return val, ok
}

// fetch appends to out up to max key-values visible at rv in [begin, end),
// forward or reverse. done reports that the range holds no more.
// If beginEx, begin itself is excluded.
func (s *store) fetch(rv uint64, begin []byte, beginEx bool, end []byte, reverse bool, max int, out []kv.KeyValue) ([]kv.KeyValue, bool) {
	done := true
	visit := func(e *entry) bool {
		if beginEx && bytes.Equal(e.key, begin) {
			if reverse {
				return false
			}
			return true
		}
		if reverse {
			if bytes.Compare(e.key, begin) < 0 {
				return false
			}
			if bytes.Compare(e.key, end) >= 0 {
				return true
			}
		} else if bytes.Compare(e.key, end) >= 0 {
			return false
		}
		if v, ok := e.at(rv); ok {
			if len(out) == max {
				done = false
				return false
			}
			out = append(out, kv.KeyValue{Key: e.key, Value: v})
		}
		return true
	}
	s.rlock()
	if reverse {
		s.tree.Descend(&entry{key: end}, visit)
	} else {
		s.tree.Ascend(&entry{key: begin}, visit)
	}
	s.mu.RUnlock()
	return out, done
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
	touched := s.applyLocked(ver, b)
	s.fireWatchesLocked(touched)
	s.gcq = append(s.gcq, gcRecord{ver: ver, entries: touched})
	s.version.Store(ver)
	return 2*len(touched) + 64
}

// pushVersionLocked makes (val, del) the newest version of e at ver.
func pushVersionLocked(e *entry, ver uint64, val []byte, del bool) {
	old := e.v
	e.v = newVersion(ver, val, del, &old)
}

// applyLocked installs b at version ver and returns the entries it touched.
// Callers hold s.mu.
func (s *store) applyLocked(ver uint64, b *batch) []*entry {
	var touched []*entry
	for _, r := range b.clears {
		s.tree.Ascend(&entry{key: r.Begin}, func(e *entry) bool {
			if bytes.Compare(e.key, r.End) >= 0 {
				return false
			}
			if !e.v.del() {
				pushVersionLocked(e, ver, nil, true)
				touched = append(touched, e)
			}
			return true
		})
	}
	if len(b.writes) == 0 {
		return touched
	}
	if cap(touched)-len(touched) < len(b.writes) {
		grown := make([]*entry, len(touched), len(touched)+len(b.writes))
		copy(grown, touched)
		touched = grown
	}
	// The writes are in key order, and most land next to the previous one
	// (a push's keys sit at the ends of their ranges): a path hint starts
	// each search where the last one ended, and the Set of a new key
	// reuses its Get's path. Measured: 407 -> 264 key comparisons per row
	// of a 100-row INSERT into a 100,000-task queue.
	var hint btree.PathHint
	probe := &entry{}
	for _, w := range b.writes {
		probe.key = w.key
		e, exists := s.tree.GetHint(probe, &hint)
		var cur []byte
		var curOK bool
		if exists {
			cur, curOK = e.latest()
		}
		val, ok := w.resolve(cur, curOK)
		switch {
		case !exists && ok:
			e = &entry{key: w.key, v: newVersion(ver, val, false, nil)}
			s.tree.SetHint(e, &hint)
		case exists && (ok || curOK):
			pushVersionLocked(e, ver, val, !ok)
		default:
			continue // absent before and after
		}
		touched = append(touched, e)
	}
	return touched
}
