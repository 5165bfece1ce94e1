package embedded_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
)

// TestReadsAtOldVersionsModel checks reads at old read versions against a
// model, with keys deleted, set again and deleted again while the readers
// live: a reader sees every key as of its version, through Get, First and
// range reads in both directions (with limits, and long enough to take
// several batches), whether the key is live now, deleted since, or set
// again since. Deleted keys leave the tree at once, and old readers find
// them among the commits since their version (mvcc.go).
//
// With tombstones, every range clear of more than one key is a tombstone
// (tombs.go) instead of a deletion per key; the collector removes the keys
// it covers once no reader is older.
func TestReadsAtOldVersionsModel(t *testing.T) {
	t.Parallel()
	for _, tombs := range []bool{false, true} {
		for seed := range uint64(8) {
			t.Run(fmt.Sprintf("tombstones=%v/%d", tombs, seed), func(t *testing.T) {
				t.Parallel()
				readsAtOldVersions(t, seed, tombs)
			})
		}
	}
}

func readsAtOldVersions(t *testing.T, seed uint64, tombs bool) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 7))
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	if tombs {
		embedded.SetTombMinKeys(db, 1)
	}
	const keys = 48
	key := func(i int) []byte { return []byte(fmt.Sprintf("k%03d", i)) }
	model := map[string]string{}
	snapshot := func() map[string]string {
		c := make(map[string]string, len(model))
		for k, v := range model {
			c[k] = v
		}
		return c
	}
	type reader struct {
		tr   kv.Transaction
		want map[string]string
	}
	var readers []reader
	defer func() {
		for _, r := range readers {
			r.tr.Cancel()
		}
	}()
	check := func(r reader) {
		var want []kv.KeyValue
		for k, v := range r.want {
			want = append(want, kv.KeyValue{Key: []byte(k), Value: []byte(v)})
		}
		slices.SortFunc(want, func(a, b kv.KeyValue) int { return slices.Compare(a.Key, b.Key) })
		// Every key by Get.
		for i := range keys {
			v, err := r.tr.Get(key(i))
			require.NoError(t, err)
			w, ok := r.want[string(key(i))]
			if !ok {
				require.Nil(t, v, "key %s", key(i))
			} else {
				require.Equal(t, w, string(v), "key %s", key(i))
			}
		}
		// Range reads of random bounds, forward and reverse, some limited.
		for range 4 {
			lo, hi := rng.IntN(keys+1), rng.IntN(keys+1)
			if lo > hi {
				lo, hi = hi, lo
			}
			rg := kv.Range{Begin: key(lo), End: key(hi)}
			var in []kv.KeyValue
			for _, e := range want {
				if string(e.Key) >= string(rg.Begin) && string(e.Key) < string(rg.End) {
					in = append(in, e)
				}
			}
			for _, reverse := range []bool{false, true} {
				exp := slices.Clone(in)
				if reverse {
					slices.Reverse(exp)
				}
				limit := 0
				if rng.IntN(2) == 0 {
					limit = 1 + rng.IntN(12)
					exp = exp[:min(limit, len(exp))]
				}
				got, err := kv.Collect(r.tr.GetRange(rg, kv.RangeOptions{Reverse: reverse, Limit: limit}))
				require.NoError(t, err)
				require.Equal(t, len(exp), len(got), "range %s..%s reverse %v limit %d", rg.Begin, rg.End, reverse, limit)
				for i := range exp {
					require.Equal(t, string(exp[i].Key), string(got[i].Key))
					require.Equal(t, string(exp[i].Value), string(got[i].Value))
				}
				first, ok, err := kv.First(r.tr, rg, reverse)
				require.NoError(t, err)
				require.Equal(t, len(exp) > 0, ok)
				if ok {
					require.Equal(t, string(exp[0].Key), string(first.Key))
				}
			}
		}
	}
	for step := range 300 {
		// A commit: sets, clears and range clears, in random order,
		// applied to the model as well.
		type op struct{ kind, i, j int }
		var ops []op
		for range 1 + rng.IntN(6) {
			i := rng.IntN(keys)
			ops = append(ops, op{rng.IntN(6), i, min(keys, i+1+rng.IntN(6))})
		}
		require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
			for _, o := range ops {
				switch o.kind {
				case 0, 1:
					tr.Set(key(o.i), []byte(fmt.Sprintf("v%d.%d", step, o.i)))
				case 2, 3:
					tr.Clear(key(o.i))
				case 4:
					tr.ClearRange(kv.Range{Begin: key(o.i), End: key(o.j)})
				default:
					tr.Add(key(o.i), 1)
				}
			}
			return nil
		}))
		for _, o := range ops {
			switch o.kind {
			case 0, 1:
				model[string(key(o.i))] = fmt.Sprintf("v%d.%d", step, o.i)
			case 2, 3:
				delete(model, string(key(o.i)))
			case 4:
				for i := o.i; i < o.j; i++ {
					delete(model, string(key(i)))
				}
			default: // FoundationDB's ADD: little-endian, as long as the parameter
				v := []byte(model[string(key(o.i))])
				sum, carry := make([]byte, 8), 1
				for b := range sum {
					if b < len(v) {
						carry += int(v[b])
					}
					sum[b], carry = byte(carry), carry>>8
				}
				model[string(key(o.i))] = string(sum)
			}
		}
		// A reader at the newest version.
		fresh, err := db.CreateTransaction(ctx)
		require.NoError(t, err)
		check(reader{tr: fresh, want: snapshot()})
		fresh.Cancel()
		// Readers come and go; each is checked against its version.
		if rng.IntN(3) == 0 || len(readers) == 0 {
			tr, err := db.CreateTransaction(ctx)
			require.NoError(t, err)
			_, err = tr.GetReadVersion()
			require.NoError(t, err)
			readers = append(readers, reader{tr: tr, want: snapshot()})
		}
		if len(readers) > 4 || rng.IntN(6) == 0 {
			i := rng.IntN(len(readers))
			readers[i].tr.Cancel()
			readers = slices.Delete(readers, i, i+1)
		}
		for _, r := range readers {
			check(r)
		}
	}
}

