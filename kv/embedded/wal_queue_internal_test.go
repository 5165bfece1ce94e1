package embedded

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFileBatchQueuedTwiceKeepsBoth: a batch queued for the log a second
// time before the log answered the first (a transaction's Commit called
// from two goroutines at once: a misuse, which must cost that caller, not
// the database) makes two entries, each written at its own version and
// answered on its own channel. One entry reused for both (kept with the
// batch) wrote the second version twice and never the first, so that
// the log no longer reopened ("jumps from version"); and the two answers
// went to one channel of one slot, which blocked the log's writer for
// good unless the caller took both.
func TestFileBatchQueuedTwiceKeepsBoth(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, err := OpenFile(dir, FileConfig{})
	require.NoError(t, err)
	s := db.s
	b := &batch{writes: []*write{{key: []byte("k"), base: baseSet, val: []byte("v")}}}
	s.mu.Lock()
	s.nextVer++
	v1 := s.nextVer
	c1 := s.log.enqueue(v1, b)
	s.nextVer++
	v2 := s.nextVer
	c2 := s.log.enqueue(v2, b)
	s.mu.Unlock()
	require.NotEqual(t, c1, c2, "each entry answers on its own channel")
	go s.log.lead()
	require.NoError(t, <-c1)
	require.NoError(t, <-c2)
	require.Equal(t, v2, s.version.Load())
	require.NoError(t, db.Close())

	db, err = OpenFile(dir, FileConfig{})
	require.NoError(t, err, "both versions are in the log, in order")
	defer db.Close()
	require.Equal(t, v2, db.Recovery().LastVersion)
}
