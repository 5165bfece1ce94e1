package embedded

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// runKey returns key seq of group g: groups under prefixes of several
// lengths (the longest past the tree's 48-byte prefixes), so that a run
// of a group's keys is a run of adjacent keys in the tree.
func runKey(g, seq int) string {
	pre := fmt.Sprintf("r%d", g)
	for range g * 13 {
		pre += "\x00\xff"[g%2:][:1]
	}
	return pre + string(binary.BigEndian.AppendUint16(nil, uint16(seq)))
}

// runOp is one write of a transaction: kind 's' set, 'c' clear, 'a' add,
// 'x' compare-and-clear, 'r' clear of [key, end).
type runOp struct {
	kind     byte
	key, end string
	val      string
	delta    int64
}

// applyRunOps applies ops to model, as the database does.
func applyRunOps(model map[string]string, ops []runOp) {
	for _, o := range ops {
		switch o.kind {
		case 's':
			model[o.key] = o.val
		case 'c':
			delete(model, o.key)
		case 'r':
			for k := range model {
				if k >= o.key && k < o.end {
					delete(model, k)
				}
			}
		case 'x':
			if v, ok := model[o.key]; ok && v == o.val {
				delete(model, o.key)
			}
		case 'a': // FoundationDB's ADD: little-endian, as long as the parameter
			v := []byte(model[o.key])
			var cur uint64
			for i := range min(len(v), 8) {
				cur |= uint64(v[i]) << (8 * i)
			}
			model[o.key] = string(binary.LittleEndian.AppendUint64(nil, cur+uint64(o.delta)))
		}
	}
}

// TestSetRunsModel: commits of runs of adjacent keys (setRunsLocked's
// stretches), each key of a run new, live (an overwrite: a version
// chain), or deleted while an older reader lives (in s.dead: a deleted
// key back), the runs broken by atomic operations, clears and range
// clears in the same commit, with readers at old versions: every reader
// reads its version (Get, range reads both ways), and once the readers
// are gone and the collector has run, no version chain or deletion is
// left and the records counted in use are exactly the tree's (each record
// a commit wrote went to the collector's queue once: one missed would
// keep its older versions for good). A file: database replays its log
// through the same install to the same contents.
func TestSetRunsModel(t *testing.T) {
	t.Parallel()
	for _, file := range []bool{false, true} {
		for _, tombs := range []bool{false, true} {
			for seed := uint64(1); seed <= 3; seed++ {
				t.Run(fmt.Sprintf("file=%v/tombs=%v/seed=%d", file, tombs, seed), func(t *testing.T) {
					t.Parallel()
					setRunsModel(t, file, tombs, seed)
				})
			}
		}
	}
}

