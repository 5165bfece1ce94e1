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
		db := embedded.Open("", embedded.Config{Clock: clock.Now, RetryLimit: 5})
		return kvtest.Instance{DB: db, Advance: clock.Advance}
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
