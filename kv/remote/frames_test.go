package remote_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/kv/remote"
)

// TestLargeResults: answers larger than a frame come in several (a
// GetMany, a range future, iterator pages cut by their bytes), whole and
// in order, in every direction.
func TestLargeResults(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	client := serve(t, db).dial(t, remote.Options{})
	const n = 30 // 3 MB: a dozen frames
	val := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i%26)}, kv.MaxValueSize) }
	var keys [][]byte
	for i := range n {
		k := []byte(fmt.Sprintf("big/%03d", i))
		keys = append(keys, k)
		require.NoError(t, client.Transact(bg, func(tr kv.Transaction) error {
			tr.Set(k, val(i))
			return nil
		}))
	}
	// Each read in a transaction of its own: under the race detector a
	// transaction reading all of them may run past 5 seconds.
	read := func(fn func(tr kv.ReadTransaction) error) {
		t.Helper()
		require.NoError(t, client.ReadTransact(bg, fn))
	}
	var vals [][]byte
	read(func(tr kv.ReadTransaction) (err error) {
		vals, err = kv.GetMany(tr, keys)
		return err
	})
	require.Len(t, vals, n)
	for i, v := range vals {
		require.Equal(t, val(i), v, "GetMany %d", i)
	}
	for _, reverse := range []bool{false, true} {
		for _, mode := range []kv.StreamingMode{kv.StreamingModeIterator, kv.StreamingModeWantAll, kv.StreamingModeSmall} {
			opts := kv.RangeOptions{Reverse: reverse, Mode: mode}
			var rows []kv.KeyValue
			read(func(tr kv.ReadTransaction) (err error) {
				rows, err = kv.GetRangeAsync(tr, kv.PrefixRange([]byte("big/")), opts).Get()
				return err
			})
			checkRows(t, rows, n, reverse, val)
			read(func(tr kv.ReadTransaction) (err error) {
				rows, err = kv.Collect(tr.GetRange(kv.PrefixRange([]byte("big/")), opts))
				return err
			})
			checkRows(t, rows, n, reverse, val)
			opts.Limit = n - 5
			read(func(tr kv.ReadTransaction) (err error) {
				rows, err = kv.Collect(tr.GetRange(kv.PrefixRange([]byte("big/")), opts))
				return err
			})
			require.Len(t, rows, n-5)
		}
	}
}

func checkRows(t *testing.T, rows []kv.KeyValue, n int, reverse bool, val func(int) []byte) {
	t.Helper()
	require.Len(t, rows, n)
	for j, e := range rows {
		i := j
		if reverse {
			i = n - 1 - j
		}
		require.Equal(t, fmt.Sprintf("big/%03d", i), string(e.Key))
		require.Equal(t, val(i), e.Value)
	}
}

