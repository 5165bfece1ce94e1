package queues

import (
	"bytes"
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/tuple"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/fitconflicts from the code under test")

// TestFitChoicesAndConflictsPinned pins, for a fixed sequence of fit pops,
// multi-row fit pops, fit leases and fit peeks on queues that take every
// path of the fit index (whole and straddling cells, shapes past the
// straddle budget, sediment before the index, claimed rows), what each
// choice takes, the directory keys it clears, and the read conflicts it
// adds: testdata/fitconflicts holds them, with digests of the keys cleared
// and of the conflict ranges (merged: the same union is the same
// conflicts). How the index is
// read (one read after another, or in rounds) must change none of them: a
// pop that takes another item breaks the recipe's order, and one that
// reads more conflicts more. Run with -rewrite to write the file from the
// code under test, and review the diff.
func TestFitChoicesAndConflictsPinned(t *testing.T) {
	t.Parallel()
	out, _ := pinnedScenarios(t, false, ExactCellsBelow)
	path := "testdata/fitconflicts"
	if *rewrite {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(out.String()), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run with -rewrite to make it")
	wantLines, gotLines := strings.Split(string(want), "\n"), strings.Split(out.String(), "\n")
	for i := range min(len(wantLines), len(gotLines)) {
		require.Equal(t, wantLines[i], gotLines[i], "line %d of %s", i+1, path)
	}
	require.Len(t, gotLines, len(wantLines))
}

// TestFitChoicesAndConflictsPinnedCarried: the pinned sequence of
// TestFitChoicesAndConflictsPinned, on a transaction that answers reads
// when issued and tells whether its commit was alone, so that its
// attempts carry their reads to the next, lone pops and leases too
// (carryAlone): the same choices, clears and read conflicts, line for
// line.
func TestFitChoicesAndConflictsPinnedCarried(t *testing.T) {
	t.Parallel()
	out, adopted := pinnedScenarios(t, true, ExactCellsBelow)
	want, err := os.ReadFile("testdata/fitconflicts")
	require.NoError(t, err)
	wantLines, gotLines := strings.Split(string(want), "\n"), strings.Split(out.String(), "\n")
	for i := range min(len(wantLines), len(gotLines)) {
		require.Equal(t, wantLines[i], gotLines[i], "line %d of testdata/fitconflicts", i+1)
	}
	require.Len(t, gotLines, len(wantLines))
	require.Greater(t, adopted, int64(100), "few attempts took over the reads of the one before")
}

// TestFitChoicesPinnedLegacyCells: the pinned sequence of
// TestFitChoicesAndConflictsPinned on queues whose fit index has the cells
// of versions before 2026-11-27 (LegacyExactCellsBelow: mem 16..31 in
// cells of two values, filed under their shapes too) makes the same
// choices, line for line: a queue's cells change what a choice reads, not
// what it takes. What it clears and its read conflicts are pinned too, in
// testdata/fitconflicts-legacy (-rewrite writes it).
func TestFitChoicesPinnedLegacyCells(t *testing.T) {
	t.Parallel()
	out, _ := pinnedScenarios(t, false, LegacyExactCellsBelow)
	path := "testdata/fitconflicts-legacy"
	if *rewrite {
		require.NoError(t, os.WriteFile(path, []byte(out.String()), 0o644))
	}
	legacy, err := os.ReadFile(path)
	require.NoError(t, err, "run with -rewrite to make it")
	want, err := os.ReadFile("testdata/fitconflicts")
	require.NoError(t, err)
	took := func(line string) string { return strings.Split(line, " cleared ")[0] }
	legacyLines, wantLines, gotLines := strings.Split(string(legacy), "\n"), strings.Split(string(want), "\n"), strings.Split(out.String(), "\n")
	require.Len(t, gotLines, len(wantLines))
	require.Len(t, gotLines, len(legacyLines))
	differ := 0
	for i := range wantLines {
		require.Equal(t, legacyLines[i], gotLines[i], "line %d of %s", i+1, path)
		require.Equal(t, took(wantLines[i]), took(gotLines[i]), "line %d of testdata/fitconflicts", i+1)
		if wantLines[i] != gotLines[i] {
			differ++
		}
	}
	// Not vacuous: the cells differ, so what the choices read does.
	require.Greater(t, differ, 10, "lines whose clears or conflicts differ")
}

// pinnedScenarios runs fitScenario on the pinned queues (priority seeds
// 1 to 3, FIFO 1 and 2: the third, without sediment, mostly runs step 1,
// which FIFO shares), their fit index's cells exact below exactBelow, and
// returns the lines written and how many attempts took over carried
// reads.
func pinnedScenarios(t *testing.T, carried bool, exactBelow int64) (*strings.Builder, int64) {
	var out strings.Builder
	adopted := int64(0)
	for _, kind := range []Kind{Priority, FIFO} {
		for seed := uint64(1); seed <= 3; seed++ {
			if kind == FIFO && seed == 3 {
				break
			}
			adopted += fitScenario(t, &out, kind, seed, carried, exactBelow)
		}
	}
	return &out, adopted
}

// fitLimitsPinned are consumers' limits for fitScenario: cells wholly
// inside, straddling cells on mem (992..1023 around 1000, 96..103 around
// 100) and on cpu (40..43), sediment, and nothing at all; {6, 200} empties
// the cell (5, 96..103) that {6, 97} straddles.
var fitLimitsPinned = [][]int64{{4, 1000}, {40, 1000}, {3, 990}, {48, 5000}, {2, 100}, {41, 97}, {0, 0}, {8, 8}, {3, 1 << 40}, {6, 200}, {6, 97}}

// fitScenario runs one queue's sequence and writes a line per choice;
// carried, its transactions answer reads when issued and tell whether
// their commits were alone (carryLog), and it returns how many attempts
// took over the reads carried to them.
func fitScenario(t *testing.T, out *strings.Builder, kind Kind, seed uint64, carried bool, exactBelow int64) int64 {
	db, q, r, task := pinnedQueueCells(t, kind, seed, exactBelow)
	defer db.Close()
	claims := NewClaims()
	for step := range 200 {
		limits := fitLimitsPinned[r.IntN(len(fitLimitsPinned))]
		order := Order(r.IntN(2))
		op, n := "pop", 1
		switch x := r.IntN(10); {
		case x < 3:
			op, n = "popN", []int{2, 7, 40, 90}[r.IntN(4)]
		case x < 5:
			op, n = "lease", []int{1, 3}[r.IntN(2)]
		case x < 6:
			op = "peek"
		case x < 7:
			op = "pop3" // three pops in one transaction: an Attempt remembers reads from its second
		}
		mode := []string{"plain", "attempt", "beside"}[r.IntN(3)]
		if step < 4 {
			// A merge that passes the straddle budget after the first
			// entries of a cell, in both orders.
			op, n, order, limits = "popN", 90, Order(step%2), []int64{3, 990}
		} else if step < 8 {
			op, n, order, mode = "pop3", 1, Order(step%2), []string{"attempt", "beside"}[step/2%2]
		}
		claimLimits := limits // the claimer takes what the choice would
		if r.IntN(2) == 0 {
			claimLimits = fitLimitsPinned[r.IntN(len(fitLimitsPinned))]
		}

		tr, err := db.CreateTransaction(context.Background())
		require.NoError(t, err)
		log := &conflictLog{Transaction: tr, atIssue: carried}
		var logged kv.Transaction = log
		if carried {
			logged = carryLog{log}
		}
		var other *Attempt
		if mode == "beside" {
			// Another attempt in flight, which claimed a row, so that
			// picks read through a conflictReader and pass over its claim.
			otr, err := db.CreateTransaction(context.Background())
			require.NoError(t, err)
			other = claims.Begin(otr)
			_, _, _, err = q.findFit(q.newPick(other, removing), order, claimLimits)
			require.NoError(t, err)
		}
		var rw kv.Transaction = log
		var a *Attempt
		if mode != "plain" {
			a = claims.Begin(logged)
			rw = a
		}
		log.on = true
		var got []Item
		var poss []pos
		switch op {
		case "pop", "pop3":
			picks := [][]int64{limits}
			if op == "pop3" {
				// The same limits again: the third reads the heads
				// of the cells the second did not pop from again.
				picks = append(picks, limits, limits)
			}
			for _, lim := range picks {
				// With what PopFit reads ahead of promote's wait: what it
				// read ahead changes none of the above.
				pk := q.newFitPick(rw, removing)
				pk.ahead = q.readSingleFitAhead(rw, order, lim)
				it, p, ok, err := q.findFit(pk, order, lim)
				require.NoError(t, err)
				if ok {
					got = append(got, it)
					log.on = false // the removal's reads are not the choice's
					require.NoError(t, q.remove(rw, p, it))
					log.on = true
				}
			}
		case "popN":
			got, poss, err = q.findFitNAhead(rw, removing, order, limits, n, q.readFitAhead(rw, order, limits, n))
			require.NoError(t, err)
		case "lease":
			got, _, err = q.findFitNAhead(rw, leasing, order, limits, n, q.readFitAhead(rw, order, limits, n))
			require.NoError(t, err)
		case "peek":
			it, ok, err := q.PeekFit(rw, order, limits)
			require.NoError(t, err)
			if ok {
				got = []Item{it}
			}
		}
		log.on = false
		conflicts, err := log.conflicts()
		require.NoError(t, err)
		ids := make([]int64, len(got))
		for i, it := range got {
			ids[i] = it.ID
		}
		took := fmt.Sprint(ids)
		if len(ids) > 8 {
			sum := sha256.Sum256([]byte(took))
			took = fmt.Sprintf("%v ... %d in all, %x", ids[:4], len(ids), sum[:4])
		}
		slices.Sort(log.cleared) // the order of the clears makes no difference
		cleared := sha256.Sum256([]byte(strings.Join(log.cleared, " ")))
		fmt.Fprintf(out, "%v seed %d step %d: %s %s %v n=%d %s: took %s cleared %d %x conflicts %d %x\n",
			kind, seed, step, op, []string{"min", "max"}[order], limits, n, mode, took, len(log.cleared), cleared[:4], len(conflicts), digest(conflicts))
		for i, it := range got {
			if op == "popN" {
				require.NoError(t, q.remove(rw, poss[i], it))
			}
		}
		if r.IntN(3) == 0 {
			for _, it := range []Item{task(), task()} {
				require.NoError(t, q.Push(rw, it))
			}
		}
		require.NoError(t, tr.Commit())
		if a != nil {
			a.Release(true)
		}
		if other != nil {
			other.Cancel()
			other.Release(false)
		}
	}
	require.NoError(t, db.ReadTransact(context.Background(), func(tr kv.ReadTransaction) error { return q.Check(tr) }))
	return claims.adopted.Load()
}

// pinnedQueue fills the queue of fitScenario's sequence for kind and seed,
// and returns it with its database, the sequence's random source and its
// task maker, which the sequence goes on with.
func pinnedQueue(t *testing.T, kind Kind, seed uint64) (*embedded.DB, *Queue, *rand.Rand, func() Item) {
	return pinnedQueueCells(t, kind, seed, ExactCellsBelow)
}

// pinnedQueueCells is pinnedQueue, its fit index with exact cells below
// exactBelow.
func pinnedQueueCells(t *testing.T, kind Kind, seed uint64, exactBelow int64) (*embedded.DB, *Queue, *rand.Rand, func() Item) {
	db := embedded.Open("", embedded.Config{RetryLimit: -1})
	clock := time.Unix(1_800_000_000, 0)
	q, err := New(tuple.Tuple{"pinned", int64(kind), int64(seed)}.Pack(), kind, "cpu", "mem").
		WithOptions(Options{Clock: func() time.Time { return clock }}).WithExactCells(exactBelow)
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(seed, 27))
	nextID := int64(0)
	task := func() Item {
		nextID++
		between := func(lo, hi int64) int64 { return lo + r.Int64N(hi-lo+1) }
		var res []int64
		switch r.IntN(7) {
		case 0:
			res = []int64{between(1, 4), between(1, 15)} // exact cells
		case 1:
			res = []int64{between(2, 3), between(960, 1023)} // straddling mem
		case 2:
			res = []int64{between(40, 43), between(96, 103)} // straddling cpu and mem
		case 3:
			res = []int64{3, between(1001, 1023)} // sediment of a straddling cell
		case 4:
			res = []int64{between(44, 60), between(1, 1<<20)} // fits few
		case 5:
			res = []int64{5, between(98, 103)} // a straddling cell, often emptied
		default:
			res = []int64{between(1, 8), between(1, 32)} // exact but for mem 32, and for mem 16..31 with legacy cells
		}
		return Item{ID: nextID, Priority: r.Int64N(6), Resources: res, Value: fmt.Append(nil, nextID)}
	}
	pushAll := func(items []Item) {
		require.NoError(t, db.Transact(context.Background(), func(tr kv.Transaction) error {
			_, err := q.PushAll(tr, Token{}, items)
			return err
		}))
	}
	// Sediment first in both orders: big tasks of the highest and lowest
	// priority, more than step 1 reads with the first seed, so that most
	// choices take the index, fewer with the next, none with the last.
	var items []Item
	for i := range []int{300, 100, 0}[(seed-1)%3] {
		nextID++
		items = append(items, Item{ID: nextID, Priority: []int64{13, -4}[i%2], Resources: []int64{100, 1 << 30}, Value: []byte("big")})
	}
	for range 700 {
		items = append(items, task())
	}
	// A straddling cell with a few fitting entries first, in either order,
	// then more than the straddle budget that do not fit.
	for i := range 170 {
		nextID++
		prio, mem := []int64{-3, 12}[i%2], int64(980)
		if i >= 10 {
			prio, mem = []int64{-2, 11}[i%2], 1001+int64(i%20)
		}
		items = append(items, Item{ID: nextID, Priority: prio, Resources: []int64{3, mem}, Value: fmt.Append(nil, nextID)})
	}
	for i := 0; i < len(items); i += 100 {
		pushAll(items[i:min(i+100, len(items))])
	}
	return db, q, r, task
}

