package btree

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"weak"

	"github.com/stretchr/testify/require"
)

type pinItem struct{ k []byte }

func pinKey(it *pinItem) []byte { return it.k }

// pinTree returns a tree of pinItems, keyed or plain.
func pinTree(keyed bool, degree int) *BTreeG[*pinItem] {
	opts := Options{NoLocks: true, Degree: degree}
	if keyed {
		return NewBTreeGKeyed(pinKey, opts)
	}
	return NewBTreeGOptions(func(a, b *pinItem) bool { return string(a.k) < string(b.k) }, opts)
}

// setPin sets a new item of key k in tr and returns a weak pointer to it.
func setPin(tr *BTreeG[*pinItem], k string) weak.Pointer[pinItem] {
	it := &pinItem{k: []byte(k)}
	tr.Set(it)
	return weak.Make(it)
}

// TestDeletedItemsAreNotPinned: an item deleted from the tree is not kept
// reachable by it (the engine's records pin the slabs they lie in). A
// node split in the middle shares its array between its halves; the left
// half, given a new array as it grows, left its items in the old one,
// which the right half kept reachable (reserve, splitTail).
func TestDeletedItemsAreNotPinned(t *testing.T) {
	t.Parallel()
	for _, keyed := range []bool{false, true} {
		tr := pinTree(keyed, 8)
		var ws []weak.Pointer[pinItem]
		for i := range 16 { // the 16th splits the root leaf in the middle
			ws = append(ws, setPin(tr, fmt.Sprintf("k%02d", i)))
		}
		setPin(tr, "k00x") // into the left half: its arrays grow
		tr.Delete(&pinItem{k: []byte("k00")})
		runtime.GC()
		require.Nil(t, ws[0].Value(), "keyed=%v: the deleted item reachable", keyed)
		runtime.KeepAlive(tr)
	}
	// Keys at runs' tails (splitTail's splits), most deleted.
	for _, keyed := range []bool{false, true} {
		for _, degree := range []int{3, 8, 32} {
			r := rand.New(rand.NewPCG(uint64(degree), 5))
			tr := pinTree(keyed, degree)
			g := &tailKeys{r: r, runs: 40, head: make([]uint64, 40), next: make([]uint64, 40)}
			type held struct {
				k string
				w weak.Pointer[pinItem]
			}
			var items []held
			for range 3000 {
				k := g.tail()
				if r.IntN(5) == 0 {
					k = g.inside()
				}
				items = append(items, held{k, setPin(tr, k)})
			}
			live := map[string]bool{}
			for _, h := range items {
				live[h.k] = r.IntN(4) == 0
			}
			for k, keep := range live {
				if !keep {
					tr.Delete(&pinItem{k: []byte(k)})
				}
			}
			runtime.GC()
			gone := 0
			for _, h := range items {
				if h.w.Value() == nil {
					gone++
					continue
				}
				got, ok := tr.Get(&pinItem{k: []byte(h.k)})
				require.True(t, ok && got == h.w.Value(), "keyed=%v degree=%d: item %q reachable, not in the tree", keyed, degree, h.k)
			}
			require.Positive(t, gone)
			runtime.KeepAlive(tr)
		}
	}
}
