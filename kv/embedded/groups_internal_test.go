package embedded

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// queued returns how many commits wait in s's commitGroups.
func queued(s *store) int {
	s.comb.mu.Lock()
	defer s.comb.mu.Unlock()
	return len(s.comb.queue)
}

// settledGroup runs the commits of txns so that the first leads and the
// others queue behind it, in order, and are settled as one group. It returns
// each commit's error and how many groups the leaders settled.
func settledGroup(t *testing.T, db *DB, txns []kv.Transaction) ([]error, int) {
	t.Helper()
	s := db.s
	release := make(chan struct{})
	var groups int
	s.comb.groupHook = func() {
		groups++
		if groups == 1 {
			<-release // hold the first leader until the others queue
		}
	}
	defer func() { s.comb.groupHook = nil }()

	errs := make([]error, len(txns))
	var wg sync.WaitGroup
	for i, tr := range txns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = tr.Commit()
		}()
		if i == 0 {
			require.Eventually(t, func() bool {
				s.comb.mu.Lock()
				defer s.comb.mu.Unlock()
				return s.comb.leading
			}, 10*time.Second, time.Millisecond)
			continue
		}
		// Wait for this commit to queue before starting the next, so that
		// the queue's order is txns' order.
		require.Eventually(t, func() bool { return queued(s) == i }, 10*time.Second, time.Millisecond)
	}
	close(release)
	wg.Wait()
	return errs, groups
}

// beginWrite returns a transaction that has read key read (or, if it is
// "", only taken its read version) and set key write to itself.
func beginWrite(t *testing.T, db *DB, read, write string) kv.Transaction {
	t.Helper()
	tr, err := db.CreateTransaction(context.Background())
	require.NoError(t, err)
	if read != "" {
		_, err := tr.Get([]byte(read))
		require.NoError(t, err)
	} else {
		_, err := tr.GetReadVersion()
		require.NoError(t, err)
	}
	tr.Set([]byte(write), []byte(write))
	return tr
}

// TestCombinedGroupConflict: commits queued behind a leader are settled in
// one group, in queue order; a commit that read a key an earlier member of
// its group wrote fails with not_committed, and the others commit, each at
// the next version.
func TestCombinedGroupConflict(t *testing.T) {
	t.Parallel()
	db := Open("", Config{})
	defer db.Close()
	start := db.Stats().Version

	begin := func(read string, write string) kv.Transaction { return beginWrite(t, db, read, write) }
	// All read at the same version, before any of them commits.
	txns := []kv.Transaction{
		begin("", "a"),  // the leader
		begin("x", "b"), // reads x before c writes it: commits
		begin("", "x"),  // writes x
		begin("x", "d"), // reads x, queued after c: conflicts
		begin("y", "e"), // reads what nobody writes: commits
	}
	errs, groups := settledGroup(t, db, txns)
	require.Equal(t, 2, groups, "the leader's own commit, then the four queued behind it as one group")
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.NoError(t, errs[2])
	require.ErrorIs(t, errs[3], kv.ErrNotCommitted)
	require.NoError(t, errs[4])
	require.Equal(t, start+4, db.Stats().Version, "four commits, four versions; the failed one takes none")

	// The versions follow the queue: read each key as of each version.
	for ver, want := range map[uint64][]string{
		start + 1: {"a"},
		start + 2: {"a", "b"},
		start + 3: {"a", "b", "x"},
		start + 4: {"a", "b", "e", "x"},
	} {
		got := readAllAt(t, db, ver)
		require.Equal(t, want, got, "as of version %d", ver)
	}
}

// TestCombinedGroupOfLargeCommits: in memory, a group lets go of the
// store's lock after each large commit (settleGroup), so that readers run
// between them: a reader sees each commit whole or not at all, and a
// conflict with a commit before the release is still found.
func TestCombinedGroupOfLargeCommits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := Open("", Config{})
	defer db.Close()
	begin := func(read, name string) kv.Transaction {
		tr := beginWrite(t, db, read, name)
		for i := range stageMin {
			tr.Set([]byte(fmt.Sprintf("%s/%03d", name, i)), []byte(name))
		}
		return tr
	}
	names := []string{"a", "b", "x", "d", "e"}
	txns := []kv.Transaction{
		begin("", "a"),  // the leader
		begin("x", "b"), // reads x before x commits: commits
		begin("", "x"),  // writes x, then the lock is let go
		begin("x", "d"), // reads x, queued after it: conflicts
		begin("", "e"),
	}
	stop := make(chan struct{})
	partial := make(chan string, 1)
	go func() {
		defer close(partial)
		for {
			select {
			case <-stop:
				return
			default:
			}
			err := db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
				for _, name := range names {
					kvs, err := kv.Collect(tr.GetRange(kv.PrefixRange([]byte(name+"/")), kv.RangeOptions{}))
					if err != nil {
						return err
					}
					if len(kvs) != 0 && len(kvs) != stageMin {
						return fmt.Errorf("%s: %d of %d keys", name, len(kvs), stageMin)
					}
				}
				return nil
			})
			if err != nil {
				partial <- err.Error()
				return
			}
		}
	}()
	errs, groups := settledGroup(t, db, txns)
	close(stop)
	for p := range partial {
		t.Fatalf("a reader: %s", p)
	}
	require.Equal(t, 2, groups)
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.NoError(t, errs[2])
	require.ErrorIs(t, errs[3], kv.ErrNotCommitted)
	require.NoError(t, errs[4])
	var present []string
	require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		present = nil
		for _, name := range names {
			v, err := tr.Get([]byte(name))
			if err != nil {
				return err
			}
			if v != nil {
				present = append(present, name)
			}
		}
		return nil
	}))
	require.Equal(t, []string{"a", "b", "x", "e"}, present)
}

// readAllAt lists the keys visible at version ver.
func readAllAt(t *testing.T, db *DB, ver uint64) []string {
	t.Helper()
	var keys []string
	for _, k := range []string{"a", "b", "d", "e", "x"} {
		if _, ok := db.s.get(ver, []byte(k), new([]byte)); ok {
			keys = append(keys, k)
		}
	}
	return keys
}

// TestCombinedManyClients: with commits piling up behind slow groups (so
// that leaders also hand the lead on after maxLeadRounds), every commit
// returns, read-modify-writes of one counter stay serializable, and the
// commitGroups ends idle.
func TestCombinedManyClients(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := Open("", Config{RetryLimit: -1})
	defer db.Close()
	s := db.s

	// Slow every group down so that commits pile up behind the leader.
	s.comb.groupHook = func() { time.Sleep(50 * time.Microsecond) }
	const clients, each = 16, 50
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				err := db.Transact(ctx, func(tr kv.Transaction) error {
					v, err := tr.Get([]byte("n"))
					if err != nil {
						return err
					}
					var n uint64
					if len(v) == 8 {
						n = binary.BigEndian.Uint64(v)
					}
					tr.Set([]byte("n"), binary.BigEndian.AppendUint64(nil, n+1))
					tr.Set(binary.BigEndian.AppendUint64([]byte("k"), uint64(c*each+i)), nil)
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	var v []byte
	require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		var err error
		v, err = tr.Get([]byte("n"))
		return err
	}))
	require.Equal(t, uint64(clients*each), binary.BigEndian.Uint64(v), "every increment exactly once")
	require.Equal(t, 0, queued(s))
	s.comb.mu.Lock()
	require.False(t, s.comb.leading, "the last leader stepped down")
	s.comb.mu.Unlock()
}
