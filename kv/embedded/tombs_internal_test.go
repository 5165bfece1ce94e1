package embedded

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// TestTombCollectedAroundKeyMovedBack: the collector removes a
// tombstone's keys a slice at a time, releasing the lock in between. A
// key deleted ahead of its walk (into s.dead) and set again behind it
// (back into the tree) was in neither part the collector read: its
// version under the tombstone stayed in the key's chain, and once the
// tombstone went, a reader between the tombstone and the deletion read
// that version again, a range-cleared value back from the dead.
func TestTombCollectedAroundKeyMovedBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, key := tombsDB(t, 10)
	// A reader older than the tombstone: nothing collects it on its own.
	oldest := readerNow(t, db)
	defer oldest.Cancel()
	clearRange(t, db, key(0), key(10))
	require.Equal(t, 1, Tombs(db))
	tombVer := db.s.tombs[0].ver
	between := readerNow(t, db) // sees the range cleared
	defer between.Cancel()

	// As if oldest were gone.
	collect := tombsCollector(db, tombVer)
	collect(3) // k00..k02
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		tr.Clear(key(5)) // ahead of the walk: into s.dead
		return nil
	}))
	collect(5) // the tree's k03, k04, k06, k07, k08
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		tr.Set(key(5), []byte("new")) // behind the walk: back in the tree
		return nil
	}))
	collect(100)
	require.Zero(t, Tombs(db))

	v, err := between.Get(key(5))
	require.NoError(t, err)
	require.Nil(t, v, "a value the tombstone cleared read again")
	got, err := kv.Collect(between.GetRange(kv.Range{Begin: key(0), End: key(10)}, kv.RangeOptions{}))
	require.NoError(t, err)
	require.Empty(t, got)
}

// TestTombCollectedWhenOldestReaderEnds: a range clear's tombstone waits
// for the readers older than it. Only a commit's collection started its
// collector, so when the last of them ended and no one committed again
// (a dropped table, then reads only), the tombstone and every key it
// covers stayed in the tree for good. The release of the oldest reader,
// a transaction's or a checkpoint's pinned one, starts it now.
func TestTombCollectedWhenOldestReaderEnds(t *testing.T) {
	t.Parallel()
	for _, pinned := range []bool{false, true} {
		t.Run(fmt.Sprintf("pinned=%v", pinned), func(t *testing.T) {
			t.Parallel()
			db, key := tombsDB(t, 10)
			var release func()
			if pinned {
				pin, _ := db.s.pinReadVersion()
				release = func() { db.s.releaseReadVersion(pin) }
			} else {
				release = readerNow(t, db).Cancel
			}
			younger := readerNow(t, db)
			defer younger.Cancel()
			clearRange(t, db, key(0), key(10))
			require.Equal(t, 1, Tombs(db), "kept while older readers live")
			younger.Cancel() // not the oldest: the tombstone still waits
			require.Equal(t, 1, Tombs(db))
			release()
			require.Eventually(t, func() bool { return Tombs(db) == 0 }, 10*time.Second, time.Millisecond,
				"the tombstone is left once its readers are gone")
			require.Zero(t, db.Stats().LiveKeys)
		})
	}
}

// TestTombWaitSeesReleaseBeforeMark: the oldest reader ends after a
// collection read the horizon (it still counted) and before it marked the
// tombstones blocked: its release saw no mark and started nothing. The
// collection looks at the horizon again once marked, and starts the
// tombstones' collector itself.
func TestTombWaitSeesReleaseBeforeMark(t *testing.T) {
	t.Parallel()
	db, key := tombsDB(t, 10)
	old := readerNow(t, db)
	clearRange(t, db, key(0), key(10))
	s := db.s
	s.wlock()
	h := s.horizonLocked(time.Now()) // old still counts
	require.Less(t, h, s.tombs[0].ver)
	s.tombsBlocked.Store(false) // not marked yet
	old.Cancel()                // takes activeMu only
	s.startTombsLocked(h)
	started := s.tombWorker
	s.mu.Unlock()
	require.True(t, started, "the collector waits for a reader that is gone")
	require.Eventually(t, func() bool { return Tombs(db) == 0 }, 10*time.Second, time.Millisecond)
}

// tombsDB opens a memory database whose range clears of more than one
// key are tombstones, holding keys k00..k(n-1) set to "old"; key names
// them. It is closed when the test ends.
func tombsDB(t *testing.T, n int) (db *DB, key func(int) []byte) {
	t.Helper()
	db = Open("", Config{})
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	SetTombMinKeys(db, 1)
	key = func(i int) []byte { return fmt.Appendf(nil, "k%02d", i) }
	require.NoError(t, db.Transact(context.Background(), func(tr kv.Transaction) error {
		for i := range n {
			tr.Set(key(i), []byte("old"))
		}
		return nil
	}))
	return db, key
}

