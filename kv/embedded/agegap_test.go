package embedded_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
)

// trapClock is a database's clock that runs a function of the test's in
// the middle of one reading: after it is taken, before it is returned, as
// when the goroutine that read the clock waits for a core before it acts
// on the reading.
type trapClock struct {
	now  atomic.Int64 // since base
	base time.Time
	trap atomic.Pointer[func()]
}

func (c *trapClock) Now() time.Time {
	t := c.base.Add(time.Duration(c.now.Load()))
	if f := c.trap.Swap(nil); f != nil {
		(*f)()
	}
	return t
}

func (c *trapClock) set(d time.Duration) { c.now.Store(int64(d)) }

// agedReader opens a database holding k = "v1", opens a reader of it and
// calls prepare with it, then sets k to "v2". The returned gap arranges
// that the reader's next clock reading is 4.9 s after it took its read
// version and that, before the reader acts on that reading, a commit at
// 5.1 s collects what no reader younger than 5 s needs; gap's result
// reports that the commit ran.
func agedReader(t *testing.T, prepare func(reader kv.Transaction)) (reader kv.Transaction, gap func() (collected func() bool)) {
	ctx := context.Background()
	clock := &trapClock{base: time.Now()}
	db := embedded.Open("", embedded.Config{Clock: clock.Now})
	t.Cleanup(func() { _ = db.Close() })
	set := func(k, v string) {
		require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
			tr.Set([]byte(k), []byte(v))
			return nil
		}))
	}
	set("k", "v1")
	reader, err := db.CreateTransaction(ctx)
	require.NoError(t, err)
	t.Cleanup(reader.Cancel)
	prepare(reader)
	set("k", "v2")
	return reader, func() func() bool {
		clock.set(4900 * time.Millisecond)
		collect := func() {
			clock.set(5100 * time.Millisecond)
			set("other", "v")
		}
		clock.trap.Store(&collect)
		return func() bool { return clock.trap.Load() == nil }
	}
}

// A read whose age check passes, and that reads once the collector,
// whose clock passed the 5-second limit meanwhile, dropped its reader and
// pruned the versions it reads, fails as too old: it read the key absent,
// though at its read version the key had a value. Each way to read.
func TestReadAfterItsAgeCheckSeesItsVersion(t *testing.T) {
	t.Parallel()
	k := []byte("k")
	r := kv.Range{Begin: k, End: []byte("l")}
	value := func(kvs []kv.KeyValue, err error) ([]byte, error) {
		if len(kvs) == 0 {
			return nil, err
		}
		return kvs[0].Value, err
	}
	// Each returns the read to make, set up: a range read's iterator
	// checks the age when made, and again before it reads.
	for name, read := range map[string]func(kv.Transaction) func() ([]byte, error){
		"Get": func(tr kv.Transaction) func() ([]byte, error) {
			return func() ([]byte, error) { return tr.Get(k) }
		},
		"GetMany": func(tr kv.Transaction) func() ([]byte, error) {
			return func() ([]byte, error) {
				vs, err := kv.GetMany(tr, [][]byte{k})
				if err != nil {
					return nil, err
				}
				return vs[0], nil
			}
		},
		"GetRange": func(tr kv.Transaction) func() ([]byte, error) {
			it := tr.GetRange(r, kv.RangeOptions{})
			return func() ([]byte, error) { return value(kv.Collect(it)) }
		},
		"GetRangeAsync": func(tr kv.Transaction) func() ([]byte, error) {
			return func() ([]byte, error) { return value(kv.GetRangeAsync(tr, r, kv.RangeOptions{}).Get()) }
		},
		"First": func(tr kv.Transaction) func() ([]byte, error) {
			return func() ([]byte, error) {
				e, _, err := kv.First(tr, r, false)
				return e.Value, err
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			reader, gap := agedReader(t, func(reader kv.Transaction) {
				_, err := reader.GetReadVersion()
				require.NoError(t, err)
			})
			readK := read(reader)
			collected := gap()
			v, err := readK()
			require.True(t, collected(), "the collector ran between the read's age check and the read")
			if err == nil {
				require.Equal(t, "v1", string(v), "the read sees the value at its read version")
			} else {
				require.Equal(t, kv.CodeTransactionTooOld, kv.Code(err), "%v", err)
			}
		})
	}
}

// A commit whose age check passes, and that is checked for conflicts once
// the collector, whose clock passed the 5-second limit meanwhile, dropped
// its reader and the history of the writes since its read version, fails
// (as too old, or as a conflict): it read a key another commit wrote
// since, and committing it would lose that write.
func TestCommitAfterItsAgeCheckSeesItsConflicts(t *testing.T) {
	t.Parallel()
	reader, gap := agedReader(t, func(reader kv.Transaction) {
		v, err := reader.Get([]byte("k"))
		require.NoError(t, err)
		reader.Set([]byte("k"), append(v, '+'))
	})
	collected := gap()
	err := reader.Commit()
	require.True(t, collected(), "the collector ran between the commit's age check and the commit")
	require.Error(t, err, "the commit would lose the write of v2")
	require.Contains(t, []int{kv.CodeTransactionTooOld, kv.CodeNotCommitted}, kv.Code(err), "%v", err)
}
