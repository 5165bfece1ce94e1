package embedded

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// TestCollectQueuedPopsEmptyCommits: a commit whose range clear became a
// tombstone wrote no record, and its entry in the collector's queue is
// empty. collectQueuedLocked, given one unit of budget per record queued,
// spent it all on the records before it and left that commit queued
// (Stats.PendingGC stayed 1 with nothing to collect, and requireCollected
// failed after such a commit).
func TestCollectQueuedPopsEmptyCommits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := Open("", Config{})
	defer func() { require.NoError(t, db.Close()) }()
	SetTombMinKeys(db, 1)
	key := func(i int) []byte { return fmt.Appendf(nil, "k%02d", i) }
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		for i := range 4 {
			tr.Set(key(i), []byte("v"))
		}
		return nil
	}))
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		tr.ClearRange(kv.Range{Begin: key(0), End: key(4)})
		return nil
	}))
	s := db.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.collectQueuedLocked(time.Now())
	require.Equal(t, len(s.gcq), s.gcHead, "the collector's queue not drained")
}