// digest is a short digest of merged ranges.
func digest(rs []kv.Range) []byte {
	h := sha256.New()
	for _, r := range rs {
		fmt.Fprintf(h, "%x %x\n", r.Begin, r.End)
	}
	return h.Sum(nil)[:8]
}

// conflictLog is a transaction that, while on, records the read conflicts
// its reads and explicit ranges add (its snapshot view records none), and
// the keys it clears.
type conflictLog struct {
	kv.Transaction
	on      bool
	atIssue bool // AnswersAtIssue
	spans   []kv.Range
	its     []*loggedIter
	futs    []*loggedRange
	cleared []string
}

// AnswersAtIssue says no unless atIssue, as FoundationDB's transactions
// do: a pick that reads through the log (plain, attempt) reads ahead in
// rounds (pick.readsAhead), while one beside another attempt reads through
// a conflictReader over the engine's snapshot, which answers a read when
// it is issued, and reads nothing ahead. Both must make the pinned
// choices and add the pinned conflicts.
func (l *conflictLog) AnswersAtIssue() bool { return l.atIssue }

func (l *conflictLog) add(r kv.Range) {
	if l.on && bytes.Compare(r.Begin, r.End) < 0 {
		l.spans = append(l.spans, kv.Range{Begin: bytes.Clone(r.Begin), End: bytes.Clone(r.End)})
	}
}