func setRunsModel(t *testing.T, file, tombs bool, seed uint64) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := stoppedClock()
	open := func() *DB {
		if !file {
			return Open("", cfg)
		}
		// No checkpoint at Close: a reopen replays the whole log.
		db, err := OpenFile(dir, FileConfig{Config: cfg, CheckpointBytes: 1 << 40})
		require.NoError(t, err)
		return db
	}
	if tombs {
		// Range clears of more than a key are tombstones: their keys
		// stay in the tree, and a set of one replaces its record.
		open0 := open
		open = func() *DB { db := open0(); SetTombMinKeys(db, 1); return db }
	}
	db := open()
	defer func() { require.NoError(t, db.Close()) }()
	db.s.sweep.slack = 32 << 10 // compact often: the tree is copied under the fingers
	r := rand.New(rand.NewPCG(seed, 23))
	const groups, span = 4, 700
	tails := make([]int, groups)
	model := map[string]string{}
	type reader struct {
		tr    kv.Transaction
		want  map[string]string
		round int // the round whose commit it reads
	}
	var readers []reader
	defer func() {
		for _, rd := range readers {
			rd.tr.Cancel()
		}
	}()
	check := func(tr kv.Transaction, want map[string]string, what string) {
		t.Helper()
		requireHolds(t, db, tr, want, what)
		keys := slices.Sorted(maps.Keys(want))
		got, err := kv.Collect(tr.GetRange(kv.Range{Begin: []byte{}, End: []byte{0xff}}, kv.RangeOptions{Reverse: true, Limit: 30}))
		require.NoError(t, err)
		require.Len(t, got, min(30, len(keys)), what)
		for i, e := range got {
			require.Equal(t, keys[len(keys)-1-i], string(e.Key), what)
		}
		for range 20 {
			k := runKey(r.IntN(groups), r.IntN(span))
			v, err := tr.Get([]byte(k))
			require.NoError(t, err)
			w, ok := want[k]
			if ok {
				require.Equal(t, w, string(v), "%s: get %q", what, k)
			} else {
				require.Nil(t, v, "%s: get %q", what, k)
			}
		}
	}
	for round := range 120 {
		var ops []runOp
		for range 1 + r.IntN(4) {
			g := r.IntN(groups)
			switch c := r.IntN(10); {
			case c < 6: // a run: at the tail, or over keys live and deleted
				lo := tails[g]
				if r.IntN(2) == 0 || lo >= span-1 {
					lo = r.IntN(span - 1)
				}
				hi := min(span, lo+1+r.IntN(300))
				tails[g] = max(tails[g], hi)
				for seq := lo; seq < hi; seq++ {
					k := runKey(g, seq)
					switch x := r.IntN(40); {
					case x == 0:
						ops = append(ops, runOp{kind: 'a', key: k, delta: int64(seq)})
					case x == 1:
						ops = append(ops, runOp{kind: 'c', key: k})
					case x == 2: // set, then cleared in the same commit
						ops = append(ops, runOp{kind: 's', key: k, val: "gone"}, runOp{kind: 'c', key: k})
					case x == 3: // cleared, then set again
						ops = append(ops, runOp{kind: 'c', key: k}, runOp{kind: 's', key: k, val: fmt.Sprint("back", round)})
					case x == 4:
						ops = append(ops, runOp{kind: 'x', key: k, val: model[k]})
					default:
						ops = append(ops, runOp{kind: 's', key: k, val: fmt.Sprintf("%d.%d.%0*d", round, seq, r.IntN(30), 0)})
					}
				}
			case c < 8: // deletes: the keys come back in later runs
				for range 1 + r.IntN(40) {
					ops = append(ops, runOp{kind: 'c', key: runKey(g, r.IntN(span))})
				}
			default:
				lo := r.IntN(span)
				hi := min(span, lo+r.IntN(200))
				ops = append(ops, runOp{kind: 'r', key: runKey(g, lo), end: runKey(g, hi)})
			}
		}
		require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
			for _, o := range ops {
				switch o.kind {
				case 's':
					tr.Set([]byte(o.key), []byte(o.val))
				case 'c':
					tr.Clear([]byte(o.key))
				case 'r':
					tr.ClearRange(kv.Range{Begin: []byte(o.key), End: []byte(o.end)})
				case 'x':
					tr.CompareAndClear([]byte(o.key), []byte(o.val))
				case 'a':
					tr.Add([]byte(o.key), o.delta)
				}
			}
			return nil
		}))
		applyRunOps(model, ops)
		if r.IntN(4) == 0 || len(readers) == 0 {
			readers = append(readers, reader{tr: readerNow(t, db), want: maps.Clone(model), round: round})
		}
		if len(readers) > 3 || r.IntN(6) == 0 {
			i := r.IntN(len(readers))
			check(readers[i].tr, readers[i].want, fmt.Sprintf("round %d, reader of round %d leaving", round, readers[i].round))
			readers[i].tr.Cancel()
			readers = slices.Delete(readers, i, i+1)
		}
		if round%10 == 9 {
			fresh := readerNow(t, db)
			check(fresh, model, fmt.Sprintf("round %d", round))
			fresh.Cancel()
			for i, rd := range readers {
				check(rd.tr, rd.want, fmt.Sprintf("round %d, reader %d of round %d", round, i, rd.round))
			}
		}
		if file && round%40 == 39 {
			for _, rd := range readers {
				rd.tr.Cancel()
			}
			readers = nil
			require.NoError(t, db.Close())
			db = open()
			db.s.sweep.slack = 32 << 10
			require.Positive(t, db.Recovery().Records, "a reopen that replayed no log")
			fresh := readerNow(t, db)
			check(fresh, model, fmt.Sprintf("round %d, reopened", round))
			fresh.Cancel()
		}
	}
	for _, rd := range readers {
		check(rd.tr, rd.want, fmt.Sprintf("end, reader of round %d", rd.round))
		rd.tr.Cancel()
	}
	readers = nil
	if tombs {
		// With no reader left, the tombstones' keys leave the tree
		// (as the store's collectTombs takes them out).
		for i := 0; ; i++ {
			require.Less(t, i, 1000, "tombstones left")
			if pending, _ := db.s.tombSlice(^uint64(0), false); !pending {
				break
			}
		}
		requireHolds(t, db, nil, model)
	}
	requireCollected(t, db)
}

