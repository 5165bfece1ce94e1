package embedded

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

func slabSet(t *testing.T, db *DB, kvs map[string][]byte) {
	t.Helper()
	require.NoError(t, db.Transact(context.Background(), func(tr kv.Transaction) error {
		for k, v := range kvs {
			if v == nil {
				tr.Clear([]byte(k))
			} else {
				tr.Set([]byte(k), v)
			}
		}
		return nil
	}))
}

func slabGet(t *testing.T, tr kv.ReadTransaction, k string) []byte {
	t.Helper()
	v, err := tr.Get([]byte(k))
	require.NoError(t, err)
	return v
}

// TestRecordsKeepEveryVersion: records of odd sizes (empty key and value,
// lengths at the uvarint boundaries, a value larger than a slab) read back
// exactly, a reader at an older version reads the older record while newer
// ones replace it, and once it is gone the older versions are dropped.
func TestRecordsKeepEveryVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := Open("", Config{})
	big := bytes.Repeat([]byte{7}, 3*slabSize)
	k127, k128 := string(bytes.Repeat([]byte{'k'}, 127)), string(bytes.Repeat([]byte{'l'}, 128))
	v1 := map[string][]byte{"": {}, "e": {}, k127: bytes.Repeat([]byte{1}, 128), k128: bytes.Repeat([]byte{2}, 16383), "big": big}
	slabSet(t, db, v1)

	old, err := db.CreateTransaction(ctx)
	require.NoError(t, err)
	defer old.Cancel()
	for k, v := range v1 {
		require.Equal(t, v, slabGet(t, old, k), "key %q", k)
	}

	// Replace every key, twice, and delete one: the reader keeps v1.
	v2 := map[string][]byte{"": []byte("x"), "e": nil, k127: {}, k128: []byte("short"), "big": big[:slabSize]}
	slabSet(t, db, v2)
	slabSet(t, db, map[string][]byte{"big": []byte("small now")})
	v2["big"] = []byte("small now")
	for k, v := range v1 {
		require.Equal(t, v, slabGet(t, old, k), "old reader, key %q", k)
	}
	require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		for k, v := range v2 {
			require.Equal(t, v, slabGet(t, tr, k), "key %q", k)
		}
		return nil
	}))
	db.s.mu.RLock()
	require.NotEmpty(t, db.s.older, "the old reader holds older versions")
	db.s.mu.RUnlock()

	// The reader goes: the next commits drop what only it could read.
	old.Cancel()
	settle(t, db)
	require.Equal(t, 4, treeKeys(db, "", "\xfe"), "the deletion of e left the tree")
	db.s.mu.RLock()
	for r := range db.s.older {
		require.Equal(t, byte(0xfe), r.key()[0], "only settle's last key has an older version")
	}
	db.s.mu.RUnlock()
	require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		for k, v := range v2 {
			require.Equal(t, v, slabGet(t, tr, k), "key %q", k)
		}
		return nil
	}))
}

// settle commits until the engine has collected every version no reader
// needs and finished any compaction: each commit gives both a budget.
func settle(t *testing.T, db *DB) {
	t.Helper()
	for i := 0; i < 10000; i++ {
		// A new key each time: a commit's own versions wait for the
		// next commit (its read version holds them).
		slabSet(t, db, map[string][]byte{fmt.Sprintf("\xfe%d", i): {}})
		if st := db.Stats(); st.PendingGC <= 1 && !db.s.sweep.on {
			return
		}
	}
	t.Fatal("the engine did not settle")
}

// treeKeys counts the records in the tree in [begin, end), deletions
// included.
func treeKeys(db *DB, begin, end string) int {
	db.s.mu.RLock()
	defer db.s.mu.RUnlock()
	n := 0
	count := func(r rec) bool {
		if k := string(r.key()); k >= begin && k < end {
			n++
		}
		return true
	}
	db.s.tree.Scan(count)
	db.s.dead.Scan(count)
	return n
}

// TestDeletionsLeaveTheTreeAtOnce: while an old reader holds the versions
// of deleted keys, the keys are out of the tree (reads at the newest
// version never step over them) and in s.dead, the old reader still reads
// them, and once it is gone they leave s.dead too.
func TestDeletionsLeaveTheTreeAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := Open("", Config{})
	defer db.Close()
	const n = 100
	v := map[string][]byte{}
	for i := range n {
		v[fmt.Sprintf("q%03d", i)] = []byte{byte(i)}
	}
	slabSet(t, db, v)
	old, err := db.CreateTransaction(ctx)
	require.NoError(t, err)
	defer old.Cancel()
	_, err = old.GetReadVersion()
	require.NoError(t, err)
	for i := range n - 1 { // pop all but the last, one commit each
		require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
			tr.Clear([]byte(fmt.Sprintf("q%03d", i)))
			return nil
		}))
	}
	db.s.mu.RLock()
	require.Equal(t, 1, db.s.tree.Len(), "only the live key is in the tree")
	require.Equal(t, n-1, db.s.dead.Len())
	db.s.mu.RUnlock()
	kvs, err := kv.Collect(old.GetRange(kv.PrefixRange([]byte("q")), kv.RangeOptions{}))
	require.NoError(t, err)
	require.Len(t, kvs, n, "the old reader reads every key")
	for i, e := range kvs {
		require.Equal(t, fmt.Sprintf("q%03d", i), string(e.Key))
		require.Equal(t, []byte{byte(i)}, e.Value)
	}
	old.Cancel()
	settle(t, db)
	db.s.mu.RLock()
	require.Zero(t, db.s.dead.Len(), "no reader needs the deletions")
	db.s.mu.RUnlock()
}

