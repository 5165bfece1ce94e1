package queues

import (
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
)

// Reading the invisible items alone (ScanHidden), and the visible-at marks
// (tag 18) that make it return what Scan would.
//
// A statement that selects only rows hidden at some time from (WHERE
// _visible_at > from, from not before its NOW()) finds its rows among the
// invisible items, under tag 13, without reading the visible ones: every
// item under tag 13 has a visible_at after the clock of the transaction
// that put it there. But not every item with a visible_at after from is
// under tag 13: an item becomes visible (moves to tag 0, or is pushed
// there) when its visible_at has passed on the clock of the transaction
// that moves it, and that clock may be later than from: a pop that
// promotes items with a clock reading later than the statement's NOW()
// (taken before its read version; or on another host, whose clock is
// ahead). Such an item matches the statement's WHERE, and a scan of every
// item returns it.
//
// So every transaction that writes an item under tag 0 with a visible_at
// (rewrite: promote, release, lease end; pushChecked: a push or a move of
// an item whose visible_at has passed) sets a mark, P (18, bucket), with
// bucket its visible_at divided by markGrain, in the same commit: a blind
// write, which adds no read and no conflict, and no round trip on
// FoundationDB. ScanHidden reads the marks at from's bucket and after
// (one key, with the first read of tag 13, in the same round trip): when
// there is none, no item under tag 0 has a visible_at at or after from, so
// the visible items hold no row of the statement, and the invisible ones
// are all of them. When there is one, it reports so and the caller scans
// every item.
//
// Marks would pile up, one per millisecond in which items became visible:
// writers clear the marks before a cut, markHorizon before their clock (at
// most every markHorizon/4 in a process). Every writer sets its mark at
// its item's bucket or at its cut, whichever is later, so a transaction
// that clears below its cut leaves a mark at or above it. A mark is
// cleared only by a clear whose cut is above it, whose transaction leaves
// a mark at or above that cut; so, by induction over the commits, in any
// snapshot there is, for every mark ever set, a mark at or above it (the
// highest cut cleared is always marked). Hence, in any snapshot: an item
// under tag 0 with visible_at v has a mark at or above v's bucket.
// If ScanHidden finds no mark at or above from's bucket, no such v is at
// or after from. This holds whatever the clocks of the writers and the
// reader read: a mark is never later than its writer's clock (an item is
// visible only once its visible_at has passed on it, and the cut is
// before it), so a writer's clock ahead only sends readers to the full
// scan until their clocks pass its marks. Items made visible by versions
// before the marks, which set none, are the exception: ScanHidden misses
// such an item only if its visible_at, not later than its writer's clock
// then, is after the reader's NOW(): clocks apart by more than the time
// since that write.
//
// A DELETE through ScanHidden reads the marks serializably: a concurrent
// transaction that makes an item visible with a visible_at at or after
// from writes a mark in that range, and one of the two retries.
const (
	markGrain   = int64(time.Millisecond)
	markHorizon = int64(10 * time.Second)
)

// markVisible records, in tr, that the item tr writes under tag 0 has
// visible_at vis (unix nanoseconds; 0: none, no mark), on a clock that
// reads now (see above).
func (q *Queue) markVisible(tr kv.Transaction, vis, now int64) {
	if vis == 0 {
		return
	}
	// The mark at vis's bucket, or at the cut if that is later: a mark at
	// or after both, which the clear below keeps.
	cut := (now - markHorizon) / markGrain
	tr.Set(q.key(tagMarksVisible, max(vis/markGrain, cut)), nil)
	if last := q.marksCleared.Load(); now-last >= markHorizon/4 && q.marksCleared.CompareAndSwap(last, now) {
		tr.ClearRange(kv.Range{Begin: q.sub[tagMarksVisible], End: q.key(tagMarksVisible, cut)})
	}
}

// ScanHidden calls fn with the invisible items (leased or delayed) in
// order, as Scan would call it with them, until fn returns false or an
// error, and reports true, when no visible item can have a visible_at at
// or after from: then the items Scan would give with a visible_at at or
// after from are exactly the ones ScanHidden gives with one. Otherwise it
// calls fn with nothing and reports false: the caller scans every item
// (Scan). Its reads are serializable, and those of the first items and of
// the marks it checks are answered in one round trip (see the marks,
// above).
func (q *Queue) ScanHidden(tr kv.ReadTransaction, order Order, from time.Time, fn func(Item) (bool, error)) (bool, error) {
	marks := kv.GetRangeAsync(tr, kv.Range{
		Begin: q.key(tagMarksVisible, nanos(from)/markGrain),
		End:   kv.PrefixRange(q.sub[tagMarksVisible]).End,
	}, kv.RangeOptions{Limit: 1})
	checked, exact := false, true
	check := func() error {
		checked = true
		rows, err := marks.Get()
		exact = len(rows) == 0
		return err
	}
	_, err := q.scanUnder(tr, tagHidden, order, func(e kv.KeyValue, _ pos) (bool, error) {
		if !checked {
			if err := check(); err != nil || !exact {
				return false, err
			}
		}
		it, _, err := q.decodeItemUnder(tagHidden, e.Key, e.Value)
		if err != nil {
			return false, err
		}
		return fn(it)
	})
	if err == nil && !checked {
		err = check()
	}
	return exact && err == nil, err
}
