package embedded

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// TestPrebuiltRecords: clients committing concurrently, with values of
// every size (one larger than a quarter of a slab gets a slab of its own)
// and conflicts that fail some commits after their records were written,
// leave exactly the successful commits' values, each readable at its
// version and not before; a reader older than all of them sees none.
func TestPrebuiltRecords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := Open("", Config{RetryLimit: -1})
	old, err := db.CreateTransaction(ctx)
	require.NoError(t, err)
	defer old.Cancel()
	_, err = old.Get([]byte("x")) // takes its read version
	require.NoError(t, err)
	value := func(c, i int) []byte {
		return bytes.Repeat([]byte{byte(c + i)}, []int{0, 1, 127, 128, 300, slabSize/4 + 1}[i%6])
	}
	const clients, commits = 8, 40
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range commits {
				require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
					// A read of the shared counter makes commits
					// conflict, and retry.
					cnt, err := tr.Get([]byte("count"))
					if err != nil {
						return err
					}
					tr.Set([]byte("count"), append(cnt[:len(cnt):len(cnt)], 1))
					for i := range 30 {
						tr.Set(fmt.Appendf(nil, "k/%d/%03d/%03d", c, n, i), value(c, i))
					}
					return nil
				}))
			}
		}()
	}
	wg.Wait()
	tr, err := db.CreateTransaction(ctx)
	require.NoError(t, err)
	defer tr.Cancel()
	cnt, err := tr.Get([]byte("count"))
	require.NoError(t, err)
	require.Len(t, cnt, clients*commits) // each commit once, none lost to a retry
	kvs, err := kv.Collect(tr.GetRange(kv.PrefixRange([]byte("k/")), kv.RangeOptions{}))
	require.NoError(t, err)
	require.Len(t, kvs, clients*commits*30)
	for _, e := range kvs {
		var c, n, i int
		_, err := fmt.Sscanf(string(e.Key), "k/%d/%03d/%03d", &c, &n, &i)
		require.NoError(t, err)
		require.Equal(t, value(c, i), e.Value, "key %s", e.Key)
	}
	seen, err := kv.Collect(old.GetRange(kv.PrefixRange([]byte("k/")), kv.RangeOptions{}))
	require.NoError(t, err)
	require.Empty(t, seen)
}

// TestTooLargeCommitBuildsNoRecords: a commit that fails with
// transaction_too_large writes none of its records ahead: the limit is
// checked before the batch's records are built, so a transaction of
// hundreds of megabytes is not copied into slabs only to be refused.
func TestTooLargeCommitBuildsNoRecords(t *testing.T) {
	t.Parallel()
	db := Open("", Config{})
	defer db.Close()
	tr, err := db.CreateTransaction(context.Background())
	require.NoError(t, err)
	defer tr.Cancel()
	value := make([]byte, kv.MaxValueSize)
	for i := range kv.MaxTransactionSize/kv.MaxValueSize + 1 {
		tr.Set(fmt.Appendf(nil, "k/%03d", i), value)
	}
	before := db.s.slabs.slabBytes.Load()
	err = tr.Commit()
	require.Equal(t, kv.CodeTransactionTooLarge, kv.Code(err), "%v", err)
	require.Equal(t, before, db.s.slabs.slabBytes.Load(), "slab bytes written for a refused commit")
}

// A commit that fails its conflict check after its records were written
// ahead leaves them as dead bytes, which compaction weighs.
func TestConflictingCommitCountsItsRecordsDead(t *testing.T) {
	t.Parallel()
	db := Open("", Config{})
	defer db.Close()
	ctx := context.Background()
	loser, err := db.CreateTransaction(ctx)
	require.NoError(t, err)
	defer loser.Cancel()
	_, err = loser.Get([]byte("k"))
	require.NoError(t, err)
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		tr.Set([]byte("k"), []byte("winner"))
		return nil
	}))
	value := make([]byte, 1000)
	for i := range 10 {
		loser.Set(fmt.Appendf(nil, "row/%02d", i), value)
	}
	db.s.mu.RLock()
	dead := db.s.slabs.dead
	db.s.mu.RUnlock()
	err = loser.Commit()
	require.Equal(t, kv.CodeNotCommitted, kv.Code(err), "%v", err)
	db.s.mu.RLock()
	grew := db.s.slabs.dead - dead
	db.s.mu.RUnlock()
	require.GreaterOrEqual(t, grew, 10*1000, "dead bytes after a conflicting commit of 10 records of 1,000-byte values")
}

// A database whose commit versions ran out refuses commits with an error
// that says so, and stays readable; it never writes a version its records
// cannot hold.
func TestVersionsRunOut(t *testing.T) {
	t.Parallel()
	db := Open("", Config{})
	defer db.Close()
	ctx := context.Background()
	db.s.mu.Lock()
	db.s.nextVer = verMask - 1
	db.s.version.Store(verMask - 1)
	db.s.mu.Unlock()
	set := func(v string) error {
		return db.Transact(ctx, func(tr kv.Transaction) error {
			tr.Set([]byte("k"), []byte(v))
			return nil
		})
	}
	require.NoError(t, set("last"), "the last version is usable")
	err := set("one too many")
	require.Equal(t, kv.CodeClientInvalidOperation, kv.Code(err), "%v", err)
	require.ErrorContains(t, err, "takes no more commits")
	require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		v, err := tr.Get([]byte("k"))
		require.Equal(t, "last", string(v))
		return err
	}))
}
