package embedded

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// TestRecoveryCollectsOverlappingTombs: recovery replays a log in which
// two overlapping range clears made tombstones (past the default
// threshold), with keys under them set, cleared and added to between and
// after; it prunes versions as it replays but collects the tombstones
// only at its end. The reopened database reads what the first one read,
// and holds nothing else: no tombstone, no older version, no deletion.
// With an old reader alive until Close, the first run keeps every
// tombstone's keys in its tree too, as recovery does.
func TestRecoveryCollectsOverlappingTombs(t *testing.T) {
	t.Parallel()
	for _, hold := range []bool{false, true} {
		t.Run(fmt.Sprintf("hold=%v", hold), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir := t.TempDir()
			key := func(i int) []byte { return fmt.Appendf(nil, "t%05d", i) }
			one := binary.LittleEndian.AppendUint64(nil, 1)
			model := map[string]string{}
			db, err := OpenFile(dir, FileConfig{})
			require.NoError(t, err)
			commit := func(fn func(tr kv.Transaction)) {
				require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
					fn(tr)
					return nil
				}))
			}
			clearRange := func(tr kv.Transaction, lo, hi int) {
				tr.ClearRange(kv.Range{Begin: key(lo), End: key(hi)})
				for i := lo; i < hi; i++ {
					delete(model, string(key(i)))
				}
			}
			set := func(tr kv.Transaction, i int, v string) {
				tr.Set(key(i), []byte(v))
				model[string(key(i))] = v
			}
			clear := func(tr kv.Transaction, i int) {
				tr.Clear(key(i))
				delete(model, string(key(i)))
			}
			add := func(tr kv.Transaction, i int) {
				tr.Add(key(i), 1)
				v, ok := model[string(key(i))]
				out, _ := (&write{base: baseDB, ops: []atomicOp{{kind: opAdd, param: one}}}).resolve([]byte(v), ok)
				model[string(key(i))] = string(out)
			}
			commit(func(tr kv.Transaction) {
				for i := range 6000 {
					set(tr, i, "v0")
				}
			})
			if hold {
				old := readerNow(t, db)
				defer old.Cancel()
			}
			commit(func(tr kv.Transaction) { clearRange(tr, 10, 5990) }) // tombstone A
			commit(func(tr kv.Transaction) {
				set(tr, 100, "v2")
				clear(tr, 200)
				add(tr, 300)
				set(tr, 5000, "v2")
			})
			commit(func(tr kv.Transaction) { add(tr, 300); clear(tr, 100) })
			commit(func(tr kv.Transaction) { set(tr, 100, "v4"); set(tr, 200, "v4") })
			commit(func(tr kv.Transaction) { clearRange(tr, 5, 5995) }) // tombstone B, over A
			commit(func(tr kv.Transaction) {
				add(tr, 60)
				set(tr, 200, "v6")
				set(tr, 5001, "v6")
			})
			commit(func(tr kv.Transaction) { clear(tr, 200) })
			if hold {
				require.Equal(t, 2, Tombs(db))
			}
			requireHolds(t, db, nil, model, "before reopening")
			require.NoError(t, db.Close())

			db, err = OpenFile(dir, FileConfig{})
			require.NoError(t, err)
			defer func() { require.NoError(t, db.Close()) }()
			requireHolds(t, db, nil, model, "after reopening")
			require.Zero(t, Tombs(db), "recovery collects every tombstone")
			s := db.s
			s.mu.Lock()
			defer s.mu.Unlock()
			s.collectQueuedLocked(time.Now())
			require.Zero(t, len(s.older), "versions older than the newest left")
			require.Zero(t, s.dead.Len(), "deletions left")
			require.Equal(t, len(model), s.tree.Len(), "keys left in the tree")
		})
	}
}
