package embedded

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCollectQueuedPopsEmptyCommits: a commit whose range clear became a
// tombstone wrote no record, and its entry in the collector's queue is
// empty. collectQueuedLocked, given one unit of budget per record queued,
// spent it all on the records before it and left that commit queued
// (Stats.PendingGC stayed 1 with nothing to collect, and requireCollected
// failed after such a commit).
func TestCollectQueuedPopsEmptyCommits(t *testing.T) {
	t.Parallel()
	db, key := tombsDB(t, 4)
	clearRange(t, db, key(0), key(4))
	s := db.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.collectQueuedLocked(time.Now())
	require.Equal(t, len(s.gcq), s.gcHead, "the collector's queue not drained")
}
