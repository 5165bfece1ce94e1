package embedded

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
	"github.com/fdbqueue/fdbqueue/tuple"
)

// TestFingersKeepTheTreeExact: commits of keys at many tails (a queue's
// pattern, where fingers place most keys), mixed with overwrites,
// deletions, range clears, deleted keys written again, an older reader
// and compactions (which copy the tree: the fingers' paths then lead to
// nodes the tree no longer owns), leave the database holding exactly what
// a model of it holds, at the newest version and at the reader's.
func TestFingersKeepTheTreeExact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := Open("", stoppedClock())
	db.s.sweep.slack = 64 << 10 // compact often
	db.s.fing.minTree = 0       // a small tree
	r := rand.New(rand.NewPCG(3, 3))
	key := func(group, seq int) []byte { return tuple.Tuple{"t", group % 7, group, seq}.Pack() }
	value := func(round int) string { return fmt.Sprintf("%0100d", round) }
	model := map[string]string{}
	tails := make([]int, 300)
	var old kv.Transaction
	var oldModel map[string]string
	swept := false // a compaction ran
	for round := range 400 {
		writes := map[string]string{}
		var clears []kv.Range
		for range 1 + r.IntN(150) {
			g := r.IntN(len(tails))
			switch r.IntN(4) {
			case 0: // overwrite a key
				if tails[g] > 0 {
					writes[string(key(g, r.IntN(tails[g])))] = value(round)
				}
			case 1: // delete one
				if tails[g] > 0 {
					writes[string(key(g, r.IntN(tails[g])))] = ""
				}
			default: // append at the tail
				writes[string(key(g, tails[g]))] = value(round)
				tails[g]++
			}
		}
		if r.IntN(20) == 0 {
			g := r.IntN(len(tails))
			b, e := tuple.Tuple{"t", g % 7, g}.Range()
			clears = append(clears, kv.Range{Begin: b, End: e})
		}
		swept = commitModeled(t, ctx, db, model, clears, writes) || swept
		if round%100 == 50 {
			if old != nil {
				old.Cancel()
			}
			old, oldModel = readerNow(t, db), maps.Clone(model)
		}
		if round%50 == 49 {
			requireHolds(t, db, nil, model)
			if old != nil {
				requireHolds(t, db, old, oldModel)
			}
		}
	}
	old.Cancel()
	require.NotZero(t, db.s.fing.hits, "no key was placed by a finger")
	require.True(t, swept, "no compaction ran")
}

// stoppedClock returns a Config whose clock stands still: the model
// tests keep old readers for many commits, and on a loaded machine those
// would turn 5 seconds old (transaction_too_old) before the test checks
// what they read.
func stoppedClock() Config {
	at := time.Now()
	return Config{Clock: func() time.Time { return at }}
}

// readerNow returns a transaction that has taken its read version: a
// reader of the database as it is now, for as long as it lives.
func readerNow(t *testing.T, db *DB) kv.Transaction {
	t.Helper()
	tr, err := db.CreateTransaction(context.Background())
	require.NoError(t, err)
	_, err = tr.Get([]byte("t")) // takes its read version
	require.NoError(t, err)
	return tr
}

// requireHolds checks that tr (a new transaction if nil) reads exactly
// want; msgAndArgs say which reader failed.
func requireHolds(t *testing.T, db *DB, tr kv.Transaction, want map[string]string, msgAndArgs ...any) {
	t.Helper()
	if tr == nil {
		var err error
		tr, err = db.CreateTransaction(context.Background())
		require.NoError(t, err)
		defer tr.Cancel()
	}
	kvs, err := kv.Collect(tr.GetRange(kv.Range{Begin: []byte{}, End: []byte{0xff}}, kv.RangeOptions{}))
	require.NoError(t, err)
	got := map[string]string{}
	for _, e := range kvs {
		got[string(e.Key)] = string(e.Value)
	}
	require.Equal(t, want, got, msgAndArgs...)
	keys := slices.Sorted(maps.Keys(want))
	for _, k := range keys[:min(len(keys), 50)] {
		v, err := tr.Get([]byte(k))
		require.NoError(t, err)
		require.Equal(t, want[k], string(v), msgAndArgs...)
	}
}

