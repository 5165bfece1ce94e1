package btree

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// fingerCountsTree fills a degree-2 keyed tree in random order and then places
// keys through fingers (TrySetFinger), leaving the counts of the nodes
// above their leaves stale (tr.recount). It returns the tree, its model
// and how many keys fingers placed.
func fingerCountsTree(t *testing.T, seed uint64) (*BTreeG[string], advModel, int) {
	r := rand.New(rand.NewPCG(seed, 7))
	tr := NewBTreeGKeyed(strKey, Options{NoLocks: true, Degree: 2})
	m := advModel{}
	for _, i := range r.Perm(400) {
		k := fmt.Sprintf("k%04d", 2*i)
		tr.Set(k)
		m.add(k)
	}
	hits := 0
	for range 400 {
		i := r.IntN(398)
		base := fmt.Sprintf("k%04d", 2*i)
		if !m.has(base) {
			continue
		}
		var h PathHint
		_, ok := tr.GetHint(base, &h)
		require.True(t, ok)
		f := tr.FingerOf(&h)
		k := fmt.Sprintf("k%04d", 2*i+1)
		if m.has(k) {
			continue
		}
		if tr.TrySetFinger(k, &f) {
			m.add(k)
			hits++
		}
	}
	require.True(t, tr.recount)
	return tr, m, hits
}

// TestDeleteRangeAfterFingerKeepsLen: DeleteRange drops whole
// subtrees and subtracts their node's count (dnode.count + 1) from
// tr.count; after TrySetFinger those counts are stale until counted
// again, which DeleteRange does first (a review found tr.count, and Len,
// left wrong when it did not).
func TestDeleteRangeAfterFingerKeepsLen(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 5; seed++ {
		tr, m, hits := fingerCountsTree(t, seed)
		require.Greater(t, hits, 0)
		lo, hi := m[5], m[len(m)-5]
		tr.DeleteRange(lo, hi, nil)
		i, _ := slicesIndex(m, lo)
		j, _ := slicesIndex(m, hi)
		m = append(m[:i:i], m[j:]...)
		require.Equal(t, []string(m), tr.Items(), "seed %d", seed)
		require.Equal(t, len(m), tr.Len(), "seed %d: Len after DeleteRange (%d finger hits)", seed, hits)
	}
}

// TestDeleteRangeListLenAfterFinger: the List DeleteRange returns
// counts a dropped subtree by its node's count, counted again after
// TrySetFinger.
func TestDeleteRangeListLenAfterFinger(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 5; seed++ {
		tr, m, _ := fingerCountsTree(t, seed)
		lo, hi := m[5], m[len(m)-5]
		del := tr.DeleteRange(lo, hi, nil)
		n := 0
		del.Scan(func(string) bool { n++; return true })
		require.Equal(t, n, del.Len(), "seed %d: deleted List's Len vs its items", seed)
	}
}

// TestGetAtPastEndAfterFingerAndDeleteRange: had DeleteRange left
// tr.count above the tree's true size, GetAt would accept an index past
// the last item and index a leaf out of range (panic).
func TestGetAtPastEndAfterFingerAndDeleteRange(t *testing.T) {
	t.Parallel()
	tr, m, _ := fingerCountsTree(t, 1)
	lo, hi := m[5], m[len(m)-5]
	tr.DeleteRange(lo, hi, nil)
	i, _ := slicesIndex(m, lo)
	j, _ := slicesIndex(m, hi)
	m = append(m[:i:i], m[j:]...)
	require.NotPanics(t, func() {
		_, ok := tr.GetAt(tr.Len() - 1)
		require.Equal(t, tr.Len()-1 < len(m), ok)
	})
}

func slicesIndex(m advModel, k string) (int, bool) {
	for i, x := range m {
		if x == k {
			return i, true
		}
	}
	return len(m), false
}

// TestEmptiedTreeAfterFingerAndDeleteRange: had DeleteRange left
// tr.count above the tree's true size, deleting every item left would
// leave tr.count > 0, deleteHint an empty root leaf, and Min would index
// it.
func TestEmptiedTreeAfterFingerAndDeleteRange(t *testing.T) {
	t.Parallel()
	tr, m, _ := fingerCountsTree(t, 1)
	lo, hi := m[5], m[len(m)-5]
	tr.DeleteRange(lo, hi, nil)
	for _, k := range tr.Items() {
		_, ok := tr.Delete(k)
		require.True(t, ok)
	}
	require.Empty(t, tr.Items())
	require.NotPanics(t, func() {
		_, ok := tr.Min()
		require.False(t, ok)
	})
	require.Zero(t, tr.Len())
}