// requireCollected checks, with no reader left, that once the collector
// has pruned everything queued, no key has an older version or a
// deletion left, no record in the tree is marked stale, older or deleted,
// and the bytes counted in use are the tree's records'.
func requireCollected(t *testing.T, db *DB) {
	t.Helper()
	s := db.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for range 8 {
		s.collectQueuedLocked(time.Now())
	}
	require.Equal(t, len(s.gcq), s.gcHead, "the collector's queue not drained")
	require.Zero(t, len(s.older), "versions older than the newest left")
	require.Zero(t, s.dead.Len(), "deletions left")
	live := 0
	s.tree.Scan(func(r rec) bool {
		require.False(t, r.del(), "a deletion in the tree: %q", r.key())
		require.False(t, r.stale(), "a stale record in the tree: %q", r.key())
		require.False(t, r.hasOlder(), "a record with an older version: %q", r.key())
		live += r.size()
		return true
	})
	require.Equal(t, live, s.slabs.live, "bytes in use")
}

// TestSetRunsSnapshotsUnderConcurrency: writers commit runs of adjacent
// keys (new keys, and deleted keys written again) and deletions in their
// own group, with the group's count in the same commit, while readers
// read each group's count and its keys in one transaction: every reader
// sees a snapshot, the count its keys have, whatever commits install
// (and, on file:, stage while their fsync runs) meanwhile.
func TestSetRunsSnapshotsUnderConcurrency(t *testing.T) {
	t.Parallel()
	for _, file := range []bool{false, true} {
		t.Run(fmt.Sprintf("file=%v", file), func(t *testing.T) {
			t.Parallel()
			db := openMemoryOrFile(t, file)
			defer func() { require.NoError(t, db.Close()) }()
			ctx := context.Background()
			const writers, readers, commits, span = 2, 2, 150, 400
			count := func(g int) []byte { return []byte(fmt.Sprintf("c%d", g)) }
			groupRange := func(g int) kv.Range {
				return kv.Range{Begin: []byte(runKey(g, 0)), End: []byte(runKey(g, span))}
			}
			done := make(chan struct{})
			errs := make(chan error, writers+readers)
			var writing, reading sync.WaitGroup
			for w := range writers {
				writing.Go(func() {
					r := rand.New(rand.NewPCG(uint64(w), 31))
					live := map[int]bool{}
					for range commits {
						next := maps.Clone(live)
						lo := r.IntN(span - 1)
						hi := min(span, lo+1+r.IntN(150))
						del := r.IntN(3) == 0
						err := db.Transact(ctx, func(tr kv.Transaction) error {
							next = maps.Clone(live)
							for seq := lo; seq < hi; seq++ {
								if del && r.IntN(2) == 0 {
									tr.Clear([]byte(runKey(w, seq)))
									delete(next, seq)
								} else {
									tr.Set([]byte(runKey(w, seq)), []byte(fmt.Sprint(seq)))
									next[seq] = true
								}
							}
							tr.Set(count(w), []byte(fmt.Sprint(len(next))))
							return nil
						})
						if err != nil {
							errs <- err
							return
						}
						live = next
					}
				})
			}
			for range readers {
				reading.Go(func() {
					for {
						select {
						case <-done:
							return
						default:
						}
						for g := range writers {
							err := db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
								c, err := tr.Get(count(g))
								if err != nil {
									return err
								}
								kvs, err := kv.Collect(tr.GetRange(groupRange(g), kv.RangeOptions{}))
								if err != nil {
									return err
								}
								if c == nil && len(kvs) == 0 {
									return nil
								}
								if fmt.Sprint(len(kvs)) != string(c) {
									return fmt.Errorf("group %d: count %s, %d keys", g, c, len(kvs))
								}
								return nil
							})
							if err != nil {
								errs <- err
								return
							}
						}
					}
				})
			}
			writing.Wait()
			close(done)
			reading.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
		})
	}
}

// openMemoryOrFile opens a private memory database, or a file database in
// a temporary directory: the caller closes it.
func openMemoryOrFile(t *testing.T, file bool) *DB {
	t.Helper()
	if !file {
		return Open("", Config{})
	}
	db, err := OpenFile(t.TempDir(), FileConfig{})
	require.NoError(t, err)
	return db
}
