package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// collectorModel drives a memory store one step at a time: commits,
// readers starting and ending, range reads paused between their batches,
// and single slices of the store's incremental processes (the version
// collector, the tombstone collector, compaction), each in its own hold of
// the lock, in an order a seed picks. Every read is checked against the
// snapshot of the model at the reader's version.
type collectorModel struct {
	t    *testing.T
	rng  *rand.Rand
	db   *DB
	s    *store
	now  time.Time
	keys [][]byte
	// snaps[v] is the database at version v.
	snaps   map[uint64]map[string]string
	readers []*modelReader
	scans   []*modelScan
	staged  []modelStaged // staged, not yet readable, in version order
	log     []string      // the steps so far, for a failure's message
}

type modelReader struct {
	tr    *txn
	rv    uint64
	since time.Time
}

// modelScan is a range read at rv in progress, fetched a few rows per hold
// of the lock as a range iterator fetches its batches.
type modelScan struct {
	r       *modelReader
	begin   []byte
	beginEx bool
	end     []byte
	reverse bool
	got     []kv.KeyValue
	want    []kv.KeyValue
}

func newCollectorModel(t *testing.T, seed uint64, nkeys int) *collectorModel {
	m := &collectorModel{t: t, rng: rand.New(rand.NewPCG(seed, 7)), now: time.Unix(1e9, 0)}
	db := Open("", Config{Clock: func() time.Time { return m.now }})
	s := db.s
	s.tombMin, s.tombWait = 2, 0
	// The collectors run only when the model says: no goroutine of the
	// store's collects tombstones, and compaction starts only when the
	// model starts it (its own start depends on when the Go collector
	// frees slabs).
	s.tombWorker = true
	s.sweep.slack = 1 << 60
	m.db, m.s = db, s
	m.snaps = map[uint64]map[string]string{s.version.Load(): {}}
	for i := range nkeys {
		m.keys = append(m.keys, fmt.Appendf(nil, "k%03d", i))
	}
	return m
}

func (m *collectorModel) step(format string, args ...any) {
	m.log = append(m.log, fmt.Sprintf(format, args...))
}

// trail is the model's last steps, for a failure's message: formatted
// only if an assertion fails.
func (m *collectorModel) trail() fmt.Stringer { return modelTrail{m} }

type modelTrail struct{ m *collectorModel }

func (t modelTrail) String() string { return t.m.msg() }

func (m *collectorModel) msg() string {
	log := m.log
	if len(log) > 60 {
		log = log[len(log)-60:]
	}
	return fmt.Sprintf("seed's last steps:\n%s", joinLines(log))
}

func joinLines(l []string) string {
	var b bytes.Buffer
	for _, s := range l {
		b.WriteString(s)
		b.WriteByte('\n')
	}
	return b.String()
}

// commit installs a random batch: maybe a range clear (a tombstone when
// it covers more than 2 keys of the tree), then sets, clears and atomic
// adds of a few keys, without collecting (the model's collector steps do).
func (m *collectorModel) commit() {
	cur := m.snaps[m.s.nextVer]
	next := maps.Clone(cur)
	b := &batch{}
	var cleared kv.Range
	if m.rng.IntN(5) == 0 {
		i := m.rng.IntN(len(m.keys))
		j := min(len(m.keys), i+1+m.rng.IntN(max(8, len(m.keys)/4)))
		cleared = kv.Range{Begin: m.keys[i], End: m.keys[j-1]}
		if j == len(m.keys) || m.rng.IntN(2) == 0 {
			cleared.End = kv.KeyAfter(m.keys[j-1])
		}
		b.clears = append(b.clears, cleared)
		for k := range next {
			if cleared.Contains([]byte(k)) {
				delete(next, k)
			}
		}
	}
	picked := map[int]bool{}
	for range m.rng.IntN(max(6, len(m.keys)/8)) {
		picked[m.rng.IntN(len(m.keys))] = true
	}
	for _, i := range slices.Sorted(maps.Keys(picked)) {
		key := m.keys[i]
		w := &write{key: key}
		switch n := m.rng.IntN(10); {
		case n < 5:
			w.base, w.val = baseSet, fmt.Appendf(nil, "v%d-%d", m.s.nextVer+1, i)
		case n < 8:
			w.base = baseCleared
		default:
			if b.clears != nil && cleared.Contains(key) {
				continue // a transaction's add after its clear starts from nothing
			}
			w.base = baseDB
			w.ops = []atomicOp{{kind: opAdd, param: binary.LittleEndian.AppendUint64(nil, 1)}}
		}
		v, ok := next[string(key)]
		val, ok := w.resolve([]byte(v), ok)
		if ok {
			next[string(key)] = string(val)
		} else {
			delete(next, string(key))
		}
		b.writes = append(b.writes, w)
	}
	s := m.s
	s.wlock()
	s.nextVer++
	ver := s.nextVer
	// As a file database stages a commit while the group before it
	// syncs (wal.enqueue): in the tree, not readable until published.
	stage := len(m.staged) > 0 || m.rng.IntN(3) == 0
	touched := s.stageLocked(ver, b)
	if stage {
		m.staged = append(m.staged, modelStaged{ver, touched, b.bump})
	} else {
		s.publishLocked(ver, touched, b.bump)
	}
	s.mu.Unlock()
	m.snaps[ver] = next
	m.step("commit %d (staged %v): clears %q writes %s", ver, stage, b.clears, describeWrites(b.writes))
}

