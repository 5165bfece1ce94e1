package embedded_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	_ "github.com/fdbqueue/fdbqueue/driver"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
)

// TestChunkedInstallSQL runs 100-row INSERTs (about 350 keys each,
// installed in chunks) from several clients through the driver, while
// other clients read the table's rows, some between two chunks of an
// install: an INSERT is atomic, so every read finds a multiple of 100
// rows, and never fewer than an earlier read of its client.
func TestChunkedInstallSQL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// The driver's named database is the store opened here, whose hook
	// reads between chunks.
	name := fmt.Sprintf("chunked%d", rand.Uint64())
	store := embedded.Open(name, embedded.Config{})
	defer store.Close()
	db, err := sql.Open("fdbqueue", "memory:"+name)
	require.NoError(t, err)
	defer db.Close()
	count := func() int {
		got, err := db.QueryContext(ctx, "SELECT id FROM chunked LIMIT 100000")
		require.NoError(t, err)
		n := 0
		for got.Next() {
			n++
		}
		require.NoError(t, got.Err())
		require.NoError(t, got.Close())
		return n
	}
	var between atomic.Int64
	embedded.SetChunkHook(store, func() {
		done := make(chan struct{})
		go func() {
			defer close(done)
			n := count()
			require.Zero(t, n%100, "rows of a partly installed INSERT: %d", n)
			between.Add(1)
		}()
		<-done
	})
	_, err = db.ExecContext(ctx, `CREATE TABLE chunked (priority INT NOT NULL, cpu INT NOT NULL, mem INT NOT NULL, payload TEXT, INDEX fit (cpu, mem))`)
	require.NoError(t, err)
	const writers, inserts, rows = 3, 8, 100
	insert := "INSERT INTO chunked (priority, cpu, mem, payload) VALUES " +
		strings.TrimSuffix(strings.Repeat("(?, ?, ?, 'p'), ", rows), ", ")
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range inserts {
				args := make([]any, 0, 3*rows)
				for r := range rows {
					args = append(args, (w+i+r)%10, 1+r%8, 1+(r*7)%32)
				}
				_, err := db.ExecContext(ctx, insert, args...)
				require.NoError(t, err)
			}
		}()
	}
	var stop atomic.Bool
	var readers sync.WaitGroup
	var reads atomic.Int64
	for range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			last := 0
			for !stop.Load() {
				n := count()
				require.Zero(t, n%rows, "rows of a partly installed INSERT: %d", n)
				require.GreaterOrEqual(t, n, last)
				last = n
				reads.Add(1)
			}
		}()
	}
	wg.Wait()
	stop.Store(true)
	readers.Wait()
	require.Positive(t, reads.Load())
	require.Positive(t, between.Load())
	var n int
	require.NoError(t, db.QueryRowContext(ctx, "SELECT COUNT(*) FROM chunked").Scan(&n))
	require.Equal(t, writers*inserts*rows, n, fmt.Sprintf("%d inserts of %d rows", writers*inserts, rows))
}
