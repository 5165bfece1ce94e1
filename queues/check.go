package queues

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"

	"github.com/fdbqueue/fdbqueue/kv"
)

// Check verifies the queue's invariants in one read transaction: every item
// decodes and has its id index entry and (for visible tasks) its cell
// entry and, unless its cell is exact, its shape entry, or (invisible) its
// due index key, under its visible_at; every index entry names a queued
// item; the directories list
// every non-empty cell and shape (they may still list emptied ones, which
// fit pops clear as they find them); the counter equals the number of
// items; the statistics' buckets count the items (stats.go); a visible-at mark
// covers the latest visible_at of a visible item (hidden.go). It returns an error wrapping ErrCorrupt for the first violation.
// It reads the whole queue: it is meant for tests and for offline checks.
func (q *Queue) Check(tr kv.ReadTransaction) error {
	type entryKey struct {
		tag int
		key string
	}
	expected := map[entryKey]string{} // index entries the items imply, with their values
	legacy := map[entryKey]bool{}     // shape entries of exact cells: allowed, not required
	// Cell entries of exact cells, which hold nothing, or their resources
	// as earlier versions wrote them.
	bare := map[entryKey]bool{}
	ids := map[int64]pos{}
	var n int64

	// The latest visible_at of a visible item, which a visible-at mark at
	// or after its bucket must cover (hidden.go).
	var lastVisibleAt, lastVisibleID int64
	anyVisibleAt := false
	dues := map[string]bool{}    // the due index keys the invisible items imply
	gauges := map[string]int64{} // the statistics' counts the items imply (stats.go)
	for _, tag := range []int{tagItems, tagHidden} {
		it := tr.GetRange(kv.PrefixRange(q.sub[tag]), kv.RangeOptions{Mode: kv.StreamingModeWantAll})
		for it.Next() {
			e := it.KeyValue()
			item, p, err := q.decodeItemUnder(tag, e.Key, e.Value)
			if err != nil {
				return err
			}
			if _, dup := ids[p.id]; dup {
				return fmt.Errorf("%w: id %d is queued twice", ErrCorrupt, p.id)
			}
			ids[p.id] = p
			n++
			if p.due == 0 && item.Held {
				return fmt.Errorf("%w: visible item %d is held by a lease", ErrCorrupt, p.id)
			}
			for _, k := range q.gaugeKeys(stateOf(item, p.due)) {
				gauges[string(k)]++
			}
			if p.due != 0 {
				dues[string(q.dueKey(p))] = true
				continue // no fit index entries
			}
			if vis := nanos(item.VisibleAt); vis != 0 && (!anyVisibleAt || vis > lastVisibleAt) {
				lastVisibleAt, anyVisibleAt, lastVisibleID = vis, true, p.id
			}
			if len(item.Resources) > 0 {
				cell := q.cells.cellsOf(item.Resources)
				entry := entryKey{tagCells, string(q.entryKey(tagCells, cell, p))}
				expected[entry] = string(appendInts(nil, item.Resources...))
				expected[entryKey{tagCellDir, string(q.key(tagCellDir, cell...))}] = ""
				shape := entryKey{tagShapes, string(q.entryKey(tagShapes, item.Resources, p))}
				if q.cells.exact(item.Resources) {
					legacy[shape] = true // written by versions before exact cells
					bare[entry] = true
					continue
				}
				expected[shape] = ""
				expected[entryKey{tagShapeDir, string(q.key(tagShapeDir, item.Resources...))}] = ""
			}
		}
		if err := it.Err(); err != nil {
			return err
		}
	}

	if anyVisibleAt {
		// A queue without any mark was written by versions before them:
		// their items are the exception hidden.go names.
		marks, err := kv.GetRangeAsync(tr, kv.Range{
			Begin: q.key(tagMarksVisible, lastVisibleAt/markGrain),
			End:   kv.PrefixRange(q.sub[tagMarksVisible]).End,
		}, kv.RangeOptions{Limit: 1}).Get()
		if err != nil {
			return err
		}
		_, anyMark, err := kv.First(tr, kv.PrefixRange(q.sub[tagMarksVisible]), false)
		if err != nil {
			return err
		}
		if anyMark && len(marks) == 0 {
			return fmt.Errorf("%w: visible item %d has a visible_at (%d) after every visible-at mark", ErrCorrupt, lastVisibleID, lastVisibleAt)
		}
	}

	// The due index names exactly the invisible items, under their due.
	it := tr.GetRange(kv.PrefixRange(q.sub[tagDue]), kv.RangeOptions{Mode: kv.StreamingModeWantAll})
	for it.Next() {
		k := string(it.KeyValue().Key)
		if !dues[k] {
			return fmt.Errorf("%w: stray due index key %x", ErrCorrupt, k)
		}
		delete(dues, k)
	}
	if err := it.Err(); err != nil {
		return err
	}
	for k := range dues {
		return fmt.Errorf("%w: missing due index key %x", ErrCorrupt, k)
	}

	// The id index, both ways, with the runs (runs.go): an item without
	// an id index key is visible, where the one run that holds its id
	// files it; runs share no id.
	indexed := make(map[int64]bool, len(ids))
	var runs []run
	it = tr.GetRange(kv.PrefixRange(q.sub[tagRuns]), kv.RangeOptions{Mode: kv.StreamingModeWantAll})
	for it.Next() {
		r, err := q.decodeRun(it.KeyValue().Key, it.KeyValue().Value)
		if err != nil {
			return err
		}
		if n := len(runs); n > 0 && runs[n-1].end() > r.first {
			return fmt.Errorf("%w: runs of ids %d and %d share ids", ErrCorrupt, runs[n-1].first, r.first)
		}
		runs = append(runs, r)
	}
	if err := it.Err(); err != nil {
		return err
	}
	it = tr.GetRange(kv.PrefixRange(q.sub[tagIDs]), kv.RangeOptions{Mode: kv.StreamingModeWantAll})
	for it.Next() {
		e := it.KeyValue()
		id, err := q.idOfKey(e.Key)
		if err != nil {
			return fmt.Errorf("%w: id index key: %v", ErrCorrupt, err)
		}
		p, ok := ids[id]
		if !ok {
			return fmt.Errorf("%w: id index names item %d, which is not queued", ErrCorrupt, id)
		}
		if !bytes.Equal(e.Value, q.idValue(p)) {
			return fmt.Errorf("%w: id index of item %d points elsewhere", ErrCorrupt, id)
		}
		indexed[id] = true
	}
	if err := it.Err(); err != nil {
		return err
	}
	for id, p := range ids {
		if indexed[id] {
			continue
		}
		i, _ := slices.BinarySearchFunc(runs, id, func(r run, id int64) int { return cmp.Compare(r.end()-1, id) })
		if i == len(runs) || !runs[i].holds(id) {
			return fmt.Errorf("%w: item %d has no id index entry, and no run holds its id", ErrCorrupt, id)
		}
		r := runs[i]
		if p.due != 0 || !slices.Contains(r.prios, p.prio) || r.posOf(id, p.prio) != p {
			return fmt.Errorf("%w: item %d has no id index entry, and is not where the run of id %d files it", ErrCorrupt, id, r.first)
		}
	}

	// The fit index and its directories hold exactly what the items imply.
	for _, tag := range []int{tagCells, tagCellDir, tagShapes, tagShapeDir} {
		it = tr.GetRange(kv.PrefixRange(q.sub[tag]), kv.RangeOptions{Mode: kv.StreamingModeWantAll})
		for it.Next() {
			k := entryKey{tag, string(it.KeyValue().Key)}
			want, ok := expected[k]
			if !ok && (tag == tagCellDir || tag == tagShapeDir) {
				continue // a directory key left for an emptied cell
			}
			if !ok && legacy[k] && len(it.KeyValue().Value) == 0 {
				continue
			}
			if !ok {
				return fmt.Errorf("%w: stray fit index key %x (tag %d)", ErrCorrupt, k.key, tag)
			}
			if want != string(it.KeyValue().Value) && !(bare[k] && len(it.KeyValue().Value) == 0) {
				return fmt.Errorf("%w: fit index key %x holds the wrong resources", ErrCorrupt, k.key)
			}
			delete(expected, k)
		}
		if err := it.Err(); err != nil {
			return err
		}
	}
	for k := range expected {
		return fmt.Errorf("%w: missing fit index key %x (tag %d)", ErrCorrupt, k.key, k.tag)
	}

	// The statistics count the stamped items, and no bucket is left at 0.
	for _, sub := range []int64{statDue, statVisible} {
		it := tr.GetRange(q.prefixRange(tagStats, sub), kv.RangeOptions{Mode: kv.StreamingModeWantAll})
		for it.Next() {
			e := it.KeyValue()
			got, err := countOf(e)
			if err != nil {
				return err
			}
			if want := gauges[string(e.Key)]; got != want {
				return fmt.Errorf("%w: statistics bucket %x counts %d items, %d are there", ErrCorrupt, e.Key, got, want)
			}
			delete(gauges, string(e.Key))
		}
		if err := it.Err(); err != nil {
			return err
		}
	}
	for k, want := range gauges {
		return fmt.Errorf("%w: statistics bucket %x is missing (%d items)", ErrCorrupt, k, want)
	}

	count, err := q.Count(tr)
	if err != nil {
		return err
	}
	if count != n {
		return fmt.Errorf("%w: counter says %d items, %d are queued", ErrCorrupt, count, n)
	}
	return nil
}
