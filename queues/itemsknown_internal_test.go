package queues

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// TestWroteItemsKeepsWhatTheTransactionReads: after each kind of write,
// the items read (itemsKnown) is either what a read of its range through
// the transaction would return (a clear of a row it holds drops that row;
// a write past what it knows, or before its range, changes nothing it
// knows), or gone.
func TestWroteItemsKeepsWhatTheTransactionReads(t *testing.T) {
	t.Parallel()
	r := kv.Range{Begin: []byte("i\x00"), End: []byte("i\xff")}
	row := func(s string) kv.KeyValue { return kv.KeyValue{Key: []byte("i\x00" + s), Value: []byte(s)} }
	key := func(s string) []byte { return []byte("i\x00" + s) }
	full := func() *known { // read to its limit: knows up to just past c
		k := newKnown(r, 3, []kv.KeyValue{row("a"), row("b"), row("c")})
		return &k
	}
	whole := func() *known { // read whole
		k := newKnown(r, 3, []kv.KeyValue{row("a"), row("c")})
		return &k
	}
	keys := func(it *known) []string {
		var ks []string
		for _, e := range it.rows {
			ks = append(ks, string(e.Value))
		}
		return ks
	}
	for _, tc := range []struct {
		name  string
		start func() *known
		write func(a *Attempt)
		keeps []string // nil: dropped
	}{
		{"clear a held row", full, func(a *Attempt) { a.wroteItems(key("b"), nil, true) }, []string{"a", "c"}},
		{"clear the last held row", full, func(a *Attempt) { a.wroteItems(key("c"), nil, true) }, []string{"a", "b"}},
		{"clear an absent key inside", whole, func(a *Attempt) { a.wroteItems(key("b"), nil, true) }, []string{"a", "c"}},
		{"clear past what it knows", full, func(a *Attempt) { a.wroteItems(key("d"), nil, true) }, []string{"a", "b", "c"}},
		{"set past what it knows", full, func(a *Attempt) { a.wroteItems(key("c\x00"), nil, false) }, []string{"a", "b", "c"}},
		{"set before its range", full, func(a *Attempt) { a.wroteItems([]byte("h"), nil, false) }, []string{"a", "b", "c"}},
		{"set after its range", whole, func(a *Attempt) { a.wroteItems([]byte("j"), nil, false) }, []string{"a", "c"}},
		{"set a held row", full, func(a *Attempt) { a.wroteItems(key("b"), nil, false) }, nil},
		{"set between held rows", whole, func(a *Attempt) { a.wroteItems(key("b"), nil, false) }, nil},
		{"set at its start", whole, func(a *Attempt) { a.wroteItems(r.Begin, nil, false) }, nil},
		{"set in the whole read's tail", whole, func(a *Attempt) { a.wroteItems(key("z"), nil, false) }, nil},
		{"clear range over a row", whole, func(a *Attempt) { a.wroteItems(key("b"), key("d"), false) }, nil},
		{"clear range ending at its start", whole, func(a *Attempt) { a.wroteItems([]byte("h"), r.Begin, false) }, []string{"a", "c"}},
		{"clear range into its start", whole, func(a *Attempt) { a.wroteItems([]byte("h"), key("a"), false) }, nil},
		{"clear range past what it knows", full, func(a *Attempt) { a.wroteItems(key("c\x00"), r.End, false) }, []string{"a", "b", "c"}},
		{"add to a held row (Add, CompareAndClear)", full, func(a *Attempt) { a.wroteItems(key("a"), nil, false) }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := &Attempt{items: tc.start()}
			tc.write(a)
			if tc.keeps == nil {
				require.Nil(t, a.items)
				return
			}
			require.NotNil(t, a.items)
			require.Equal(t, tc.keeps, keys(a.items))
		})
	}
}
