package shared_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/kv/shared"
)

// TestCloseDuringTakeOver: a client process closes its last handle as it
// takes the database over from a serving process that was killed, with
// transactions running: Close returns, the transactions end, and nothing
// of a take-over outlives the handle (no one serves the socket after).
// The moments of the kill and of the close are seeded.
func TestCloseDuringTakeOver(t *testing.T) {
	t.Parallel()
	for i := range 4 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			dir := t.TempDir()
			child := shared.ServeInChild(t, dir)
			db, err := shared.Open(dir, embedded.FileConfig{Sync: embedded.SyncNone})
			require.NoError(t, err)
			require.False(t, db.Serving())
			put(t, db, "a", "1")

			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var wg sync.WaitGroup
			for w := range 3 {
				wg.Go(func() {
					for n := 0; ctx.Err() == nil; n++ {
						err := db.Transact(ctx, func(tr kv.Transaction) error {
							if _, err := tr.Get([]byte("a")); err != nil {
								return err
							}
							tr.Set(fmt.Appendf(nil, "w%d-%d", w, n), []byte("x"))
							return nil
						})
						if err != nil && !kv.IsRetryable(err) {
							return // closed
						}
					}
				})
			}
			time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond)
			child.Kill(t)
			time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
			closed := make(chan error, 1)
			go func() { closed <- db.Close() }()
			select {
			case <-closed:
			case <-time.After(15 * time.Second):
				t.Fatal("Close hangs during a take-over")
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(15 * time.Second):
				t.Fatal("transactions go on after Close")
			}
			// The killed child may take a moment to go; this process
			// must not serve once it has.
			require.Eventually(t, func() bool {
				c, err := net.Dial("unix", filepath.Join(dir, shared.SocketName))
				if err == nil {
					c.Close()
				}
				return err != nil
			}, 5*time.Second, 10*time.Millisecond, "the closed handle's process still serves the database")
			// The database opens again, with what was acknowledged.
			db2 := open(t, dir)
			require.True(t, db2.Serving())
			require.Equal(t, "1", get(t, db2, "a"))
		})
	}
}
