package embedded

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// abbrevKey returns a key of the shapes that stress the tree's
// abbreviated keys (internal/btree's abbrev.go): keys that are prefixes of
// one another, a long shared prefix (past the 48 bytes a node's prefix
// holds) then a difference at any offset, 0x00 and 0xff bytes, runs of
// keys under one prefix then one that breaks it. Keys stay below 0xff.
func abbrevKey(r *rand.Rand) string {
	const base = "\x02fdbqueue\x00\x02t\x00\x15\x01\x15\x05\x00\xff\x00\xff\x15\x02\x15\x07\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a"
	b := []byte(base[:1+r.IntN(len(base))])
	if len(b) > 1 && r.IntN(3) > 0 {
		b[1+r.IntN(len(b)-1)] = []byte{0, 1, 0x7f, 0xfe, 0xff}[r.IntN(5)]
	}
	for range r.IntN(10) {
		b = append(b, []byte{0, 0, 1, 0xff, 0xff, 0x15}[r.IntN(6)])
	}
	return string(b)
}

// TestAbbreviatedKeysModel: commits of abbrevKey's keys (sets, clears,
// range clears, ADDs), with compactions often (they copy the tree under
// the fingers) and an older reader, leave the database holding what a
// model holds, at the newest version and at the reader's; a file:
// database holds it again once reopened.
func TestAbbreviatedKeysModel(t *testing.T) {
	t.Parallel()
	for _, file := range []bool{false, true} {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("file=%v/seed=%d", file, seed), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				dir := t.TempDir()
				open := func() *DB {
					if !file {
						return Open("", stoppedClock())
					}
					db, err := OpenFile(dir, FileConfig{Config: stoppedClock()})
					require.NoError(t, err)
					return db
				}
				db := open()
				db.s.sweep.slack = 16 << 10 // compact often
				r := rand.New(rand.NewPCG(seed, 17))
				model := map[string]string{}
				var old kv.Transaction
				var oldModel map[string]string
				swept := false // a compaction ran
				for round := range 250 {
					writes := map[string]string{}
					var clears []kv.Range
					for range 1 + r.IntN(60) {
						k := abbrevKey(r)
						switch r.IntN(8) {
						case 0:
							writes[k] = ""
						case 1: // a run under one prefix, then a key breaking it
							for i := range 40 {
								writes[k+string([]byte{byte(i >> 8), byte(i)})] = fmt.Sprint(round, i)
							}
							writes[k[:len(k)/2+1]+"\xfe"] = "break"
						case 2:
							e := abbrevKey(r)
							if e < k {
								k, e = e, k
							}
							clears = append(clears, kv.Range{Begin: []byte(k), End: []byte(e)})
						default:
							writes[k] = fmt.Sprintf("%d-%0*d", round, r.IntN(40), 0)
						}
					}
					swept = commitModeled(t, ctx, db, model, clears, writes) || swept
					if round%60 == 30 {
						if old != nil {
							old.Cancel()
						}
						var err error
						old, err = db.CreateTransaction(ctx)
						require.NoError(t, err)
						_, err = old.Get([]byte("t"))
						require.NoError(t, err)
						oldModel = maps.Clone(model)
					}
					if round%25 == 24 {
						requireHolds(t, db, nil, model)
						requireAbbrevGets(t, db, r, model)
						if old != nil {
							requireHolds(t, db, old, oldModel)
						}
					}
					if file && round%100 == 99 {
						if old != nil {
							old.Cancel()
							old = nil
						}
						require.NoError(t, db.Close())
						db = open()
						db.s.sweep.slack = 16 << 10
						requireHolds(t, db, nil, model)
					}
				}
				if old != nil {
					old.Cancel()
				}
				require.NoError(t, db.Close())
				require.True(t, swept, "no compaction ran")
			})
		}
	}
}

// requireAbbrevGets checks Gets and one-row reads from random keys.
func requireAbbrevGets(t *testing.T, db *DB, r *rand.Rand, want map[string]string) {
	t.Helper()
	tr, err := db.CreateTransaction(context.Background())
	require.NoError(t, err)
	defer tr.Cancel()
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	for range 200 {
		k := abbrevKey(r)
		v, err := tr.Get([]byte(k))
		require.NoError(t, err)
		if w, ok := want[k]; ok {
			require.Equal(t, w, string(v), "%q", k)
		} else {
			require.Nil(t, v, "%q", k)
		}
		reverse := r.IntN(2) == 0
		rg := kv.Range{Begin: []byte(k), End: []byte{0xff}}
		if reverse {
			rg = kv.Range{Begin: []byte{}, End: []byte(k)}
		}
		got, err := kv.Collect(tr.GetRange(rg, kv.RangeOptions{Reverse: reverse, Limit: 1}))
		require.NoError(t, err)
		var best string
		found := false
		for _, x := range keys {
			if x >= string(rg.Begin) && x < string(rg.End) && (!found || reverse && x > best || !reverse && x < best) {
				best, found = x, true
			}
		}
		if !found {
			require.Empty(t, got, "%q reverse %v", k, reverse)
		} else {
			require.Len(t, got, 1)
			require.Equal(t, best, string(got[0].Key), "%q reverse %v", k, reverse)
		}
	}
}
