package embedded

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// TestRunTailsKeepTheTreeExact: a queue's index pattern, where the
// tree's leaves split at a run's tail (splitTail) and keep fewer than
// half their items: keys P(cell, priority, seq, id) appended a few at a
// time at the tails of many (cell, priority) runs, popped at the runs'
// heads (clears of a run's first keys, one by one and by range), some
// overwritten or deleted inside, with older readers and compactions
// (copies of the tree) along: every reader reads its version, and once
// the readers are gone the collector leaves the tree exact.
func TestRunTailsKeepTheTreeExact(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			runTailsKeepTheTreeExact(t, seed)
		})
	}
}

func runTailsKeepTheTreeExact(t *testing.T, seed uint64) {
	ctx := context.Background()
	db := Open("", stoppedClock())
	defer func() { require.NoError(t, db.Close()) }()
	db.s.sweep.slack = 64 << 10 // compact often
	r := rand.New(rand.NewPCG(seed, 41))
	const cells, prios = 40, 3
	key := func(run, seq int) string {
		return string(tuple.Tuple{3, run / prios, run % prios, seq, seq*7 + run}.Pack())
	}
	heads := make([]int, cells*prios) // per run: its first live seq
	tails := make([]int, cells*prios) // per run: the seq of its next key
	model := map[string]string{}
	var old kv.Transaction
	var oldModel map[string]string
	defer func() {
		if old != nil {
			old.Cancel()
		}
	}()
	swept := false
	for round := range 500 {
		writes := map[string]string{}
		var clears []kv.Range
		// Grow for 300 rounds, then shrink: pops outrun appends.
		grow := round < 300
		for range 1 + r.IntN(60) {
			run := r.IntN(len(tails))
			switch c := r.IntN(10); {
			case c < 6 && grow || c < 3: // appends at the run's tail
				for range 1 + r.IntN(3) {
					writes[key(run, tails[run])] = fmt.Sprint(round)
					tails[run]++
				}
			case c < 8: // pops at the run's head
				for range 1 + r.IntN(3) {
					if heads[run] < tails[run] {
						if _, ok := writes[key(run, heads[run])]; !ok {
							writes[key(run, heads[run])] = ""
						}
						heads[run]++
					}
				}
			case c < 9: // an overwrite or a delete inside the run
				if heads[run] < tails[run] {
					v := ""
					if r.IntN(2) == 0 {
						v = fmt.Sprint("over", round)
					}
					k := key(run, heads[run]+r.IntN(tails[run]-heads[run]))
					if _, ok := writes[k]; !ok {
						writes[k] = v
					}
				}
			default: // a range clear of the run's head
				n := r.IntN(20)
				if heads[run]+n > tails[run] {
					n = tails[run] - heads[run]
				}
				clears = append(clears, kv.Range{Begin: []byte(key(run, heads[run])), End: []byte(key(run, heads[run]+n))})
				heads[run] += n
			}
		}
		// A clear after a write of the same key in the commit would
		// clear it (commitModeled writes after clearing): drop those.
		for k := range writes {
			for _, c := range clears {
				if k >= string(c.Begin) && k < string(c.End) {
					delete(writes, k)
				}
			}
		}
		swept = commitModeled(t, ctx, db, model, clears, writes) || swept
		if round%60 == 30 {
			if old != nil {
				old.Cancel()
			}
			old, oldModel = readerNow(t, db), maps.Clone(model)
		}
		if round%25 == 24 {
			requireHolds(t, db, nil, model, "round %d", round)
			if old != nil {
				requireHolds(t, db, old, oldModel, "round %d, old reader", round)
			}
		}
	}
	old.Cancel()
	old = nil
	requireHolds(t, db, nil, model)
	requireCollected(t, db)
	require.True(t, swept, "no compaction ran")
}