// TestFingersPlaceQueueKeys: once a few 100-row INSERTs have gone in, the
// fingers place most of a 100-row INSERT's index entries, each at the
// tail of another (cell, priority), where without them each took a search
// of the tree.
func TestFingersPlaceQueueKeys(t *testing.T) {
	t.Parallel()
	s := newStore("", Config{})
	s.fing.minTree = 0 // 160,000 keys
	prefix := tuple.Tuple{"fdbqueue", "tasks"}.Pack()
	install := func(first int64) { installNext(s, queueBatch(prefix, first)) }
	// 200 of a batch's 400 keys go to other (cell, priority) tails.
	perBatch := countPerBatch(install, 300, 100, &s.fing.hits)
	t.Logf("%.1f keys a batch placed by fingers", perBatch)
	require.Greater(t, perBatch, 100.0)

	// In a tree smaller than fingerMinTree, a search costs little more
	// than a finger: none is used.
	young := newStore("", Config{})
	for i := range int64(100) {
		installNext(young, queueBatch(prefix, 100*i))
	}
	require.Less(t, young.tree.Len(), fingerMinTree)
	require.Zero(t, young.fing.hits)
	require.Empty(t, young.fing.list)
}

// countPerBatch installs warm batches of 100 rows (install takes the
// first row's id), then measured more, and returns how much *counter grew
// a measured batch.
func countPerBatch(install func(first int64), warm, measured int64, counter *int) float64 {
	for i := range warm {
		install(100 * i)
	}
	before := *counter
	for i := range measured {
		install(100 * (warm + i))
	}
	return float64(*counter-before) / float64(measured)
}

// TestFingersOutliveManyCommits: in a long-running queue, 100-row INSERTs
// of `fdbqueue bench`'s random rows put their fit-index entries at the
// tails of ~4,500 (cell, priority) and (shape, priority) runs, each of
// which a batch comes back to every 20 commits or so while the tree grows
// and splits under it: the fingers still place nearly all of them, where
// fingers kept for 4 commits left 80% of them to a search.
func TestFingersOutliveManyCommits(t *testing.T) {
	t.Parallel()
	s := newStore("", Config{})
	rng := rand.New(rand.NewPCG(5, 5))
	install := func(first int64) { installNext(s, randomBatch(rng, nil, first)) }
	perBatch := countPerBatch(install, 1000, 200, &s.fing.searched)
	t.Logf("%.1f keys a batch placed by a search", perBatch)
	require.Less(t, perBatch, 30.0)
}

// commitModeled commits clears, then writes (an empty value clears the
// key), to db and to model alike, and reports whether a compaction is
// running.
func commitModeled(t *testing.T, ctx context.Context, db *DB, model map[string]string, clears []kv.Range, writes map[string]string) bool {
	t.Helper()
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		for _, c := range clears {
			tr.ClearRange(c)
		}
		for k, v := range writes {
			if v == "" {
				tr.Clear([]byte(k))
			} else {
				tr.Set([]byte(k), []byte(v))
			}
		}
		return nil
	}))
	db.s.mu.RLock()
	swept := db.s.sweep.on
	db.s.mu.RUnlock()
	for _, c := range clears {
		for k := range model {
			if k >= string(c.Begin) && k < string(c.End) {
				delete(model, k)
			}
		}
	}
	for k, v := range writes {
		if v == "" {
			delete(model, k)
		} else {
			model[k] = v
		}
	}
	return swept
}

// TestSetRunsInLargeCommits: commits of thousands of adjacent keys (runs
// that span many leaves and are cut into stretches of maxSetRun), some of
// them deleted keys written again, with an older reader, leave the
// database holding what a model holds, at both versions; and the install's
// scratch keeps about one stretch's records, not a commit's.
func TestSetRunsInLargeCommits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := Open("", stoppedClock())
	key := func(i int) string { return string(tuple.Tuple{"t", i}.Pack()) }
	model := map[string]string{}
	var old kv.Transaction
	var oldModel map[string]string
	for round := range 6 {
		writes := map[string]string{}
		for i := range 5000 {
			switch {
			case round%2 == 1 && i%3 == 0: // delete a third
				writes[key(i)] = ""
			case round%2 == 0 || i%3 != 0:
				writes[key(i)] = fmt.Sprintf("v%d.%d", round, i)
			}
		}
		commitModeled(t, ctx, db, model, nil, writes)
		if round == 2 {
			old, oldModel = readerNow(t, db), maps.Clone(model)
		}
		requireHolds(t, db, nil, model)
		if old != nil {
			requireHolds(t, db, old, oldModel)
		}
	}
	old.Cancel()
	db.s.mu.RLock()
	defer db.s.mu.RUnlock()
	require.LessOrEqual(t, cap(db.s.fing.run), 2*maxSetRun) // append rounds up
}
