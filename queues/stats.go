package queues

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// Statistics: a queue's state (how many items are visible, delayed and
// leased, and since when the oldest visible one has waited) and its
// counters (pushed, leased, expired, ...), read in one round of O(1)
// reads, kept with atomic ADDs in the transaction of each change: blind
// writes, which never conflict and add no round trip, so they are exact
// and survive crashes with what they count.
//
// Gauges. Whether an invisible item is leased or delayed, and whether an
// item is visible at all, depends on the time: no write happens when a
// lease ends (nothing sweeps), so these are derived at read time from
// counts kept by due time. Each invisible item is counted under its kind
// (leased: Item.Held; delayed otherwise) and its due time twice: in
// one-second buckets and in buckets of dueLevel seconds. The items due
// after a second t are then the one-second buckets from t to the end of
// t's coarse bucket (fewer than dueLevel keys) plus the coarse buckets
// after it: two range reads, whatever the number of items. Each visible
// item is counted under the second it became visible (the later of its
// pushed_at and its visible_at): the first such key is the oldest visible
// item's. Invisible items whose due time has passed (no pop has moved
// them back yet) are visible: the due index's first key gives the oldest
// of them. A bucket that falls to 0 is cleared (COMPARE_AND_CLEAR), so the
// keys are as many as the buckets in use.
//
// Stats classify items at AsOf, the clock's time rounded up to the whole
// second: an item whose visible_at is after AsOf is leased or delayed, any
// other visible. Rounding up makes that rule exact for every item, however
// it is stored: an item written visible has a visible_at at or before the
// time it was written, so before AsOf, and an invisible one is counted
// under its due second. The price: an item due within the current second
// counts as visible up to a second early.
//
// Counters. Each counts items, with one ADD per operation: pushed (Push,
// PushAll), returned (PutBack, SettlePop), leased (Lease), dead-lettered
// (Lease, MaxAttempts), expired and released (see Stat). Pops and
// removals are counted by the caller, which knows why an item goes
// (exec: a pop, an ack, a DELETE), with AddStat.
//
// Items pushed before statistics were kept have no pushed_at, are not
// counted, and make the gauges inexact until MigrateStats has stamped
// them (StartStats marks a new queue exact at once). A rewrite (a lease,
// a promotion, a release) stamps such an item on the way, with the time
// of the rewrite.

// Stat names a counter.
type Stat uint8

// The counters. Each counts items.
const (
	// StatPushed counts items pushed (Push, PushAll).
	StatPushed Stat = iota + 1
	// StatPopped counts items popped (AddStat: exec's FOR POP).
	StatPopped
	// StatLeased counts leases taken (Lease), one per item.
	StatLeased
	// StatAcked counts items removed by their lease's holder (AddStat:
	// exec's DELETE ... AND _lease = v).
	StatAcked
	// StatReleased counts leases ended by a change of visible time: an
	// item hidden by a lease (Held) made visible, or hidden again without
	// its lease (Release, SetVisibleAt to a time at or before now).
	StatReleased
	// StatExpired counts leases that ended unacked and unreleased, when
	// the queue took their item back: a pop or lease moving it back to
	// the visible items (promote), or a lease taking it by id.
	StatExpired
	// StatDeadLettered counts items a lease removed for MaxAttempts.
	StatDeadLettered
	// StatDeleted counts items removed otherwise (AddStat: exec's DELETE).
	StatDeleted
	// StatReturned counts items put back (PutBack, SettlePop).
	StatReturned

	numStats = iota + 1
)

// Sub-tags of the statistics (tag 17).
const (
	statCounters = 0
	statDue      = 1
	statVisible  = 2
	statSince    = 3
	statMigrate  = 4
)

// Kinds of invisible items.
const (
	kindLeased  = 1
	kindDelayed = 2
)

// dueLevel is how many one-second buckets a coarse due bucket spans: a
// read of the items due after a time reads fewer than dueLevel one-second
// keys, and the coarse ones after.
const dueLevel = 1024

// zeroCounter is a counter at 0: COMPARE_AND_CLEAR's operand.
var zeroCounter = make([]byte, counterLen)