// slabBytesSettle collects garbage until the cleanups have counted the freed
// slabs (they run after a collection, on their own goroutine), or gives up
// after a bounded number of rounds, and returns the engine's stats.
func slabBytesSettle(db *DB, want func(Stats) bool) Stats {
	var st Stats
	for range 100 {
		runtime.GC()
		st = db.Stats()
		if want(st) {
			break
		}
		time.Sleep(time.Millisecond) // lets the cleanup goroutine run
	}
	return st
}

// TestSlabsFreedWithTheirRecords: a slab lives only while a record in it is
// in use. Keys written then deleted in order (a FIFO queue's pattern) free
// their slabs without any compaction.
func TestSlabsFreedWithTheirRecords(t *testing.T) {
	t.Parallel()
	db := Open("", Config{})
	db.s.sweep.slack = 1 << 40 // no compaction
	val := bytes.Repeat([]byte{9}, 200)
	const n, per = 4000, 100
	for i := 0; i < n; i += per {
		m := map[string][]byte{}
		for j := i; j < i+per; j++ {
			m[fmt.Sprintf("task/%06d", j)] = val
		}
		slabSet(t, db, m)
	}
	full := db.Stats()
	require.Greater(t, full.SlabBytes, int64(n*200), "the records are in slabs")
	for i := 0; i < n; i += per {
		m := map[string][]byte{}
		for j := i; j < i+per; j++ {
			m[fmt.Sprintf("task/%06d", j)] = nil
		}
		slabSet(t, db, m)
	}
	settle(t, db)
	st := slabBytesSettle(db, func(st Stats) bool { return st.SlabBytes <= 2*slabSize })
	require.Zero(t, treeKeys(db, "task/", "task0"))
	require.LessOrEqual(t, st.SlabBytes, int64(2*slabSize), "only the slabs in use are left")
}

// TestCompactionMovesStragglers: keys deleted in random order leave a few
// live records in every slab; compaction moves them, so the slabs are
// freed, and every value and every older reader's view stay as they were.
func TestCompactionMovesStragglers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := Open("", Config{})
	db.s.sweep.slack = 64 << 10
	r := rand.New(rand.NewPCG(1, 2))
	const n, per = 8000, 200
	want := map[string][]byte{}
	keys := make([]string, 0, n)
	for i := 0; i < n; i += per {
		m := map[string][]byte{}
		for j := i; j < i+per; j++ {
			k := fmt.Sprintf("task/%06d", j)
			v := make([]byte, 100+r.IntN(100))
			for x := range v {
				v[x] = byte(r.IntN(256))
			}
			m[k], want[k] = v, v
			keys = append(keys, k)
		}
		slabSet(t, db, m)
	}
	full := db.Stats()

	// A reader that started before the deletions, held across the
	// compaction.
	old, err := db.CreateTransaction(ctx)
	require.NoError(t, err)
	defer old.Cancel()
	probeKeys := keys[:50]
	for _, k := range probeKeys {
		require.Equal(t, want[k], slabGet(t, old, k))
	}

	r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	for i := 0; i < n*9/10; i += per {
		m := map[string][]byte{}
		for _, k := range keys[i : i+per] {
			m[k] = nil
			delete(want, k)
		}
		slabSet(t, db, m)
	}
	for _, k := range probeKeys {
		v, err := old.Get([]byte(k))
		require.NoError(t, err)
		require.NotNil(t, v, "the old reader still sees %s", k)
	}
	old.Cancel()
	settle(t, db) // commits drive the collection and the compaction

	st := slabBytesSettle(db, func(st Stats) bool { return st.SlabBytes <= full.SlabBytes/4 })
	require.LessOrEqual(t, st.SlabBytes, full.SlabBytes/4,
		"the slabs shrank with the records (records %d bytes, %d at the start)", st.RecordBytes, full.RecordBytes)

	got := map[string][]byte{}
	require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		it := tr.GetRange(kv.Range{Begin: []byte("task/"), End: []byte("task0")}, kv.RangeOptions{})
		for it.Next() {
			got[string(it.KeyValue().Key)] = it.KeyValue().Value
		}
		return it.Err()
	}))
	require.Equal(t, want, got)
}

// TestCompactionUnpinsTreeNodes: keys written in order split the tree's
// nodes, and a split node keeps stale copies of the items it gave away
// past its length: once those keys are written again, the stale copies are
// all that pins the old records' slabs. Compaction gives the nodes fresh
// arrays, so the slabs go.
func TestCompactionUnpinsTreeNodes(t *testing.T) {
	t.Parallel()
	db := Open("", Config{})
	db.s.sweep.slack = 64 << 10
	const n, per = 20000, 500
	write := func(val []byte) {
		for i := 0; i < n; i += per {
			m := map[string][]byte{}
			for j := i; j < i+per; j++ {
				m[fmt.Sprintf("task/%06d", j)] = val
			}
			slabSet(t, db, m)
		}
	}
	write(bytes.Repeat([]byte{1}, 100))
	write(bytes.Repeat([]byte{2}, 100))
	settle(t, db)
	live := db.Stats().RecordBytes
	st := slabBytesSettle(db, func(st Stats) bool { return st.SlabBytes <= int64(live)*3/2 })
	require.LessOrEqual(t, st.SlabBytes, int64(live)*3/2, "records %d bytes", live)
}
