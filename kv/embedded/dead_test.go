package embedded_test

import (
	"context"
	"fmt"
	"maps"
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
	eachModelRun(t, 8, readsAtOldVersions)
}

// eachModelRun runs run in parallel subtests, for seeds seeds, without
// tombstones and with.
func eachModelRun(t *testing.T, seeds uint64, run func(t *testing.T, seed uint64, tombs bool)) {
	for _, tombs := range []bool{false, true} {
		for seed := range seeds {
			t.Run(fmt.Sprintf("tombstones=%v/%d", tombs, seed), func(t *testing.T) {
				t.Parallel()
				run(t, seed, tombs)
			})
		}
	}
}

// modelKey is the model tests' key i.
func modelKey(i int) []byte { return []byte(fmt.Sprintf("k%04d", i)) }

// modelOp is one write of a model test's commit: a set, a clear, a clear
// of the keys [i, j) or an add of 1, by kind.
type modelOp struct{ kind, i, j int }

// randomOps returns n random writes to keys keys.
func randomOps(rng *rand.Rand, n, keys int) []modelOp {
	ops := make([]modelOp, n)
	for k := range ops {
		i := rng.IntN(keys)
		ops[k] = modelOp{rng.IntN(6), i, min(keys, i+1+rng.IntN(6))}
	}
	return ops
}

// applyOps writes ops into tr, as commit step.
func applyOps(tr kv.Transaction, ops []modelOp, step int) {
	for _, o := range ops {
		switch o.kind {
		case 0, 1:
			tr.Set(modelKey(o.i), []byte(fmt.Sprintf("v%d.%d", step, o.i)))
		case 2, 3:
			tr.Clear(modelKey(o.i))
		case 4:
			tr.ClearRange(kv.Range{Begin: modelKey(o.i), End: modelKey(o.j)})
		default:
			tr.Add(modelKey(o.i), 1)
		}
	}
}

// modelApply applies ops, commit step, to model.
func modelApply(model map[string]string, ops []modelOp, step int) {
	for _, o := range ops {
		k := string(modelKey(o.i))
		switch o.kind {
		case 0, 1:
			model[k] = fmt.Sprintf("v%d.%d", step, o.i)
		case 2, 3:
			delete(model, k)
		case 4:
			for i := o.i; i < o.j; i++ {
				delete(model, string(modelKey(i)))
			}
		default: // FoundationDB's ADD: little-endian, as long as the parameter
			v := []byte(model[k])
			sum, carry := make([]byte, 8), 1
			for b := range sum {
				if b < len(v) {
					carry += int(v[b])
				}
				sum[b], carry = byte(carry), carry>>8
			}
			model[k] = string(sum)
		}
	}
}

// checkModel checks what tr reads of the keys keys against want: every
// key by Get and by GetMany, and random ranges forward and reverse, some
// with limits of up to maxLimit, by range reads and First.
func checkModel(t *testing.T, rng *rand.Rand, tr kv.ReadTransaction, want map[string]string, keys, maxLimit int) {
	all := make([][]byte, keys)
	for i := range keys {
		all[i] = modelKey(i)
		v, err := tr.Get(all[i])
		require.NoError(t, err)
		w, ok := want[string(all[i])]
		require.Equal(t, ok, v != nil, "key %s", all[i])
		require.Equal(t, w, string(v), "key %s", all[i])
	}
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	vals, err := kv.GetMany(tr, all)
	require.NoError(t, err)
	for i, k := range all {
		require.Equal(t, want[string(k)], string(vals[i]), "key %s by GetMany", k)
	}
	var sorted []kv.KeyValue
	for k, v := range want {
		sorted = append(sorted, kv.KeyValue{Key: []byte(k), Value: []byte(v)})
	}
	slices.SortFunc(sorted, func(a, b kv.KeyValue) int { return slices.Compare(a.Key, b.Key) })
	for range 4 {
		lo, hi := rng.IntN(keys+1), rng.IntN(keys+1)
		if lo > hi {
			lo, hi = hi, lo
		}
		rg := kv.Range{Begin: modelKey(lo), End: modelKey(hi)}
		var in []kv.KeyValue
		for _, e := range sorted {
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
				limit = 1 + rng.IntN(maxLimit)
				exp = exp[:min(limit, len(exp))]
			}
			got, err := kv.Collect(tr.GetRange(rg, kv.RangeOptions{Reverse: reverse, Limit: limit}))
			require.NoError(t, err)
			require.Equal(t, len(exp), len(got), "range %s..%s reverse %v limit %d", rg.Begin, rg.End, reverse, limit)
			for i := range exp {
				require.Equal(t, string(exp[i].Key), string(got[i].Key))
				require.Equal(t, string(exp[i].Value), string(got[i].Value))
			}
			first, ok, err := kv.First(tr, rg, reverse)
			require.NoError(t, err)
			require.Equal(t, len(exp) > 0, ok)
			if ok {
				require.Equal(t, string(exp[0].Key), string(first.Key))
			}
		}
	}
}

// oldReaders are transactions kept open at older versions, each with the
// model as of its version.
type oldReaders []oldReader

type oldReader struct {
	tr   kv.Transaction
	want map[string]string
}

// churn adds a reader at the current version, model, now and then (or if
// there is none), and cancels one now and then, or when there are more
// than most.
func (rs *oldReaders) churn(t *testing.T, rng *rand.Rand, db *embedded.DB, model map[string]string, most int) {
	if rng.IntN(3) == 0 || len(*rs) == 0 {
		tr, err := db.CreateTransaction(context.Background())
		require.NoError(t, err)
		_, err = tr.GetReadVersion()
		require.NoError(t, err)
		*rs = append(*rs, oldReader{tr: tr, want: maps.Clone(model)})
	}
	if len(*rs) > most || rng.IntN(6) == 0 {
		i := rng.IntN(len(*rs))
		(*rs)[i].tr.Cancel()
		*rs = slices.Delete(*rs, i, i+1)
	}
}

// check checks each reader against its model (checkModel).
func (rs oldReaders) check(t *testing.T, rng *rand.Rand, keys, maxLimit int) {
	for _, r := range rs {
		checkModel(t, rng, r.tr, r.want, keys, maxLimit)
	}
}

func (rs oldReaders) cancel() {
	for _, r := range rs {
		r.tr.Cancel()
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
	model := map[string]string{}
	var readers oldReaders
	defer func() { readers.cancel() }()
	for step := range 300 {
		ops := randomOps(rng, 1+rng.IntN(6), keys)
		require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
			applyOps(tr, ops, step)
			return nil
		}))
		modelApply(model, ops, step)
		// A reader at the newest version.
		fresh, err := db.CreateTransaction(ctx)
		require.NoError(t, err)
		checkModel(t, rng, fresh, model, keys, 12)
		fresh.Cancel()
		readers.churn(t, rng, db, model, 4)
		readers.check(t, rng, keys, 12)
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