// TestOversized: a value over the engine's limit is refused by the engine
// (value_too_large at commit), though the client sends only its first
// bytes; a key too long to send at all is refused by the client, with
// key_too_large: a write's at commit, a read's at once.
func TestOversized(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	client := serve(t, db).dial(t, remote.Options{})
	commit := func(fn func(tr kv.Transaction)) error {
		tr, err := client.CreateTransaction(bg)
		require.NoError(t, err)
		defer tr.Cancel()
		fn(tr)
		return tr.Commit()
	}
	err := commit(func(tr kv.Transaction) { tr.Set([]byte("k"), make([]byte, 10*kv.MaxValueSize)) })
	require.ErrorIs(t, err, kv.ErrValueTooLarge)
	err = commit(func(tr kv.Transaction) { tr.CompareAndClear([]byte("k"), make([]byte, 3*kv.MaxValueSize)) })
	require.ErrorIs(t, err, kv.ErrValueTooLarge)
	err = commit(func(tr kv.Transaction) { tr.BitAnd([]byte("k"), make([]byte, 3*kv.MaxValueSize)) })
	require.ErrorIs(t, err, kv.ErrValueTooLarge)
	long := bytes.Repeat([]byte("k"), 100_000)
	for _, write := range []func(kv.Transaction){
		func(tr kv.Transaction) { tr.Set(long, []byte("v")) },
		func(tr kv.Transaction) { tr.Clear(long) },
		func(tr kv.Transaction) { tr.Add(long, 1) },
		func(tr kv.Transaction) { tr.BitAnd(long, []byte{1}) },
		func(tr kv.Transaction) { tr.ClearRange(kv.Range{Begin: []byte("a"), End: long}) },
	} {
		require.ErrorIs(t, commit(write), kv.ErrKeyTooLarge)
	}
	tr, err := client.CreateTransaction(bg)
	require.NoError(t, err)
	defer tr.Cancel()
	_, err = tr.Get(long)
	require.ErrorIs(t, err, kv.ErrKeyTooLarge)
	_, err = kv.GetAsync(tr, long).Get()
	require.ErrorIs(t, err, kv.ErrKeyTooLarge)
	require.ErrorIs(t, tr.AddReadConflictKey(long), kv.ErrKeyTooLarge)
	_, err = kv.Collect(tr.GetRange(kv.Range{Begin: []byte("a"), End: long}, kv.RangeOptions{}))
	require.ErrorIs(t, err, kv.ErrKeyTooLarge)
	require.Nil(t, getKeyBytes(t, client, "k"), "nothing was written")
}

func getKeyBytes(t *testing.T, db kv.Database, key string) []byte {
	t.Helper()
	var v []byte
	require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
		var err error
		v, err = tr.Get([]byte(key))
		return err
	}))
	return v
}

// TestOptionalInterfaces: a DB's transactions offer what the engines
// offer, futures, GetMany, First, the metadata version, but not the
// certainties of the embedded engine: its commits can end in
// commit_unknown_result, and there is no commit queue.
func TestOptionalInterfaces(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	client := serve(t, db).dial(t, remote.Options{})
	var raw kv.Database = client
	_, certain := raw.(kv.CertainCommits)
	require.False(t, certain, "commits can end in 1021")
	tr, err := client.CreateTransaction(bg)
	require.NoError(t, err)
	defer tr.Cancel()
	_, queuer := tr.(kv.CommitQueuer)
	require.False(t, queuer, "no commit queue")
	type optional interface {
		GetMany([][]byte) ([][]byte, error)
		First(kv.Range, bool) (kv.KeyValue, bool, error)
		GetAsync([]byte) kv.FutureValue
		GetRangeAsync(kv.Range, kv.RangeOptions) kv.FutureRange
		MetadataVersion() ([]byte, error)
	}
	for _, rt := range []kv.ReadTransaction{tr, tr.Snapshot()} {
		_, ok := rt.(optional)
		require.True(t, ok, "%T", rt)
	}
	require.True(t, kv.BumpMetadataVersion(tr))
}

// TestNoMetadataVersion: a server whose engine has no metadata version
// says so in the handshake: MetadataVersion answers
// kv.ErrNoMetadataVersion (itself), and a bump does nothing.
func TestNoMetadataVersion(t *testing.T) {
	t.Parallel()
	hold, _ := newHoldDB(t) // its transactions hide the engine's metadata version
	client := serve(t, hold).dial(t, remote.Options{})
	require.NoError(t, client.Transact(bg, func(tr kv.Transaction) error {
		_, err := kv.MetadataVersion(tr)
		require.True(t, err == kv.ErrNoMetadataVersion, "%v", err)
		_, err = kv.MetadataVersion(tr.Snapshot())
		require.True(t, err == kv.ErrNoMetadataVersion, "%v", err)
		kv.BumpMetadataVersion(tr)
		tr.Set([]byte("k"), []byte("v"))
		return nil
	}))
	require.Equal(t, "v", getKey(t, client, "k"))
}
