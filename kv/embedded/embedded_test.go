package embedded_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/kv/kvtest"
)

// fakeClock is a clock the tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func TestContract(t *testing.T) {
	kvtest.Run(t, func(t *testing.T) kvtest.Instance {
		clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
		db := embedded.Open("", embedded.Config{Clock: clock.Now, RetryLimit: 5, MaxWatches: 64})
		return kvtest.Instance{DB: db, Advance: clock.Advance, MaxWatches: 64}
	})
}

func TestNamedMemoryIsShared(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := t.Name()
	a := embedded.Open(name, embedded.Config{})
	b := embedded.Open(name, embedded.Config{})
	require.NoError(t, a.Transact(ctx, func(tr kv.Transaction) error {
		tr.Set([]byte("k"), []byte("v"))
		return nil
	}))
	var v []byte
	require.NoError(t, b.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		var err error
		v, err = tr.Get([]byte("k"))
		return err
	}))
	require.Equal(t, "v", string(v))

	// Private databases are private.
	c := embedded.Open("", embedded.Config{})
	require.NoError(t, c.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		var err error
		v, err = tr.Get([]byte("k"))
		return err
	}))
	require.Nil(t, v)

	// The named database lives until its last handle closes.
	require.NoError(t, a.Close())
	require.NoError(t, a.Close(), "closing twice is harmless")
	d := embedded.Open(name, embedded.Config{})
	require.NoError(t, d.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		var err error
		v, err = tr.Get([]byte("k"))
		return err
	}))
	require.Equal(t, "v", string(v))
	require.NoError(t, b.Close())
	require.NoError(t, d.Close())
	e := embedded.Open(name, embedded.Config{})
	defer e.Close()
	require.NoError(t, e.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		var err error
		v, err = tr.Get([]byte("k"))
		return err
	}))
	require.Nil(t, v)

	_, err := a.CreateTransaction(ctx)
	require.Error(t, err, "a closed handle opens no transactions")
}

// TestHeadStaysClean checks the property queues depend on: popping the head
// of a range over and over leaves no tombstones behind once no reader needs
// them, so finding the head stays cheap.
func TestHeadStaysClean(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	const n = 20000
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		for i := 0; i < n; i++ {
			tr.Set([]byte(fmt.Sprintf("q%08d", i)), []byte("x"))
		}
		return nil
	}))
	for i := 0; i < n; i++ {
		require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
			kvp, ok, err := kv.First(tr, kv.PrefixRange([]byte("q")), false)
			if err != nil || !ok {
				return fmt.Errorf("pop %d: ok=%v err=%v", i, ok, err)
			}
			tr.Clear(kvp.Key)
			return nil
		}))
	}
	// One more commit lets the collector prune the last pops.
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		tr.Set([]byte("z"), nil)
		return nil
	}))
	st := db.Stats()
	require.LessOrEqual(t, st.Keys, 3, "tombstones left at the head: %+v", st)
	require.Equal(t, 1, st.LiveKeys)
	require.Zero(t, st.ActiveReaders)
	require.LessOrEqual(t, st.HistoryRecords, 2)
}

// TestOldReaderSeesItsVersion checks that pruning never takes a version a
// live reader still needs.
func TestOldReaderSeesItsVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	put := func(v string) {
		require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
			tr.Set([]byte("k"), []byte(v))
			return nil
		}))
	}
	put("old")
	reader, err := db.CreateTransaction(ctx)
	require.NoError(t, err)
	defer reader.Cancel()
	_, err = reader.GetReadVersion()
	require.NoError(t, err)
	for i := 0; i < 1000; i++ {
		put(fmt.Sprint(i))
	}
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		tr.Clear([]byte("k"))
		return nil
	}))
	v, err := reader.Get([]byte("k"))
	require.NoError(t, err)
	require.Equal(t, "old", string(v))
	kvs, err := kv.Collect(reader.GetRange(kv.PrefixRange([]byte("k")), kv.RangeOptions{}))
	require.NoError(t, err)
	require.Len(t, kvs, 1)
}