// AddStat adds n to the counter s, with an atomic ADD.
func (q *Queue) AddStat(tr kv.Transaction, s Stat, n int64) {
	if n != 0 {
		tr.Add(q.statKeys[s], n)
	}
}

// statKeysOf returns the keys of the counters of a queue whose tag 17 is
// under stats.
func statKeysOf(stats []byte) (keys [numStats][]byte) {
	for s := range keys {
		keys[s] = tuple.AppendInt(tuple.AppendInt(append([]byte(nil), stats...), statCounters), int64(s))
	}
	return keys
}

// StartStats marks the queue's statistics exact from now on: for a new,
// empty queue (exec's CREATE TABLE). A blind write.
func (q *Queue) StartStats(tr kv.Transaction) {
	tr.Set(q.key(tagStats, statSince), counter(q.opts.now().UnixNano()))
}

func counter(n int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(n)) }

// rowState is what the gauges count of an item: nothing (not counted), or
// where it is counted.
type rowState struct {
	counted bool
	due     int64 // the invisible item's due time (unix nanoseconds), 0: visible
	held    bool  // an invisible item's kind: leased
	since   int64 // a visible item's second (unix seconds) it became visible
}

// stateOf returns what the gauges count of it stored at due (its
// position's due: 0 for a visible item).
func stateOf(it Item, due int64) rowState {
	if it.PushedAt.IsZero() {
		return rowState{}
	}
	if due != 0 {
		return rowState{counted: true, due: due, held: it.Held}
	}
	return rowState{counted: true, since: max(it.PushedAt.UnixNano(), nanos(it.VisibleAt)) / int64(time.Second)}
}

// gauge names a count of the gauges: P (17, sub, elems...), sub
// statVisible (one element, the second) or statDue (three: kind, level,
// bucket). A comparable value, so that moving an item between states
// builds no key unless a count changes.
type gauge struct {
	sub   int64
	elems [3]int64
}

// key returns the gauge's key.
func (q *Queue) gaugeKey(g gauge) []byte {
	return q.appendGaugeKey(make([]byte, 0, len(q.sub[tagStats])+4*maxIntLen), g)
}

// appendGaugeKey appends the gauge's key to dst.
func (q *Queue) appendGaugeKey(dst []byte, g gauge) []byte {
	if g.sub == statVisible {
		return q.appendKey(dst, tagStats, statVisible, g.elems[0])
	}
	return q.appendKey(dst, tagStats, statDue, g.elems[0], g.elems[1], g.elems[2])
}

// gaugesOf returns the gauges an item in state s is counted under: the
// first n of gs.
func gaugesOf(s rowState) (gs [2]gauge, n int) {
	switch {
	case !s.counted:
		return gs, 0
	case s.due == 0:
		gs[0] = gauge{sub: statVisible, elems: [3]int64{s.since}}
		return gs, 1
	}
	kind := int64(kindDelayed)
	if s.held {
		kind = kindLeased
	}
	b := dueBucket(s.due)
	gs[0] = gauge{sub: statDue, elems: [3]int64{kind, 0, b}}
	gs[1] = gauge{sub: statDue, elems: [3]int64{kind, 1, b / dueLevel}}
	return gs, 2
}

// gaugeKeys returns the keys an item in state s is counted under.
func (q *Queue) gaugeKeys(s rowState) [][]byte {
	gs, n := gaugesOf(s)
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = q.gaugeKey(gs[i])
	}
	return keys
}

// dueBucket is the one-second bucket of a due time: bucket b holds the
// times in (b s, b+1 s], so the items due after a whole second t are
// those of the buckets from t on.
func dueBucket(due int64) int64 { return (due - 1) / int64(time.Second) }

// tally moves an item's counts from the state it was in to the one it is
// in: an ADD of -1 (and a COMPARE_AND_CLEAR at 0) for each key it leaves,
// an ADD of 1 for each it enters.
func (q *Queue) tally(tr kv.Transaction, from, to rowState) {
	q.tallyIn(tr, nil, from, to)
}