func (l *conflictLog) Get(key []byte) ([]byte, error) {
	l.add(kv.Range{Begin: key, End: kv.KeyAfter(key)})
	return l.Transaction.Get(key)
}

func (l *conflictLog) First(r kv.Range, reverse bool) (kv.KeyValue, bool, error) {
	e, ok, err := kv.First(l.Transaction, r, reverse)
	if err == nil {
		l.add(covered(r, reverse, e, ok))
	}
	return e, ok, err
}

func (l *conflictLog) GetRange(r kv.Range, opts kv.RangeOptions) kv.Iterator {
	it := &loggedIter{Iterator: l.Transaction.GetRange(r, opts), r: kv.Range{Begin: bytes.Clone(r.Begin), End: bytes.Clone(r.End)}, opts: opts}
	if l.on {
		l.its = append(l.its, it)
	}
	return it
}

func (l *conflictLog) GetAsync(key []byte) kv.FutureValue {
	l.add(kv.Range{Begin: key, End: kv.KeyAfter(key)})
	return kv.GetAsync(l.Transaction, key)
}

func (l *conflictLog) GetRangeAsync(r kv.Range, opts kv.RangeOptions) kv.FutureRange {
	f := &loggedRange{FutureRange: kv.GetRangeAsync(l.Transaction, r, opts), r: kv.Range{Begin: bytes.Clone(r.Begin), End: bytes.Clone(r.End)}, opts: opts}
	if l.on {
		l.futs = append(l.futs, f)
	}
	return f
}