type modelStaged struct {
	ver     uint64
	touched []rec
	bump    bool
}

// publish makes the oldest staged commit readable.
func (m *collectorModel) publish() {
	p := m.staged[0]
	m.staged = m.staged[1:]
	m.s.wlock()
	m.s.publishLocked(p.ver, p.touched, p.bump)
	m.s.mu.Unlock()
	m.step("publish %d", p.ver)
}

func describeWrites(ws []*write) string {
	var b bytes.Buffer
	for _, w := range ws {
		switch w.base {
		case baseSet:
			fmt.Fprintf(&b, "set %s=%s ", w.key, w.val)
		case baseCleared:
			fmt.Fprintf(&b, "clear %s ", w.key)
		default:
			fmt.Fprintf(&b, "add %s ", w.key)
		}
	}
	return b.String()
}

func (m *collectorModel) startReader() {
	tr, err := m.db.CreateTransaction(context.Background())
	require.NoError(m.t, err)
	_, err = tr.Get([]byte("t")) // takes its read version
	require.NoError(m.t, err)
	t := tr.(*txn)
	m.readers = append(m.readers, &modelReader{tr: t, rv: t.rv, since: m.now})
	m.step("reader at %d", t.rv)
}

func (m *collectorModel) endReader() {
	m.drop(m.readers[m.rng.IntN(len(m.readers))])
}

// tooOld reports whether err failed a read of r because r is past the
// 5-second limit, which it must be then; r is dropped.
func (m *collectorModel) tooOld(r *modelReader, err error) bool {
	if err == nil {
		return false
	}
	require.Equal(m.t, kv.CodeTransactionTooOld, kv.Code(err), "%v\n%s", err, m.trail())
	require.Greater(m.t, m.now.Sub(r.since), kv.MaxTransactionAge, m.trail())
	m.step("reader at %d too old", r.rv)
	m.drop(r)
	return true
}

// tick moves the clock on: readers started more than 5 seconds before
// expire, and the collectors no longer wait for them.
func (m *collectorModel) tick() {
	d := time.Duration(m.rng.IntN(1500)) * time.Millisecond
	m.now = m.now.Add(d)
	m.step("tick %v", d)
}

func (m *collectorModel) drop(r *modelReader) {
	i := slices.Index(m.readers, r)
	m.readers = slices.Delete(m.readers, i, i+1)
	m.scans = slices.DeleteFunc(m.scans, func(sc *modelScan) bool { return sc.r == r })
	r.tr.Cancel()
	m.step("reader at %d ends", r.rv)
}

// want returns the key-values of [begin, end) at rv, in order.
func (m *collectorModel) want(rv uint64, begin, end []byte, reverse bool) []kv.KeyValue {
	var out []kv.KeyValue
	for k, v := range m.snaps[rv] {
		if bytes.Compare([]byte(k), begin) >= 0 && bytes.Compare([]byte(k), end) < 0 {
			out = append(out, kv.KeyValue{Key: []byte(k), Value: []byte(v)})
		}
	}
	slices.SortFunc(out, func(a, b kv.KeyValue) int {
		if reverse {
			return bytes.Compare(b.Key, a.Key)
		}
		return bytes.Compare(a.Key, b.Key)
	})
	return out
}

func (m *collectorModel) randomRange() (begin, end []byte) {
	i := m.rng.IntN(len(m.keys) + 1)
	j := i + m.rng.IntN(len(m.keys)+1-i)
	begin, end = []byte("k"), []byte("l")
	if i < len(m.keys) {
		begin = m.keys[i]
	}
	if j < len(m.keys) {
		end = m.keys[j]
	}
	return begin, end
}

func requireSameKVs(t *testing.T, want, got []kv.KeyValue, msgAndArgs ...any) {
	t.Helper()
	w := make([]string, len(want))
	for i, e := range want {
		w[i] = string(e.Key) + "=" + string(e.Value)
	}
	g := make([]string, len(got))
	for i, e := range got {
		g[i] = string(e.Key) + "=" + string(e.Value)
	}
	require.Equal(t, w, g, msgAndArgs...)
}

