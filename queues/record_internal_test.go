package queues

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// legacyRecord encodes it as records were written before the value went
// raw after the integers: the resources, the value as a packed byte
// string, then the integers of encodeValue's forms.
func legacyRecord(it Item) []byte {
	t := tuple.Tuple{}
	for _, r := range it.Resources {
		t = append(t, r)
	}
	t = append(t, it.Value)
	vis := nanos(it.VisibleAt)
	meta := vis != 0 || it.Lease != 0 || it.Attempts != 0
	held := int64(0)
	if it.Held {
		held = 1
	}
	switch {
	case it.PushedAt.IsZero():
		if meta {
			t = append(t, vis, it.Lease, it.Attempts)
		}
	case meta || it.Held:
		t = append(t, vis, it.Lease, it.Attempts, pushedSeconds(it.PushedAt), held)
	default:
		t = append(t, pushedSeconds(it.PushedAt))
	}
	return t.Pack()
}

// TestItemRecordsOfBothFormats: an item's record decodes to the item
// encoded, in the format written now (integers, then the value as it
// is) and in the one written before (the value packed, then the
// integers), in every form (with and without pushed_at; visible, leased,
// held), with values of every zero density, empty, and of bytes that
// look like the format's own (0xfe, tuple codes). The value of a zero
// byte takes one byte of the record, where it took two. A record that is
// neither, cut short, or has a wrong count of integers, is ErrCorrupt,
// never a panic or a wrong item.
func TestItemRecordsOfBothFormats(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	for _, kind := range []Kind{FIFO, Priority} {
		for _, nres := range []int{0, 2} {
			names := []string{"cpu", "mem"}[:nres]
			q := New(tuple.Tuple{"rec", int64(kind), int64(nres)}.Pack(), kind, names...)
			for n := range 400 {
				v := make([]byte, r.IntN(90))
				for i := range v {
					switch c := r.IntN(10); {
					case c < n%11:
						v[i] = 0
					case c == 9:
						v[i] = []byte{0xfe, 0xff, 0x01, 0x14}[r.IntN(4)]
					default:
						v[i] = byte(r.IntN(256))
					}
				}
				if n%50 == 0 {
					v = []byte{}
				}
				it := Item{ID: int64(1 + n), Priority: int64(r.IntN(10)), Seq: int64(1 + n), Value: v}
				if kind == FIFO {
					it.Priority = 0
				}
				for range nres {
					it.Resources = append(it.Resources, r.Int64N(1<<40)-1<<20)
				}
				switch n % 4 {
				case 1:
					it.PushedAt = time.Unix(1_800_000_000+int64(n), 0)
				case 2:
					it.PushedAt = time.Unix(1_800_000_000+int64(n), 0)
					it.VisibleAt, it.Lease, it.Attempts, it.Held = time.Unix(0, 1_800_000_000_123_456_789+int64(n)), r.Int64(), int64(n%7), n%8 == 2
				case 3:
					it.VisibleAt, it.Lease, it.Attempts = time.Unix(0, 1_700_000_000_000_000_000+int64(n)), r.Int64(), 1
				}
				tag := tagItems
				if !it.VisibleAt.IsZero() {
					tag = tagHidden
				}
				key := q.itemKey(pos{prio: it.Priority, seq: it.Seq, id: it.ID, due: nanos(it.VisibleAt)})
				for _, rec := range [][]byte{encodeValue(it), legacyRecord(it)} {
					got, p, err := q.decodeItemUnder(tag, key, rec)
					require.NoError(t, err, "%x", rec)
					require.Equal(t, it.ID, p.id)
					require.Equal(t, it.Value, got.Value, "%x", rec)
					require.NotNil(t, got.Value)
					require.Equal(t, it.Resources, got.Resources)
					require.True(t, it.VisibleAt.Equal(got.VisibleAt), "%v %v", it.VisibleAt, got.VisibleAt)
					require.True(t, it.PushedAt.Equal(got.PushedAt))
					require.Equal(t, []any{it.Lease, it.Attempts, it.Held}, []any{got.Lease, got.Attempts, got.Held})
					if len(rec) > 0 && len(v) > 0 {
						// The item's value is a copy: the record's
						// bytes are the engine's.
						saved := bytes.Clone(rec)
						got.Value[0] ^= 1
						require.Equal(t, saved, rec)
					}
				}
				require.Len(t, encodeValue(it), len(legacyRecord(it))-bytes.Count(v, []byte{0})-1,
					"a zero byte of the value takes one byte of the record")
				require.LessOrEqual(t, len(encodeValue(it)), MaxRecordSize(v, nres))
			}
		}
	}
}