func (l *conflictLog) AddReadConflictRange(r kv.Range) error {
	l.add(r)
	return l.Transaction.AddReadConflictRange(r)
}

func (l *conflictLog) AddReadConflictKey(key []byte) error {
	l.add(kv.Range{Begin: key, End: kv.KeyAfter(key)})
	return l.Transaction.AddReadConflictKey(key)
}

func (l *conflictLog) Clear(key []byte) {
	if l.on {
		l.cleared = append(l.cleared, fmt.Sprintf("%x", key))
	}
	l.Transaction.Clear(key)
}

// conflicts returns the union of what was recorded, as sorted disjoint
// ranges (adjacent ones joined).
func (l *conflictLog) conflicts() ([]kv.Range, error) {
	rs := slices.Clone(l.spans) // merged below, in place: the log goes on
	for _, it := range l.its {
		if s, ok := it.span(); ok {
			rs = append(rs, s)
		}
	}
	for _, f := range l.futs {
		rows, err := f.Get()
		if err != nil {
			return nil, err
		}
		rs = append(rs, rangeCovered(f.r, f.opts, rows))
	}
	return mergeRanges(rs), nil
}

// loggedIter is a serializable range read: it covers what it returned, or
// the whole range once read to its end.
type loggedIter struct {
	kv.Iterator
	r    kv.Range
	opts kv.RangeOptions
	last []byte
	n    int
	end  bool
}

func (it *loggedIter) Next() bool {
	if !it.Iterator.Next() {
		it.end = it.Iterator.Err() == nil
		return false
	}
	it.last = bytes.Clone(it.Iterator.KeyValue().Key)
	it.n++
	return true
}

func (it *loggedIter) span() (kv.Range, bool) {
	switch {
	case it.end && (it.opts.Limit == 0 || it.n < it.opts.Limit):
		return it.r, true
	case it.n == 0:
		return kv.Range{}, false
	}
	return covered(it.r, it.opts.Reverse, kv.KeyValue{Key: it.last}, true), true
}

// loggedRange is a serializable range future: it covers its result.
type loggedRange struct {
	kv.FutureRange
	r    kv.Range
	opts kv.RangeOptions
}