// tallyIn is tally, building the keys in buf's space (a transaction's
// writes copy their keys); it returns that space.
func (q *Queue) tallyIn(tr kv.Transaction, buf []byte, from, to rowState) []byte {
	moveCounts(from, to, func(g gauge, n int64) {
		buf = q.appendGaugeKey(buf[:0], g)
		addCount(tr, buf, n)
	})
	return buf
}

// moveCounts calls add with each gauge an item moving from one state to
// another leaves (-1) or enters (1).
func moveCounts(from, to rowState, add func(g gauge, n int64)) {
	if from == to {
		return
	}
	fg, fn := gaugesOf(from)
	tg, tn := gaugesOf(to)
	for i := range fn {
		if i < tn && fg[i] == tg[i] {
			continue
		}
		add(fg[i], -1)
	}
	for i := range tn {
		if i < fn && fg[i] == tg[i] {
			continue
		}
		add(tg[i], 1)
	}
}

// addCount adds n to the count at k, and clears it if that leaves it at
// 0.
func addCount(tr kv.Transaction, k []byte, n int64) {
	tr.Add(k, n)
	if n < 0 {
		tr.CompareAndClear(k, zeroCounter)
	}
}

// tallies gathers the counts of an operation on many items (a push of
// many, a pop of many), so that it writes one ADD per key rather than one
// per item: the items of one INSERT are counted under one second. An
// operation's items fall in a few gauges: a slice, searched.
type tallies struct {
	q      *Queue
	counts []tally
}

type tally struct {
	g gauge
	n int64
}

// tally is Queue.tally, gathered.
func (tl *tallies) tally(q *Queue, from, to rowState) {
	tl.q = q
	moveCounts(from, to, func(g gauge, n int64) {
		for i := range tl.counts {
			if tl.counts[i].g == g {
				tl.counts[i].n += n
				return
			}
		}
		tl.counts = append(tl.counts, tally{g, n})
	})
}

// flush writes the gathered counts, in the order their gauges came.
func (tl *tallies) flush(tr kv.Transaction) {
	for _, c := range tl.counts {
		if c.n != 0 {
			addCount(tr, tl.q.gaugeKey(c.g), c.n)
		}
	}
	tl.counts = tl.counts[:0]
}

// Stats is a queue's statistics as one transaction read them.
type Stats struct {
	// AsOf is the time the gauges classify items at: the clock's time
	// rounded up to the whole second.
	AsOf time.Time
	// Since is when the gauges became exact (StartStats, or MigrateStats
	// once done); the zero time while items from before statistics are
	// left, when Visible, Delayed, Leased and VisibleSince are not known.
	Since time.Time
	// Items is how many items the queue holds (Count).
	Items int64
	// Visible, Delayed and Leased split them: items whose visible_at is
	// after AsOf are leased (Held) or delayed, the others visible.
	Visible, Delayed, Leased int64
	// VisibleSince is when the visible item that has waited longest
	// became visible (pushed, or its delay or lease ended), to the second;
	// the zero time when none is visible.
	VisibleSince time.Time
	// Counters holds the counters, by Stat.
	Counters [numStats]int64
}

// Counter returns the counter s.
func (s *Stats) Counter(c Stat) int64 { return s.Counters[c] }

// StatsRead is ReadStats's reads, in flight. Like a kv.Future, it
// belongs to the transaction that issued it.
type StatsRead struct {
	q                  *Queue
	asOf               int64
	count, since       kv.FutureValue
	counters           kv.FutureRange
	due                [2][2]kv.FutureRange // by kind, level
	visible, dueBefore kv.FutureRange
}

// ReadStats issues the reads of the queue's statistics at now (snapshot
// reads: no conflicts): a caller reading several queues issues every
// queue's before it waits for any (one round trip on FoundationDB).
func (q *Queue) ReadStats(tr kv.ReadTransaction, now time.Time) *StatsRead {
	snap := tr.Snapshot()
	asOf := now.Truncate(time.Second)
	if asOf.Before(now) {
		asOf = asOf.Add(time.Second)
	}
	return q.readStatsAt(snap, asOf.UnixNano())
}

