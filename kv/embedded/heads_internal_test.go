package embedded

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// TestHeadHintsAnyHint: a one-row read seeks from the hint its pivot's
// slot holds (heads.go), which another reader, a colliding pivot or a
// commit since may have made wrong; whatever the slots hold (random
// words here, rewritten between reads), kv.First answers as the
// iterator does, in both directions, while other goroutines commit and
// read (for the race detector: the slots are shared).
func TestHeadHintsAnyHint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := Open("", Config{})
	defer db.Close()
	key := func(i int) []byte { return fmt.Appendf(nil, "c%02d/%04d", i/100, i%100) }
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		for i := 0; i < 3000; i += 3 {
			tr.Set(key(i), []byte{byte(i)})
		}
		return nil
	}))
	hints := db.s.heads
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := range 2 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 9))
			for {
				select {
				case <-stop:
					return
				default:
				}
				i := r.IntN(3000)
				_ = db.Transact(ctx, func(tr kv.Transaction) error {
					if g == 0 {
						if r.IntN(2) == 0 {
							tr.Clear(key(i))
						} else {
							tr.Set(key(i), []byte{1})
						}
						return nil
					}
					_, _, err := kv.First(tr.Snapshot(), kv.PrefixRange(key(i)[:4]), r.IntN(2) == 0)
					return err
				})
			}
		})
	}
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 2000 {
		if round%2 == 0 {
			for i := range hints.slots {
				hints.slots[i][0].Store(r.Uint64())
				hints.slots[i][1].Store(r.Uint64())
			}
		}
		cell := kv.PrefixRange(fmt.Appendf(nil, "c%02d/", r.IntN(32)))
		reverse := r.IntN(2) == 0
		require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
			e, ok, err := kv.First(tr.Snapshot(), cell, reverse)
			if err != nil {
				return err
			}
			want, err := kv.Collect(tr.Snapshot().GetRange(cell, kv.RangeOptions{Limit: 1, Reverse: reverse}))
			if err != nil {
				return err
			}
			var got []kv.KeyValue
			if ok {
				got = []kv.KeyValue{e}
			}
			require.Equal(t, rowsText(want), rowsText(got), "round %d: %q reverse %v", round, cell.Begin, reverse)
			return nil
		}))
	}
	close(stop)
	wg.Wait()
}