// TestMalformedItemRecords: records that are cut short, hold integers
// of a count no form has, or bytes no format starts with, are ErrCorrupt.
func TestMalformedItemRecords(t *testing.T) {
	t.Parallel()
	q := New(tuple.Tuple{"bad"}.Pack(), Priority, "cpu")
	key := q.itemKey(pos{prio: 1, seq: 1, id: 1})
	ints := func(vs ...int64) []byte {
		var b []byte
		for _, v := range vs {
			b = tuple.AppendInt(b, v)
		}
		return b
	}
	good := append(ints(3, 1_800_000_000), 0xfe, 'v')
	_, _, err := q.decodeItemUnder(tagItems, key, good)
	require.NoError(t, err)
	for i, rec := range [][]byte{
		nil,
		{0xfe},                           // no resource
		ints(3),                          // no value
		append(ints(3, 1, 2), 0xfe),      // two integers: no form
		append(ints(3, 1, 2, 3, 4), 'v'), // no 0xfe
		append(ints(3, 1, 2, 3, 4, 5, 6), 0xfe, 'v'), // six integers
		append(ints(3), 0x02, 'v', 0),                // a string where the value goes
		append(ints(3), 0x01, 'v'),                   // a byte string not terminated
		append(append(ints(3), tuple.AppendBytes(nil, []byte("v"))...), 0x02, 0),
		append(append(ints(3), tuple.AppendBytes(nil, []byte("v"))...), ints(1, 2)...),
		append(ints(3), 0x00, 0xfe, 'v'),
	} {
		_, _, err := q.decodeItemUnder(tagItems, key, rec)
		require.ErrorIs(t, err, ErrCorrupt, fmt.Sprintf("record %d: %x", i, rec))
	}
	// Every cut of a good record of each format is ErrCorrupt or, where
	// the cut leaves a shorter value, that value; never a panic.
	for _, rec := range [][]byte{good, append(ints(3), append(tuple.AppendBytes(nil, []byte("v\x00w")), ints(1_800_000_000)...)...)} {
		for n := range len(rec) {
			if _, _, err := q.decodeItemUnder(tagItems, key, rec[:n]); err != nil {
				require.ErrorIs(t, err, ErrCorrupt)
			}
		}
	}
}

// TestReceiptsOfBothForms: a pop's receipt gives back the items it
// recorded, their values as they were (empty, zero-heavy, starting with
// 0xfe), in the form written now (the value's bytes after the packed
// fields) and in the one written before (every field packed, the value
// fourth), with and without the lease fields.
func TestReceiptsOfBothForms(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	q := New(tuple.Tuple{"receipts"}.Pack(), Priority, "cpu")
	at := time.Unix(1_800_000_000, 0)
	items := []Item{
		{ID: 1, Priority: 2, Seq: 3, Resources: []int64{4}, Value: []byte{}},
		{ID: 5, Priority: 6, Seq: 7, Resources: []int64{8}, Value: make([]byte, 100)},
		{ID: 9, Priority: 1, Seq: 2, Resources: []int64{3}, Value: []byte{0xfe, 0x01, 0x00, 0xfe},
			VisibleAt: at, Lease: 77, Attempts: 2},
	}
	legacy := func(it Item) []byte {
		t := tuple.Tuple{it.ID, it.Priority, tuple.Tuple{it.Resources[0]}, it.Value}
		if !it.VisibleAt.IsZero() {
			t = append(t, nanos(it.VisibleAt), it.Lease, it.Attempts)
		}
		return append(t, it.Seq).Pack()
	}
	for i, write := range []func(tr kv.Transaction) error{
		func(tr kv.Transaction) error { return q.RecordReceipt(tr, Token{ID: 1, At: at}, items) },
		func(tr kv.Transaction) error {
			parts := make([][]byte, len(items))
			for i, it := range items {
				parts[i] = legacy(it)
			}
			return q.receipts.Record(tr, Token{ID: 2, At: at}, parts...)
		},
	} {
		require.NoError(t, db.Transact(context.Background(), write))
		require.NoError(t, db.Transact(context.Background(), func(tr kv.Transaction) error {
			got, ok, err := q.Receipt(tr, Token{ID: int64(i + 1), At: at, Unsure: true})
			require.NoError(t, err)
			require.True(t, ok)
			require.Len(t, got, len(items))
			for j, it := range items {
				require.Equal(t, []any{it.ID, it.Priority, it.Seq, it.Resources, it.Value, it.Lease, it.Attempts},
					[]any{got[j].ID, got[j].Priority, got[j].Seq, got[j].Resources, got[j].Value, got[j].Lease, got[j].Attempts}, "form %d, item %d", i, j)
				require.True(t, it.VisibleAt.Equal(got[j].VisibleAt))
			}
			return nil
		}))
	}
}

// TestRandomRecordsDecodeOrFail: arbitrary bytes of the codes the two
// forms use decode to an item or to ErrCorrupt, never a panic; an item
// decoded re-encodes to a record that decodes to the same item.
func TestRandomRecordsDecodeOrFail(t *testing.T) {
	t.Parallel()
	q := New(tuple.Tuple{"random"}.Pack(), Priority, "cpu")
	keys := map[int][]byte{tagItems: q.itemKey(pos{prio: 1, seq: 1, id: 1}), tagHidden: q.itemKey(pos{prio: 1, seq: 1, id: 1, due: 5})}
	alphabet := []byte{0x00, 0x01, 0x02, 0x14, 0x15, 0x0c, 0x1c, 0x13, 0xfe, 0xff, 0x05, 0x21}
	r := rand.New(rand.NewPCG(3, 4))
	for range 50_000 {
		b := make([]byte, r.IntN(14))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		for tag, key := range keys {
			it, _, err := q.decodeItemUnder(tag, key, b)
			if err != nil {
				require.ErrorIs(t, err, ErrCorrupt, "%x", b)
				continue
			}
			again, _, err := q.decodeItemUnder(tag, key, encodeValue(it))
			require.NoError(t, err, "%x", b)
			require.Equal(t, it.Value, again.Value)
			require.Equal(t, it.Resources, again.Resources)
			require.True(t, it.VisibleAt.Equal(again.VisibleAt))
		}
	}
}