// clearRange clears [begin, end) in a commit of its own.
func clearRange(t *testing.T, db *DB, begin, end []byte) {
	t.Helper()
	require.NoError(t, db.Transact(context.Background(), func(tr kv.Transaction) error {
		tr.ClearRange(kv.Range{Begin: begin, End: end})
		return nil
	}))
}

// TestTombSliceBoundsDeletedKeys: a tombstone's range whose keys were
// deleted one by one while an older reader lived holds them in s.dead,
// all between two keys of the tree. A slice of the collector read every
// one of them in one hold of the store's lock, however many; it reads as
// many as its budget now, and the next slice goes on after them.
func TestTombSliceBoundsDeletedKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, key := tombsDB(t, 100)
	oldest := readerNow(t, db)
	defer oldest.Cancel()
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		for i := range 98 {
			tr.Clear(key(i)) // kept in s.dead for oldest
		}
		return nil
	}))
	all := kv.Range{Begin: []byte("k"), End: []byte("l")}
	clearRange(t, db, all.Begin, all.End)
	require.Equal(t, 1, Tombs(db))
	tombVer := db.s.tombs[0].ver
	between := readerNow(t, db)
	defer between.Cancel()

	collect := tombsCollector(db, tombVer) // as if oldest were gone
	collect(5)
	require.Equal(t, 1, Tombs(db), "one slice took every deleted key")
	require.Equal(t, kv.KeyAfter(key(4)), db.s.tombs[0].next)
	for range 30 {
		collect(5)
	}
	require.Zero(t, Tombs(db))
	require.Zero(t, db.Stats().LiveKeys, "the tree's two keys went with the tombstone")
	got, err := kv.Collect(between.GetRange(all, kv.RangeOptions{}))
	require.NoError(t, err)
	require.Empty(t, got)
}

// tombsCollector returns a function that runs one call of the tombstone
// collector with a budget, at the horizon h.
func tombsCollector(db *DB, h uint64) func(budget int) {
	return func(budget int) {
		db.s.wlock()
		defer db.s.mu.Unlock()
		db.s.tombsLocked(h, budget)
	}
}

// requireScratchEmpty checks that the tombstone collector's scratch
// arrays, kept by the store, hold no record in any slot: a record there
// would keep its slab, and the bytes compaction counts, alive.
func requireScratchEmpty(t *testing.T, db *DB) {
	t.Helper()
	db.s.rlock()
	defer db.s.mu.RUnlock()
	for _, a := range [][]rec{db.s.tombBatch, db.s.tombDead} {
		for i, r := range a[:cap(a)] {
			require.Nil(t, r.p, "slot %d of %d holds a record", i, cap(a))
		}
	}
}

// TestTombScratchKeepsNoRecords: one call of the collector that goes
// through two tombstones, the second with fewer keys than the first,
// leaves none of the first's records in the arrays it keeps.
func TestTombScratchKeepsNoRecords(t *testing.T) {
	t.Parallel()
	db, key := tombsDB(t, 30)
	oldest := readerNow(t, db)
	defer oldest.Cancel()
	clearRange(t, db, key(0), key(20))
	clearRange(t, db, key(20), key(23))
	require.Equal(t, 2, Tombs(db))
	tombsCollector(db, db.s.tombs[1].ver)(100) // as if oldest were gone
	require.Zero(t, Tombs(db))
	requireScratchEmpty(t, db)
}

// TestRecoveredTombScratchKeepsNoRecords: recovery collects a tombstone
// of thousands of keys in one call, its arrays growing past those the
// store keeps; neither holds a record after.
func TestRecoveredTombScratchKeepsNoRecords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	db, err := OpenFile(dir, FileConfig{})
	require.NoError(t, err)
	key := func(i int) []byte { return fmt.Appendf(nil, "k%05d", i) }
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		for i := range 5000 {
			tr.Set(key(i), []byte("v"))
		}
		return nil
	}))
	old := readerNow(t, db) // the tombstone stays for recovery
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		tr.ClearRange(kv.Range{Begin: key(0), End: key(5000)})
		return nil
	}))
	old.Cancel()
	require.NoError(t, db.Close())
	db, err = OpenFile(dir, FileConfig{})
	require.NoError(t, err)
	defer func() { require.NoError(t, db.Close()) }()
	require.Zero(t, Tombs(db))
	requireScratchEmpty(t, db)
}
