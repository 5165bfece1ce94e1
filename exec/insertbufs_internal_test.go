package exec

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// An INSERT whose rows outgrew its first block takes a block more; the
// next INSERT from the same buffers finds a first block with room for
// both, and takes none: fdbqueue bench's 100-row INSERTs took a 6 kB block
// a statement, as the first block's estimate (16 bytes a column) fell
// short of their rows.
//
// It resets its own buffers rather than put them in the pool: a pooled
// object it went on using would be another test's INSERT's at the same
// time (TestInsertBuffersReusedConcurrently saw its rows' ids cleared).
func TestInsertBufsFirstBlockGrowsToWhatTheLastStatementPacked(t *testing.T) {
	t.Parallel()
	b := new(insertBufs)
	first := b.block(8000, 80)
	require.Equal(t, 8000, cap(first))
	second := b.block(6000, 90) // the first is full
	require.Equal(t, 6000, cap(second))
	b.reset()

	again := b.block(8000, 80)
	require.GreaterOrEqual(t, cap(again), 14000, "room for the last statement's rows in the first block")
	b.reset()
	require.Equal(t, cap(again), cap(b.block(8000, 80)), "a statement that fits its first block grows it no more")
	b.reset()

	// A statement past what the pool keeps does not grow the block past it.
	b = new(insertBufs)
	b.block(8000, 80)
	b.block(pooledInsert, 90)
	b.reset()
	require.Equal(t, 8000, cap(b.block(8000, 80)))
}
