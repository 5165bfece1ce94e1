package embedded_test

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
)

// BenchmarkPushPop is the queue recipe's access pattern on the bare engine:
// a push reads the tail with a snapshot read and sets the next key; a pop
// reads the head serializably and clears it. One op is one push and one pop.
func BenchmarkPushPop(b *testing.B) {
	ctx := context.Background()
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	r := kv.PrefixRange([]byte("q"))
	const backlog = 1000
	push := func() {
		if err := db.Transact(ctx, func(tr kv.Transaction) error {
			last, ok, err := kv.First(tr.Snapshot(), r, true)
			if err != nil {
				return err
			}
			var n uint64
			if ok {
				n = binary.BigEndian.Uint64(last.Key[1:]) + 1
			}
			k := binary.BigEndian.AppendUint64([]byte("q"), n)
			tr.Set(k, []byte("payload"))
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	pop := func() {
		if err := db.Transact(ctx, func(tr kv.Transaction) error {
			first, ok, err := kv.First(tr, r, false)
			if err != nil || !ok {
				return err
			}
			tr.Clear(first.Key)
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < backlog; i++ {
		push()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		push()
		pop()
	}
}