func (q *Queue) readStatsAt(snap kv.ReadTransaction, asOf int64) *StatsRead {
	t := asOf / int64(time.Second) // the first one-second bucket due after asOf
	u := t / dueLevel
	r := &StatsRead{q: q, asOf: asOf,
		count:    kv.GetAsync(snap, q.countKey()),
		since:    kv.GetAsync(snap, q.key(tagStats, statSince)),
		counters: kv.GetRangeAsync(snap, q.prefixRange(tagStats, statCounters), kv.RangeOptions{}),
		visible:  kv.GetRangeAsync(snap, q.prefixRange(tagStats, statVisible), kv.RangeOptions{Limit: 1}),
		// The invisible items due by asOf, which are visible.
		dueBefore: kv.GetRangeAsync(snap, kv.Range{Begin: q.sub[tagDue], End: q.key(tagDue, asOf+1)}, kv.RangeOptions{Limit: 1}),
	}
	for i, kind := range []int64{kindLeased, kindDelayed} {
		fine := kv.Range{Begin: q.key(tagStats, statDue, kind, 0, t), End: q.key(tagStats, statDue, kind, 0, (u+1)*dueLevel)}
		coarse := kv.Range{Begin: q.key(tagStats, statDue, kind, 1, u+1), End: q.prefixRange(tagStats, statDue, kind, 1).End}
		r.due[i][0] = kv.GetRangeAsync(snap, fine, kv.RangeOptions{Mode: kv.StreamingModeWantAll})
		r.due[i][1] = kv.GetRangeAsync(snap, coarse, kv.RangeOptions{Mode: kv.StreamingModeWantAll})
	}
	return r
}

// Get waits for the reads and returns the statistics.
func (r *StatsRead) Get() (Stats, error) {
	q := r.q
	s := Stats{AsOf: time.Unix(0, r.asOf)}
	var err error
	if s.Items, err = getCounter(r.count); err != nil {
		return s, err
	}
	since, err := r.since.Get()
	if err != nil {
		return s, err
	}
	rows, err := r.counters.Get()
	if err != nil {
		return s, err
	}
	prefix := q.prefixRange(tagStats, statCounters).Begin
	for _, e := range rows {
		c, _, err := tuple.DecodeInt(e.Key[len(prefix):])
		if err != nil {
			return s, fmt.Errorf("%w: statistics counter %x", ErrCorrupt, e.Key)
		}
		if c > 0 && c < numStats {
			if s.Counters[c], err = countOf(e); err != nil {
				return s, err
			}
		}
	}
	var hidden [2]int64
	for i := range r.due {
		for _, f := range r.due[i] {
			rows, err := f.Get()
			if err != nil {
				return s, err
			}
			for _, e := range rows {
				n, err := countOf(e)
				if err != nil {
					return s, err
				}
				hidden[i] += n
			}
		}
	}
	first, err := r.visible.Get()
	if err != nil {
		return s, err
	}
	due, err := r.dueBefore.Get()
	if err != nil {
		return s, err
	}
	if len(since) != counterLen {
		return s, nil // not exact: items from before statistics are left
	}
	s.Since = time.Unix(0, int64(binary.LittleEndian.Uint64(since)))
	s.Leased, s.Delayed = hidden[0], hidden[1]
	s.Visible = s.Items - s.Leased - s.Delayed
	oldest := int64(-1) // unix seconds
	if len(first) == 1 {
		sec, _, err := tuple.DecodeInt(first[0].Key[len(q.prefixRange(tagStats, statVisible).Begin):])
		if err != nil {
			return s, fmt.Errorf("%w: statistics bucket %x", ErrCorrupt, first[0].Key)
		}
		oldest = sec
	}
	if len(due) == 1 {
		p, err := q.decodeDueKey(due[0].Key)
		if err != nil {
			return s, err
		}
		if sec := p.due / int64(time.Second); oldest < 0 || sec < oldest {
			oldest = sec
		}
	}
	if oldest >= 0 && s.Visible > 0 {
		s.VisibleSince = time.Unix(oldest, 0)
	}
	return s, nil
}