// check reads, as a random live reader, every key, a range both ways with
// and without a limit, and its first row both ways.
func (m *collectorModel) check() {
	m.checkReader(m.readers[m.rng.IntN(len(m.readers))])
}

func (m *collectorModel) checkReader(r *modelReader) {
	snap := m.snaps[r.rv]
	for _, k := range m.keys {
		v, err := r.tr.Get(k)
		if m.tooOld(r, err) {
			return
		}
		want, ok := snap[string(k)]
		require.Equal(m.t, presence([]byte(want), ok), v, "Get(%s) at %d\n%s", k, r.rv, m.trail())
	}
	vals, err := r.tr.GetMany(m.keys)
	if m.tooOld(r, err) {
		return
	}
	for i, k := range m.keys {
		want, ok := snap[string(k)]
		require.Equal(m.t, presence([]byte(want), ok), vals[i], "GetMany(%s) at %d\n%s", k, r.rv, m.trail())
	}
	begin, end := m.randomRange()
	for _, reverse := range []bool{false, true} {
		want := m.want(r.rv, begin, end, reverse)
		for _, limit := range []int{0, 1, 3} {
			got, err := kv.Collect(r.tr.GetRange(kv.Range{Begin: begin, End: end}, kv.RangeOptions{Limit: limit, Reverse: reverse}))
			if m.tooOld(r, err) {
				return
			}
			w := want
			if limit > 0 && len(w) > limit {
				w = w[:limit]
			}
			requireSameKVs(m.t, w, got, "GetRange [%s, %s) reverse %v limit %d at %d\n%s", begin, end, reverse, limit, r.rv, m.trail())
		}
		e, found, err := r.tr.First(kv.Range{Begin: begin, End: end}, reverse)
		if m.tooOld(r, err) {
			return
		}
		if len(want) == 0 {
			require.False(m.t, found, "First [%s, %s) reverse %v at %d: %s\n%s", begin, end, reverse, r.rv, e.Key, m.trail())
		} else {
			require.True(m.t, found, "First [%s, %s) reverse %v at %d\n%s", begin, end, reverse, r.rv, m.trail())
			requireSameKVs(m.t, want[:1], []kv.KeyValue{e}, "First [%s, %s) reverse %v at %d\n%s", begin, end, reverse, r.rv, m.trail())
		}
	}
	m.step("check reader at %d", r.rv)
}

// startScan starts a range read of a random live reader, to be fetched a
// batch at a time (scanStep) between the other steps.
func (m *collectorModel) startScan() {
	r := m.readers[m.rng.IntN(len(m.readers))]
	begin, end := m.randomRange()
	sc := &modelScan{r: r, begin: begin, end: end, reverse: m.rng.IntN(2) == 0}
	sc.want = m.want(r.rv, begin, end, sc.reverse)
	m.scans = append(m.scans, sc)
	m.step("scan at %d of [%s, %s) reverse %v", r.rv, begin, end, sc.reverse)
}

// scanStep fetches the next batch of a scan in progress, 1 to 3 rows,
// continuing after its last row as a range iterator does.
func (m *collectorModel) scanStep() {
	i := m.rng.IntN(len(m.scans))
	sc := m.scans[i]
	var scratch []byte
	batch, done := m.s.fetch(sc.r.rv, sc.begin, sc.beginEx, sc.end, sc.reverse, 1+m.rng.IntN(3), nil, &scratch)
	if m.tooOld(sc.r, sc.r.tr.expired()) { // as the range iterator checks each batch
		return
	}
	for _, e := range batch {
		sc.got = append(sc.got, kv.KeyValue{Key: bytes.Clone(e.Key), Value: bytes.Clone(e.Value)})
	}
	m.step("scan at %d fetches %d", sc.r.rv, len(batch))
	if len(batch) > 0 {
		last := batch[len(batch)-1].Key
		if sc.reverse {
			sc.end = bytes.Clone(last)
		} else {
			sc.begin, sc.beginEx = bytes.Clone(last), true
		}
	}
	if done || len(batch) == 0 {
		requireSameKVs(m.t, sc.want, sc.got, "scan at %d\n%s", sc.r.rv, m.trail())
		m.scans = slices.Delete(m.scans, i, i+1)
	}
}

func (m *collectorModel) gcSlice() {
	budget := 1 + m.rng.IntN(6)
	m.s.wlock()
	m.s.gcLocked(m.now, budget)
	m.s.mu.Unlock()
	m.step("gc %d", budget)
}