// TestRangeClearAsTombstone: a range clear of many keys is a tombstone:
// the clear's watches fire, an older reader still sees the keys, a newer
// one does not, an atomic add starts from nothing, and later commits take
// the keys out of the tree, then forget the tombstone.
func TestRangeClearAsTombstone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	embedded.SetTombMinKeys(db, 8)
	key := func(i int) []byte { return []byte(fmt.Sprintf("t%03d", i)) }
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		for i := range 100 {
			tr.Set(key(i), []byte("v"))
		}
		return nil
	}))
	old, err := db.CreateTransaction(ctx)
	require.NoError(t, err)
	defer old.Cancel()
	_, err = old.GetReadVersion()
	require.NoError(t, err)
	var w kv.Watch
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		w = tr.Watch(key(50))
		return nil
	}))
	defer w.Cancel()
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		tr.ClearRange(kv.Range{Begin: key(10), End: key(90)})
		return nil
	}))
	require.Equal(t, 1, embedded.Tombs(db))
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second) // a watch that does not fire fails, not hangs
	defer cancel()
	require.NoError(t, w.Wait(wctx), "the clear fires the watches of its keys")

	count := func(tr kv.ReadTransaction) int {
		kvs, err := kv.Collect(tr.GetRange(kv.PrefixRange([]byte("t")), kv.RangeOptions{}))
		require.NoError(t, err)
		return len(kvs)
	}
	require.Equal(t, 100, count(old), "a reader older than the clear sees every key")
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		require.Equal(t, 20, count(tr))
		v, err := tr.Get(key(50))
		require.NoError(t, err)
		require.Nil(t, v)
		tr.Add(key(60), 5) // from nothing, not from the cleared "v"
		return nil
	}))
	require.Equal(t, 1, embedded.Tombs(db), "kept while an older reader lives")
	old.Cancel()
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		tr.Set([]byte("other"), []byte("x")) // a commit: the collector runs
		return nil
	}))
	// The collector runs on its own goroutine.
	require.Eventually(t, func() bool { return embedded.Tombs(db) == 0 }, 10*time.Second, time.Millisecond)
	require.Equal(t, 22, db.Stats().LiveKeys, "20 left, t060 added to, and other")
	require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		v, err := tr.Get(key(60))
		require.Equal(t, []byte{5, 0, 0, 0, 0, 0, 0, 0}, v)
		require.Equal(t, 21, count(tr))
		return err
	}))
}

// TestRangeClearAsTombstoneDurable: a tombstone's clear survives reopening
// a file database (its log replays it), and a checkpoint taken while its
// keys are still in the tree leaves them out.
func TestRangeClearAsTombstoneDurable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	key := func(i int) []byte { return []byte(fmt.Sprintf("t%05d", i)) }
	count := func(db *embedded.DB) int {
		var n int
		require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
			kvs, err := kv.Collect(tr.GetRange(kv.PrefixRange([]byte("t")), kv.RangeOptions{}))
			n = len(kvs)
			return err
		}))
		return n
	}
	for _, checkpoint := range []bool{false, true} {
		// Past the default threshold, so that the replay makes a
		// tombstone too.
		db, err := embedded.OpenFile(dir, embedded.FileConfig{})
		require.NoError(t, err)
		require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
			for i := range 6000 {
				tr.Set(key(i), []byte("v"))
			}
			return nil
		}))
		old, err := db.CreateTransaction(ctx) // keeps the tombstone's keys in the tree
		require.NoError(t, err)
		_, err = old.GetReadVersion()
		require.NoError(t, err)
		require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
			tr.ClearRange(kv.Range{Begin: key(10), End: key(5990)})
			return nil
		}))
		require.Equal(t, 1, embedded.Tombs(db))
		if checkpoint {
			require.NoError(t, db.Checkpoint())
		}
		old.Cancel()
		require.Equal(t, 20, count(db))
		require.NoError(t, db.Close())

		db, err = embedded.OpenFile(dir, embedded.FileConfig{})
		require.NoError(t, err)
		require.Equal(t, 20, count(db), "checkpoint %v", checkpoint)
		require.Zero(t, embedded.Tombs(db), "recovery collects every tombstone")
		require.Equal(t, 20, db.Stats().LiveKeys)
		require.NoError(t, db.Close())
	}
}