// countOf returns the count a statistics key e holds (little-endian
// int64).
func countOf(e kv.KeyValue) (int64, error) {
	if len(e.Value) != counterLen {
		return 0, fmt.Errorf("%w: statistics key %x holds %d bytes", ErrCorrupt, e.Key, len(e.Value))
	}
	return int64(binary.LittleEndian.Uint64(e.Value)), nil
}

func getCounter(f kv.FutureValue) (int64, error) {
	v, err := f.Get()
	if err != nil || v == nil {
		return 0, err
	}
	if len(v) != counterLen {
		return 0, fmt.Errorf("%w: counter of %d bytes", ErrCorrupt, len(v))
	}
	return int64(binary.LittleEndian.Uint64(v)), nil
}

// Stats returns the queue's statistics at now (ReadStats, then Get).
func (q *Queue) Stats(tr kv.ReadTransaction, now time.Time) (Stats, error) {
	return q.ReadStats(tr, now).Get()
}

// MigrateStats stamps up to batch items pushed before statistics were
// kept, in queue key order, from where its last call stopped, with the
// time the migration began as their pushed_at (an invisible one leased if
// it has a lease token, delayed otherwise), and counts them; once none is
// left it marks the statistics exact (Stats.Since). It reports whether
// the statistics are exact. Run it in transactions of its own until it
// does: each call reads its items and its cursor serializably, so
// concurrent migrations, and changes of the items it stamps, conflict
// with it rather than count twice or miss.
func (q *Queue) MigrateStats(tr kv.Transaction, batch int) (bool, error) {
	sinceKey, cursorKey := q.key(tagStats, statSince), q.key(tagStats, statMigrate)
	sinceF := kv.GetAsync(tr, sinceKey)
	cur, err := tr.Get(cursorKey)
	if err != nil {
		return false, err
	}
	if since, err := sinceF.Get(); err != nil || since != nil {
		return err == nil, err
	}
	since, tag, after := q.opts.now().UnixNano(), int64(tagItems), []byte(nil)
	if cur != nil {
		t, err := tuple.Unpack(cur)
		if err != nil || len(t) != 3 {
			return false, fmt.Errorf("%w: statistics migration cursor %x", ErrCorrupt, cur)
		}
		since, _ = t[0].(int64)
		tag, _ = t[1].(int64)
		after, _ = t[2].([]byte)
	}
	stamp := time.Unix(0, since)
	for batch > 0 {
		r := kv.PrefixRange(q.sub[tag])
		if after != nil {
			r.Begin = kv.KeyAfter(append(grow(q.sub[tag]), after...))
		}
		rows, err := kv.Collect(tr.GetRange(r, kv.RangeOptions{Limit: batch, Mode: kv.StreamingModeWantAll}))
		if err != nil {
			return false, err
		}
		for _, e := range rows {
			it, p, err := q.decodeItemUnder(int(tag), e.Key, e.Value)
			if err != nil {
				return false, err
			}
			if !it.PushedAt.IsZero() {
				continue
			}
			it.PushedAt, it.Held = stampTime(stamp), p.due != 0 && it.Lease != 0
			tr.Set(e.Key, encodeValue(it))
			q.tally(tr, rowState{}, stateOf(it, p.due))
		}
		batch -= len(rows)
		if batch > 0 { // the tag is done
			if tag == tagHidden {
				tr.Set(sinceKey, counter(since))
				tr.Clear(cursorKey)
				return true, nil
			}
			tag, after = tagHidden, nil
			continue
		}
		after = rows[len(rows)-1].Key[len(q.sub[tag]):]
	}
	v, err := tuple.Tuple{since, tag, after}.PackWithError()
	if err != nil {
		return false, err
	}
	tr.Set(cursorKey, v)
	return false, nil
}

// grow returns a copy of b with room to append.
func grow(b []byte) []byte { return append(make([]byte, 0, len(b)+64), b...) }

// ReadCount issues Count's read, through the snapshot: GetCount waits for
// it. A caller reading several queues' counts issues them all first.
func (q *Queue) ReadCount(tr kv.ReadTransaction) kv.FutureValue {
	return kv.GetAsync(tr.Snapshot(), q.countKey())
}

// GetCount waits for a ReadCount and returns the count.
func GetCount(f kv.FutureValue) (int64, error) { return getCounter(f) }
