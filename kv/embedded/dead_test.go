package embedded_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

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
func TestReadsAtOldVersionsModel(t *testing.T) {
	t.Parallel()
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			readsAtOldVersions(t, seed)
		})
	}
}

func readsAtOldVersions(t *testing.T, seed uint64) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 7))
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
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
			ops = append(ops, op{rng.IntN(5), i, min(keys, i+1+rng.IntN(6))})
		}
		require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
			for _, o := range ops {
				switch o.kind {
				case 0, 1:
					tr.Set(key(o.i), []byte(fmt.Sprintf("v%d.%d", step, o.i)))
				case 2, 3:
					tr.Clear(key(o.i))
				default:
					tr.ClearRange(kv.Range{Begin: key(o.i), End: key(o.j)})
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
			default:
				for i := o.i; i < o.j; i++ {
					delete(model, string(key(i)))
				}
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
