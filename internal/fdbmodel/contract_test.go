package fdbmodel_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/internal/fdbmodel"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/kv/kvtest"
)

// clock is the engine's clock, moved by the 5-second test.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestContract: on the modeled cluster, the embedded engine is still a
// kv engine: the model reads ahead and through the snapshot view, and must
// change no answer and no conflict.
func TestContract(t *testing.T) {
	kvtest.Run(t, func(t *testing.T) kvtest.Instance {
		c := &clock{now: time.Unix(1_700_000_000, 0)}
		db := embedded.Open("", embedded.Config{Clock: c.Now, RetryLimit: 5, MaxWatches: 64})
		return kvtest.Instance{DB: fdbmodel.Wrap(db, fdbmodel.Config{}), Advance: c.Advance, MaxWatches: 64}
	})
}

// TestHidesFastPaths: the model offers what the FoundationDB engine does,
// not the embedded engine's shortcuts.
func TestHidesFastPaths(t *testing.T) {
	t.Parallel()
	db := fdbmodel.Wrap(embedded.Open("", embedded.Config{}), fdbmodel.Config{})
	defer db.Close()
	var raw kv.Database = db
	_, certain := raw.(kv.CertainCommits)
	require.False(t, certain, "the commits of FoundationDB are not certain")
	tr, err := db.CreateTransaction(bg)
	require.NoError(t, err)
	defer tr.Cancel()
	_, queuer := tr.(kv.CommitQueuer)
	require.False(t, queuer, "no commit queue on FoundationDB")
	type firster interface {
		First(kv.Range, bool) (kv.KeyValue, bool, error)
	}
	type getManyer interface {
		GetMany([][]byte) ([][]byte, error)
	}
	type asyncReader interface {
		GetAsync([]byte) kv.FutureValue
		GetRangeAsync(kv.Range, kv.RangeOptions) kv.FutureRange
	}
	for _, rt := range []kv.ReadTransaction{tr, tr.Snapshot()} {
		_, first := rt.(firster)
		require.False(t, first, "no First fast path on FoundationDB")
		_, many := rt.(getManyer)
		require.True(t, many, "GetMany, as the FoundationDB engine's")
		_, async := rt.(asyncReader)
		require.True(t, async, "futures, as the FoundationDB engine's")
	}
}
