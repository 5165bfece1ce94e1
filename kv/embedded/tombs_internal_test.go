package embedded

import (
	"context"
	"fmt"
	"testing"

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
	db := Open("", Config{})
	defer func() { require.NoError(t, db.Close()) }()
	SetTombMinKeys(db, 1)
	key := func(i int) []byte { return fmt.Appendf(nil, "k%02d", i) }
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		for i := range 10 {
			tr.Set(key(i), []byte("old"))
		}
		return nil
	}))
	// A reader older than the tombstone: nothing collects it on its own.
	oldest := readerNow(t, db)
	defer oldest.Cancel()
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		tr.ClearRange(kv.Range{Begin: key(0), End: key(10)})
		return nil
	}))
	require.Equal(t, 1, Tombs(db))
	tombVer := db.s.tombs[0].ver
	between := readerNow(t, db) // sees the range cleared
	defer between.Cancel()

	collect := func(budget int) {
		db.s.wlock()
		defer db.s.mu.Unlock()
		db.s.tombsLocked(tombVer, budget) // as if oldest were gone
	}
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
