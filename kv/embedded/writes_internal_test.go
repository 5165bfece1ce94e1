package embedded

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/tuple"
)

// BenchmarkSortPending: sorting the pending writes of a 100-row INSERT's
// shape: 358 keys under one prefix, item keys by (priority, seq), id keys
// by id, cell and shape entries, interleaved a row at a time, packed as
// the queue packs them (the 16 bytes the sort compares first then hold
// the tag and the first values, as they do in a push).
func BenchmarkSortPending(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	prefix := tuple.Tuple{"t", int64(42)}.Pack()
	var keys [][]byte
	for i := range 100 {
		prio, cpu, mem := int64(r.IntN(10)), int64(1+r.IntN(8)), int64(1+r.IntN(32))
		seq, id := int64(1<<20+i), int64(1<<60+i)
		k := func(vs ...int64) []byte {
			t := make(tuple.Tuple, len(vs))
			for j, v := range vs {
				t[j] = v
			}
			return append(append([]byte(nil), prefix...), t.Pack()...)
		}
		// The item, the id index, the fit index by cell and by shape
		// (queues/layout.go).
		keys = append(keys, k(0, prio, seq, id), k(1, id), k(3, cpu, mem, prio, seq, id))
		if mem >= 16 {
			keys = append(keys, k(5, cpu, mem, prio, seq, id))
		}
	}
	db := Open("", Config{})
	defer db.Close()
	t := newTxn(db.s, b.Context())
	for _, k := range keys {
		t.Set(k, nil)
	}
	pending := append([]*write(nil), t.pending...)
	b.ReportAllocs()
	for b.Loop() {
		t.pending = append(t.pending[:0], pending...)
		if ws := t.sortPending(); len(ws) != len(keys) {
			b.Fatal(len(ws))
		}
	}
}

// TestSortPendingOrder: sortPending orders writes as sorting them by key
// does, one a key, each the key's last Set, for lists of every length up
// to 300 of keys that share prefixes, repeat, and differ past the 16
// bytes the sort compares first, or only in trailing zero bytes.
func TestSortPendingOrder(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(2, 2))
	db := Open("", Config{})
	defer db.Close()
	pool := [][]byte{nil, {0}, {0, 0}, {1}, []byte("0123456789abcdefX"), []byte("0123456789abcdefY"), []byte("0123456789abcdef"), {0xff}}
	for n := 1; n <= 300; n++ {
		tr := newTxn(db.s, t.Context())
		last := map[string][]byte{}
		for i := range n {
			k := append([]byte("p/"), pool[r.IntN(len(pool))]...)
			k = append(k, pool[r.IntN(len(pool))]...)
			v := binary.AppendUvarint(nil, uint64(i))
			tr.Set(k, v)
			last[string(k)] = v
		}
		requireSortedLast(t, tr, last, fmt.Sprintf("%d writes", n))
	}
}

// requireSortedLast checks what tr.sortPending returns: one write a key
// of last, in key order, each with the key's last value.
func requireSortedLast(t *testing.T, tr *txn, last map[string][]byte, what string) {
	t.Helper()
	ws := tr.sortPending()
	got := make([]string, len(ws))
	for i, w := range ws {
		got[i] = string(w.key)
		require.Equal(t, last[got[i]], w.val, "%s: %q", what, w.key)
	}
	require.Equal(t, slices.Sorted(maps.Keys(last)), got, what)
}

// TestSortPendingOrderOfMany: sortPending orders long lists as sorting
// them by key does, one write a key, each the key's last Set: keys of
// random bytes and lengths under prefixes of several lengths, alike in
// their first 16 bytes after the common prefix or not, some set twice.
func TestSortPendingOrderOfMany(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 3))
	db := Open("", Config{})
	defer db.Close()
	for _, c := range []struct {
		prefixes []string
		more     int // random bytes after the prefix, at least
	}{
		{[]string{"p/", "p/x\x00", "p/0123456789abcdef", "p/0123456789abcdef0123456789", "p/\xff\xff"}, 0},
		// Keys 8 bytes longer than their common prefix, at least.
		{[]string{"p/0123456789abcdef"}, 8},
		{[]string{"p/0123456789a", "p/0123456789b"}, 8},
	} {
		prefixes := c.prefixes
		for _, n := range []int{25, 100, 404, 3000} {
			tr := newTxn(db.s, t.Context())
			last := map[string][]byte{}
			for i := range n {
				k := []byte(prefixes[r.IntN(len(prefixes))])
				for range c.more + r.IntN(12) {
					k = append(k, "\x00\x01\x02\xfe\xff"[r.IntN(5)])
				}
				if i > 0 && r.IntN(8) == 0 { // a key set again
					for s := range last {
						k = []byte(s)
						break
					}
				}
				v := binary.AppendUvarint(nil, uint64(i))
				tr.Set(k, v)
				last[string(k)] = v
			}
			requireSortedLast(t, tr, last, fmt.Sprintf("%q, %d writes", prefixes, n))
		}
	}
}

// TestFoldedOpsResolveAsApplied: a transaction's atomic operations on one
// key, ADDs and BIT_ANDs folded where two of one kind and length follow
// each other (foldOp), resolve to what applying them one at a time in
// order gives, from a value or from nothing, with COMPARE_AND_CLEARs
// between them.
func TestFoldedOpsResolveAsApplied(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	bytesOf := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			// Few distinct bytes, so that COMPARE_AND_CLEAR sometimes matches.
			b[i] = []byte{0x00, 0x01, 0xff}[r.IntN(3)]
		}
		return b
	}
	folded := 0
	for range 5000 {
		var ops []atomicOp
		for range 1 + r.IntN(6) {
			kind := opKind(r.IntN(int(opBitAnd) + 1))
			n := 1 + r.IntN(2)
			if kind == opCompareAndClear {
				n = r.IntN(3)
			}
			ops = append(ops, atomicOp{kind: kind, param: bytesOf(n)})
		}
		dbVal, dbOK := bytesOf(r.IntN(3)), r.IntN(3) > 0
		var want write
		want.ops = slices.Clone(ops)
		wantVal, wantOK := want.resolve(dbVal, dbOK)

		var got write
		for _, op := range ops {
			op.param = slices.Clone(op.param)
			if foldOp(&got, op.kind, op.param) {
				folded++
				continue
			}
			got.ops = append(got.ops, op)
		}
		gotVal, gotOK := got.resolve(dbVal, dbOK)
		require.Equal(t, wantOK, gotOK, "ops %v on %x (%v)", ops, dbVal, dbOK)
		if wantOK {
			require.Equal(t, wantVal, gotVal, "ops %v on %x (%v)", ops, dbVal, dbOK)
		}
	}
	require.Greater(t, folded, 1000, "the runs fold")
}