func TestFaultInjection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	set := func(db *embedded.DB, k string) error {
		tr, err := db.CreateTransaction(ctx)
		require.NoError(t, err)
		defer tr.Cancel()
		tr.Set([]byte(k), []byte("v"))
		return tr.Commit()
	}
	has := func(db *embedded.DB, k string) bool {
		var v []byte
		require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
			var err error
			v, err = tr.Get([]byte(k))
			return err
		}))
		return v != nil
	}
	for _, tc := range []struct {
		name    string
		f       embedded.Faults
		code    int
		applied bool
	}{
		{"conflict", embedded.Faults{Conflict: 1}, 1020, false},
		{"unknown applied", embedded.Faults{UnknownApplied: 1}, 1021, true},
		{"unknown not applied", embedded.Faults{UnknownNotApplied: 1}, 1021, false},
		{"too old", embedded.Faults{TooOld: 1}, 1007, false},
		{"timed out", embedded.Faults{TimedOut: 1}, 1031, false},
	} {
		db := embedded.Open("", embedded.Config{Faults: &tc.f})
		err := set(db, "k")
		require.Equal(t, tc.code, kv.Code(err), tc.name)
		require.Equal(t, tc.applied, has(db, "k"), tc.name)
		require.NoError(t, db.Close())
	}

	// Seeded: the same seed fails the same commits.
	outcomes := func(seed uint64) []int {
		db := embedded.Open("", embedded.Config{Faults: &embedded.Faults{Seed: seed, Conflict: 0.3, UnknownNotApplied: 0.2}})
		defer db.Close()
		var out []int
		for i := 0; i < 50; i++ {
			out = append(out, kv.Code(set(db, fmt.Sprint(i))))
		}
		return out
	}
	a := outcomes(7)
	require.Equal(t, a, outcomes(7))
	require.NotEqual(t, a, outcomes(8))
	require.Contains(t, a, 0)
	require.Contains(t, a, 1020)

	// Latency delays commits.
	db := embedded.Open("", embedded.Config{Faults: &embedded.Faults{CommitLatency: 20 * time.Millisecond}})
	defer db.Close()
	start := time.Now()
	require.NoError(t, set(db, "slow"))
	require.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)
}

// TestReadersReleasedOutOfOrder: the collector keeps what the oldest live
// reader needs, whichever readers end first, and forgets a reader past the
// 5-second limit; then it prunes everything.
func TestReadersReleasedOutOfOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	db := embedded.Open("", embedded.Config{Clock: clock.Now})
	defer db.Close()
	put := func(v string) {
		require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
			tr.Set([]byte("k"), []byte(v))
			return nil
		}))
	}
	reader := func() kv.Transaction {
		tr, err := db.CreateTransaction(ctx)
		require.NoError(t, err)
		_, err = tr.GetReadVersion()
		require.NoError(t, err)
		return tr
	}
	get := func(tr kv.Transaction) string {
		v, err := tr.Get([]byte("k"))
		require.NoError(t, err)
		return string(v)
	}
	put("v1")
	r1 := reader() // the oldest, ends last
	put("v2")
	r2 := reader()
	put("v3")
	r3 := reader()
	put("v4")
	require.Equal(t, 3, db.Stats().ActiveReaders)

	r2.Cancel() // a middle one ends first
	put("v5")
	require.Equal(t, "v1", get(r1))
	require.Equal(t, "v3", get(r3))
	r3.Cancel() // then the newest
	put("v6")
	require.Equal(t, "v1", get(r1), "the oldest reader still holds its version")
	require.Equal(t, 1, db.Stats().ActiveReaders)

	// Past the 5-second limit the reader no longer holds versions back: it
	// can only fail.
	clock.Advance(kv.MaxTransactionAge + time.Second)
	put("v7")
	require.Equal(t, 0, db.Stats().ActiveReaders)
	_, err := r1.Get([]byte("k"))
	require.ErrorIs(t, err, kv.ErrTransactionTooOld)
	r1.Cancel() // releasing an expired reader is harmless
	require.Equal(t, 0, db.Stats().ActiveReaders)

	r4 := reader()
	require.Equal(t, "v7", get(r4))
	r4.Cancel()
	require.Equal(t, 0, db.Stats().ActiveReaders)
}