func (m *collectorModel) tombSlice() {
	budget := 1 + m.rng.IntN(4)
	s := m.s
	s.wlock()
	defer s.mu.Unlock()
	h := s.horizonLocked(m.now)
	if len(s.tombs) == 0 || s.tombs[0].ver > h {
		return
	}
	s.tombsLocked(h, budget)
	m.step("tombs %d at horizon %d", budget, h)
}

// compactSlice continues a compaction, starting one if none runs.
func (m *collectorModel) compactSlice() {
	budget := 1 + m.rng.IntN(4)
	s := m.s
	s.wlock()
	defer s.mu.Unlock()
	if !s.sweep.on {
		s.sweep.on, s.sweep.cursor, s.slabs.dead = true, []byte{}, 0
		s.tree = s.tree.Copy()
	}
	s.compactLocked(budget)
	m.step("compact %d", budget)
}

// finish ends every reader and collects everything: what is left must be
// the newest version of each live key, nothing else.
func (m *collectorModel) finish() {
	for len(m.staged) > 0 {
		m.publish()
	}
	for len(m.readers) > 0 {
		m.endReader()
	}
	s := m.s
	s.wlock()
	defer s.mu.Unlock()
	for range 4 {
		s.collectQueuedLocked(m.now)
		s.tombsLocked(s.horizonLocked(m.now), 1<<30)
	}
	want := m.snaps[s.version.Load()]
	require.Empty(m.t, s.tombs, "tombstones left\n%s", m.trail())
	require.Equal(m.t, len(s.gcq), s.gcHead, "the collector's queue not drained\n%s", m.trail())
	require.Zero(m.t, len(s.older), "versions older than the newest left\n%s", m.trail())
	require.Zero(m.t, s.dead.Len(), "deletions left\n%s", m.trail())
	got := map[string]string{}
	live := 0
	s.tree.Scan(func(r rec) bool {
		require.False(m.t, r.del(), "a deletion in the tree: %q\n%s", r.key(), m.trail())
		require.False(m.t, r.stale(), "a stale record in the tree: %q\n%s", r.key(), m.trail())
		require.False(m.t, r.hasOlder(), "a record with an older version: %q\n%s", r.key(), m.trail())
		got[string(r.key())] = string(r.val())
		live += r.size()
		return true
	})
	require.Equal(m.t, want, got, m.trail())
	require.Equal(m.t, live, s.slabs.live, "bytes in use\n%s", m.trail())
}

var collectorSeeds = flag.Int("collector-seeds", 300, "seeds TestCollectorsModel runs")

func runCollectorModel(t *testing.T, seed uint64, nkeys, steps int) {
	m := newCollectorModel(t, seed, nkeys)
	defer func() { require.NoError(t, m.db.Close()) }()
	for range steps {
		switch n := m.rng.IntN(100); {
		case n < 22:
			m.commit()
		case n < 25:
			if len(m.staged) > 0 {
				m.publish()
			}
		case n < 33:
			if len(m.readers) < 6 {
				m.startReader()
			}
		case n < 40:
			if len(m.readers) > 0 {
				m.endReader()
			}
		case n < 50:
			if len(m.readers) > 0 {
				m.check()
			}
		case n < 55:
			if len(m.readers) > 0 {
				m.startScan()
			}
		case n < 65:
			if len(m.scans) > 0 {
				m.scanStep()
			}
		case n < 77:
			m.gcSlice()
		case n < 88:
			m.tombSlice()
		case n < 90:
			m.tick()
		default:
			m.compactSlice()
		}
	}
	for len(m.scans) > 0 {
		m.scanStep()
	}
	for _, r := range slices.Clone(m.readers) {
		m.checkReader(r)
	}
	m.finish()
}

// TestCollectorsModel: commits (sets, clears, adds, range clears that
// make tombstones), readers starting and ending, range reads fetched a
// batch at a time, and single slices of the version collector, the
// tombstone collector and compaction, interleaved as a seed says, each
// in its own hold of the lock. Every read of every reader, at every
// step, sees the database as of its version, and once the readers are
// gone the collectors leave only the newest version of each live key.
func TestCollectorsModel(t *testing.T) {
	t.Parallel()
	seeds := *collectorSeeds
	if testing.Short() {
		seeds = min(seeds, 60)
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			runCollectorModel(t, seed, 16, 600)
		})
	}
}

// TestCollectorsModelWide is TestCollectorsModel with enough keys for
// the tree to have inner nodes (a leaf holds up to 127), so that the
// path hints of reads and writes, and compaction's copy-on-write of the
// nodes, cross leaves.
func TestCollectorsModelWide(t *testing.T) {
	t.Parallel()
	seeds := *collectorSeeds / 10
	if testing.Short() {
		seeds = min(seeds, 6)
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			runCollectorModel(t, seed, 400, 1500)
		})
	}
}
