//go:build fdb

package fdbshim_test

// The test double through the official bindings: what the real client
// library does, checked on the double. The comments cite FoundationDB 7.3's
// sources (fdb_c.cpp, ReadYourWrites.actor.cpp, NativeAPI.actor.cpp).

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apple/foundationdb/bindings/go/src/fdb"
	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/internal/fdbshim"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
)

func TestMain(m *testing.M) {
	if fdbshim.Available() {
		fdb.MustAPIVersion(730)
	}
	os.Exit(m.Run())
}

func cluster(t *testing.T, cfg fdbshim.Config) (*fdbshim.Cluster, fdb.Database) {
	t.Helper()
	if !fdbshim.Available() {
		t.Skip("the test binary does not link the test double (internal/fdbshim/build.sh, see .ci/run)")
	}
	c := fdbshim.NewCluster(t, cfg)
	// Not OpenDatabase: its map of handles is not safe for parallel tests.
	db, err := fdb.OpenWithConnectionString(c.ConnectionString())
	require.NoError(t, err)
	t.Cleanup(db.Close)
	return c, db
}

func code(err error) int {
	var fe fdb.Error
	if errors.As(err, &fe) {
		return fe.Code
	}
	return 0
}

func newTr(t *testing.T, db fdb.Database) fdb.Transaction {
	t.Helper()
	tr, err := db.CreateTransaction()
	require.NoError(t, err)
	return tr
}

func set(t *testing.T, db fdb.Database, kvs ...string) {
	t.Helper()
	_, err := db.Transact(func(tr fdb.Transaction) (any, error) {
		for i := 0; i+1 < len(kvs); i += 2 {
			tr.Set(fdb.Key(kvs[i]), []byte(kvs[i+1]))
		}
		return nil, nil
	})
	require.NoError(t, err)
}

// TestErrorTexts: fdb_get_error gives the real client's texts.
func TestErrorTexts(t *testing.T) {
	t.Parallel()
	cluster(t, fdbshim.Config{})
	for c, text := range map[int]string{
		1007: "Transaction is too old to perform reads or be committed",
		1020: "Transaction not committed due to conflict with another transaction",
		1021: "Transaction may or may not have committed",
		1025: "Operation aborted because the transaction was cancelled",
		1031: "Operation aborted because the transaction timed out",
		1032: "Too many watches currently set",
		1036: "Read or wrote an unreadable key",
		2004: "Key outside legal range",
		2017: "Operation issued while a commit was outstanding",
		1234: "UNKNOWN_ERROR",
		-5:   "An unknown error occurred",
	} {
		require.Equal(t, fmt.Sprintf("FoundationDB error code %d (%s)", c, text), fdb.Error{Code: c}.Error())
	}
}

// TestFutures: futures as the bindings use them: ready or not, waited on by
// several goroutines at once (several callbacks), cancelled.
func TestFutures(t *testing.T) {
	t.Parallel()
	_, db := cluster(t, fdbshim.Config{})
	set(t, db, "k", "v")
	tr := newTr(t, db)
	f := tr.Get(fdb.Key("k"))
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.BlockUntilReady()
		}()
	}
	wg.Wait()
	require.True(t, f.IsReady())
	v, err := f.Get()
	require.NoError(t, err)
	require.Equal(t, "v", string(v))
	f.Cancel() // no effect once ready
	v, err = f.Get()
	require.NoError(t, err)
	require.Equal(t, "v", string(v))

	// A future that never becomes ready by itself: a read on a cluster
	// that does not answer.
	down, err := fdb.OpenWithConnectionString("fdbshim:down@127.0.0.1:4500")
	require.NoError(t, err)
	defer down.Close()
	f = newTr(t, down).Get(fdb.Key("k"))
	require.False(t, f.IsReady())
	f.Cancel()
	_, err = f.Get()
	require.Equal(t, 1101, code(err), "operation_cancelled: %v", err)
}

// TestOnError: on_error's rules (NativeAPI's Transaction::onError under
// RYW's): which codes retry, the retry limit, what a failed on_error leaves.
func TestOnError(t *testing.T) {
	t.Parallel()
	_, db := cluster(t, fdbshim.Config{})
	for _, c := range []int{1007, 1009, 1020, 1021, 1037, 1038, 1051, 1213} {
		tr := newTr(t, db)
		tr.Set(fdb.Key("k"), []byte("v"))
		require.NoError(t, tr.OnError(fdb.Error{Code: c}).Get(), "code %d retries", c)
		// The retry starts afresh: the write is gone.
		v, err := tr.Get(fdb.Key("k")).Get()
		require.NoError(t, err)
		require.Nil(t, v, "code %d", c)
	}
	for _, c := range []int{1025, 1031, 2004, 2101, 4100} {
		tr := newTr(t, db)
		require.Equal(t, c, code(tr.OnError(fdb.Error{Code: c}).Get()), "code %d is returned", c)
		_, err := tr.Get(fdb.Key("k")).Get()
		require.Equal(t, 1025, code(err), "then the transaction is cancelled (code %d)", c)
		tr.Reset()
		_, err = tr.Get(fdb.Key("k")).Get()
		require.NoError(t, err, "until it is reset")
	}
	require.Equal(t, 2000, code(newTr(t, db).OnError(fdb.Error{Code: 0}).Get()))

	tr := newTr(t, db)
	require.NoError(t, tr.Options().SetRetryLimit(2))
	require.NoError(t, tr.Options().SetMaxRetryDelay(1))
	require.NoError(t, tr.OnError(fdb.Error{Code: 1020}).Get())
	require.NoError(t, tr.OnError(fdb.Error{Code: 1020}).Get(), "the limit persists across retries")
	require.Equal(t, 1020, code(tr.OnError(fdb.Error{Code: 1020}).Get()), "limit reached")

	// Unlimited by default, backing off at most max_retry_delay.
	tr = newTr(t, db)
	require.NoError(t, tr.Options().SetMaxRetryDelay(1))
	for i := 0; i < 200; i++ {
		require.NoError(t, tr.OnError(fdb.Error{Code: 1020}).Get())
	}

	tr = newTr(t, db)
	tr.Cancel()
	require.Equal(t, 1025, code(tr.OnError(fdb.Error{Code: 1020}).Get()), "cancelled: that error, not the code")

	// Database options are every transaction's defaults.
	require.NoError(t, db.Options().SetTransactionRetryLimit(0))
	tr = newTr(t, db)
	require.Equal(t, 1020, code(tr.OnError(fdb.Error{Code: 1020}).Get()))
	require.NoError(t, db.Options().SetTransactionRetryLimit(-1))
}

// TestTimeout: the timeout counts from the transaction's creation (not from
// the option, nor from on_error), fails what is outstanding, and ends the
// transaction until reset.
func TestTimeout(t *testing.T) {
	t.Parallel()
	_, db := cluster(t, fdbshim.Config{})
	tr := newTr(t, db)
	_, err := tr.Get(fdb.Key("k")).Get()
	require.NoError(t, err)
	time.Sleep(60 * time.Millisecond)
	require.NoError(t, tr.Options().SetTimeout(50))
	_, err = tr.Get(fdb.Key("k")).Get()
	require.Equal(t, 1031, code(err), "already past creation + 50 ms")
	require.Equal(t, 1031, code(tr.OnError(fdb.Error{Code: 1020}).Get()))
	require.Equal(t, 1031, code(tr.Commit().Get()))
	tr.Reset()
	_, err = tr.Get(fdb.Key("k")).Get()
	require.NoError(t, err, "reset: a new creation time, and no timeout")

	// An outstanding read fails when the timeout fires.
	down, err := fdb.OpenWithConnectionString("fdbshim:down@127.0.0.1:4500")
	require.NoError(t, err)
	defer down.Close()
	tr = newTr(t, down)
	require.NoError(t, tr.Options().SetTimeout(50))
	_, err = tr.Get(fdb.Key("k")).Get()
	require.Equal(t, 1031, code(err))

	// Invalid values are deferred to the next operation.
	tr = newTr(t, db)
	require.NoError(t, tr.Options().SetTimeout(1<<31))
	_, err = tr.Get(fdb.Key("k")).Get()
	require.Equal(t, 2006, code(err), "invalid_option_value")
}

// TestUsedDuringCommit: an operation issued while a commit is outstanding
// fails with used_during_commit, and so does the commit; so does any
// operation after a commit.
func TestUsedDuringCommit(t *testing.T) {
	t.Parallel()
	_, db := cluster(t, fdbshim.Config{Faults: &embedded.Faults{CommitLatency: 100 * time.Millisecond}})
	tr := newTr(t, db)
	tr.Set(fdb.Key("k"), []byte("v"))
	commit := tr.Commit()
	_, err := tr.Get(fdb.Key("k")).Get()
	require.Equal(t, 2017, code(err))
	require.Equal(t, 2017, code(commit.Get()))

	tr = newTr(t, db)
	tr.Set(fdb.Key("k"), []byte("v"))
	require.NoError(t, tr.Commit().Get())
	_, err = tr.Get(fdb.Key("k")).Get()
	require.Equal(t, 2017, code(err))
	require.Equal(t, 2017, code(tr.Commit().Get()))
}

// TestDeferredErrors: set, clear and atomic_op return nothing; their errors
// fail the next read and the commit, and later writes are skipped.
func TestDeferredErrors(t *testing.T) {
	t.Parallel()
	_, db := cluster(t, fdbshim.Config{})
	for name, tc := range map[string]struct {
		write func(tr fdb.Transaction)
		code  int
	}{
		"system key":     {func(tr fdb.Transaction) { tr.Set(fdb.Key("\xffx"), nil) }, 2004},
		"key too large":  {func(tr fdb.Transaction) { tr.Set(fdb.Key(bytes.Repeat([]byte("k"), 10_001)), nil) }, 2102},
		"value too big":  {func(tr fdb.Transaction) { tr.Set(fdb.Key("k"), make([]byte, 100_001)) }, 2103},
		"inverted clear": {func(tr fdb.Transaction) { tr.ClearRange(fdb.KeyRange{Begin: fdb.Key("b"), End: fdb.Key("a")}) }, 2005},
		"max":            {func(tr fdb.Transaction) { tr.Max(fdb.Key("k"), make([]byte, 8)) }, 2108},
		"short add":      {func(tr fdb.Transaction) { tr.Add(fdb.Key("k"), make([]byte, 4)) }, 2108},
		"versionstamp":   {func(tr fdb.Transaction) { tr.SetVersionstampedValue(fdb.Key("k"), make([]byte, 14)) }, 2108},
		"write range": {func(tr fdb.Transaction) {
			_ = tr.AddWriteConflictRange(fdb.KeyRange{Begin: fdb.Key("a"), End: fdb.Key("b")})
		}, 2108},
	} {
		tr := newTr(t, db)
		tc.write(tr)
		tr.Set(fdb.Key("later"), []byte("x"))
		_, err := tr.Get(fdb.Key("k")).Get()
		require.Equal(t, tc.code, code(err), name)
		require.Equal(t, tc.code, code(tr.Commit().Get()), name)
	}
	// The one synchronous check.
	err := newTr(t, db).AddReadConflictRange(fdb.KeyRange{Begin: fdb.Key("b"), End: fdb.Key("a")})
	require.Equal(t, 2005, code(err))
}

// TestReads: reads as the real client answers them: empty and absent
// values, inverted ranges (nothing, no error), key selectors, limits.
func TestReads(t *testing.T) {
	t.Parallel()
	_, db := cluster(t, fdbshim.Config{})
	set(t, db, "a", "1", "b", "", "c", "3", "d", "4")
	tr := newTr(t, db)
	v, err := tr.Get(fdb.Key("b")).Get()
	require.NoError(t, err)
	require.NotNil(t, v)
	require.Empty(t, v)
	v, err = tr.Get(fdb.Key("zz")).Get()
	require.NoError(t, err)
	require.Nil(t, v)
	v, err = tr.Get(fdb.Key(bytes.Repeat([]byte("k"), 20_000))).Get()
	require.NoError(t, err, "no key is that long: absent")
	require.Nil(t, v)
	_, err = tr.Get(fdb.Key("\xff")).Get()
	require.Equal(t, 2004, code(err))

	keys := func(r fdb.Range, opts fdb.RangeOptions) []string {
		kvs, err := tr.GetRange(r, opts).GetSliceWithError()
		require.NoError(t, err)
		var out []string
		for _, e := range kvs {
			out = append(out, string(e.Key))
		}
		return out
	}
	all := fdb.KeyRange{Begin: fdb.Key(""), End: fdb.Key("\xff")}
	require.Equal(t, []string{"a", "b", "c", "d"}, keys(all, fdb.RangeOptions{}))
	require.Equal(t, []string{"d", "c"}, keys(all, fdb.RangeOptions{Reverse: true, Limit: 2}))
	require.Empty(t, keys(fdb.KeyRange{Begin: fdb.Key("c"), End: fdb.Key("a")}, fdb.RangeOptions{}), "inverted: empty")
	require.Equal(t, []string{"b", "c"}, keys(fdb.SelectorRange{
		Begin: fdb.FirstGreaterThan(fdb.Key("a")), End: fdb.KeySelector{Key: fdb.Key("c"), OrEqual: true, Offset: 1},
	}, fdb.RangeOptions{}))
	require.Equal(t, []string{"c"}, keys(fdb.SelectorRange{
		Begin: fdb.KeySelector{Key: fdb.Key("a"), Offset: 3}, End: fdb.LastLessOrEqual(fdb.Key("d")),
	}, fdb.RangeOptions{}), "from the third key at or after a to the last key at or before d, excluded")
	for _, tc := range []struct {
		sel  fdb.KeySelector
		want string
	}{
		{fdb.FirstGreaterOrEqual(fdb.Key("b")), "b"},
		{fdb.FirstGreaterThan(fdb.Key("b")), "c"},
		{fdb.LastLessThan(fdb.Key("c")), "b"},
		{fdb.LastLessOrEqual(fdb.Key("c")), "c"},
		{fdb.KeySelector{Key: fdb.Key("a"), OrEqual: true, Offset: 3}, "d"},
		{fdb.KeySelector{Key: fdb.Key("d"), Offset: -1}, "b"},
		{fdb.LastLessThan(fdb.Key("a")), ""},
		{fdb.FirstGreaterThan(fdb.Key("d")), "\xff"},
	} {
		k, err := tr.GetKey(tc.sel).Get()
		require.NoError(t, err)
		require.Equal(t, tc.want, string(k), "%+v", tc.sel)
	}
	_, err = tr.GetRange(all, fdb.RangeOptions{Limit: -2}).GetSliceWithError()
	require.Equal(t, 2012, code(err), "range_limits_invalid")
	require.Equal(t, []string{"a", "b", "c", "d"}, keys(all, fdb.RangeOptions{Limit: -1}), "-1 is the C API's 'no limit'")
	_, err = tr.GetRange(all, fdb.RangeOptions{Mode: fdb.StreamingModeExact}).GetSliceWithError()
	require.Equal(t, 2210, code(err), "exact_mode_without_limits")
}

// TestRangeBatches: a range read is served in batches of the streaming
// mode's size (iterator: 4096 bytes first), each conflicting with all it
// covered, consumed or not.
func TestRangeBatches(t *testing.T) {
	t.Parallel()
	_, db := cluster(t, fdbshim.Config{})
	var kvs []string
	for i := 0; i < 100; i++ {
		kvs = append(kvs, fmt.Sprintf("r/%03d", i), strings.Repeat("v", 95)) // 8+5+95 = 108 bytes a row
	}
	set(t, db, kvs...)
	scan := func(write string) error {
		tr := newTr(t, db)
		it := tr.GetRange(fdb.KeyRange{Begin: fdb.Key("r/"), End: fdb.Key("r0")}, fdb.RangeOptions{}).Iterator()
		require.True(t, it.Advance())
		_, err := it.Get()
		require.NoError(t, err)
		set(t, db, write, "x")
		tr.Set(fdb.Key("out"), nil)
		return tr.Commit().Get()
	}
	require.Equal(t, 1020, code(scan("r/030")), "the first batch holds 38 rows")
	require.NoError(t, scan("r/039"), "and no more")
}

// TestReadCache: a key read before is answered by the transaction, even
// past the 5-second limit; another key then fails with
// transaction_too_old, and so does the commit.
func TestReadCache(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	_, db := cluster(t, fdbshim.Config{Clock: clock})
	set(t, db, "k", "v", "k2", "v2")
	tr := newTr(t, db)
	_, err := tr.Snapshot().Get(fdb.Key("k")).Get()
	require.NoError(t, err)
	tr.Set(fdb.Key("mine"), []byte("m"))
	mu.Lock()
	now = now.Add(6 * time.Second)
	mu.Unlock()
	v, err := tr.Get(fdb.Key("k")).Get()
	require.NoError(t, err)
	require.Equal(t, "v", string(v))
	v, err = tr.Get(fdb.Key("mine")).Get()
	require.NoError(t, err)
	require.Equal(t, "m", string(v))
	_, err = tr.Get(fdb.Key("k2")).Get()
	require.Equal(t, 1007, code(err))
	require.Equal(t, 1007, code(tr.Commit().Get()))
}

// TestReadVersionAtFirstRead: a transaction that only adds conflict ranges
// takes its read version at commit, after a write made meanwhile.
func TestReadVersionAtFirstRead(t *testing.T) {
	t.Parallel()
	_, db := cluster(t, fdbshim.Config{})
	tr := newTr(t, db)
	require.NoError(t, tr.AddReadConflictKey(fdb.Key("k")))
	set(t, db, "k", "v")
	tr.Set(fdb.Key("out"), nil)
	require.NoError(t, tr.Commit().Get())

	tr = newTr(t, db)
	_, err := tr.GetReadVersion().Get()
	require.NoError(t, err)
	require.NoError(t, tr.AddReadConflictKey(fdb.Key("k")))
	set(t, db, "k", "w")
	tr.Set(fdb.Key("out"), nil)
	require.Equal(t, 1020, code(tr.Commit().Get()))
}

// TestWatches: a watch fires once its transaction committed and the value
// changed; fails with its transaction; and counts against max_watches.
func TestWatches(t *testing.T) {
	t.Parallel()
	c, db := cluster(t, fdbshim.Config{})
	set(t, db, "k", "1")
	tr := newTr(t, db)
	w := tr.Watch(fdb.Key("k"))
	require.False(t, w.IsReady())
	require.NoError(t, tr.Commit().Get())
	set(t, db, "k", "1") // the same value: no change
	time.Sleep(20 * time.Millisecond)
	require.False(t, w.IsReady())
	set(t, db, "k", "2")
	require.NoError(t, w.Get())

	tr = newTr(t, db)
	w = tr.Watch(fdb.Key("k"))
	tr.Cancel()
	require.Equal(t, 1025, code(w.Get()), "cancelled before its commit")

	require.NoError(t, db.Options().SetMaxWatches(1))
	// A watch whose commit fails fails with it, and no longer counts once
	// the commit's failure is known.
	tr = newTr(t, db)
	_, err := tr.Get(fdb.Key("x")).Get()
	require.NoError(t, err)
	w = tr.Watch(fdb.Key("a"))
	set(t, db, "x", "changed")
	tr.Set(fdb.Key("y"), nil)
	require.Equal(t, 1020, code(tr.Commit().Get()))

	tr = newTr(t, db)
	w1 := tr.Watch(fdb.Key("a"))
	require.NoError(t, tr.Commit().Get())
	require.False(t, w1.IsReady(), "w1 was refused: the failed watch still counted")
	require.Equal(t, 1020, code(w.Get()))
	tr = newTr(t, db)
	w2 := tr.Watch(fdb.Key("b"))
	require.NoError(t, tr.Commit().Get())
	require.True(t, w2.IsReady(), "w2 was not refused") // (else Get waits for good)
	require.Equal(t, 1032, code(w2.Get()), "too_many_watches")
	w1.Cancel()
	require.Equal(t, 1101, code(w1.Get()))
	_ = c
}

// TestFaults: the embedded engine's injected faults reach the client as
// the real client reports them; an "applied" unknown result is applied.
func TestFaults(t *testing.T) {
	t.Parallel()
	c, db := cluster(t, fdbshim.Config{Faults: &embedded.Faults{UnknownApplied: 1}})
	tr := newTr(t, db)
	tr.Set(fdb.Key("k"), []byte("v"))
	require.Equal(t, 1021, code(tr.Commit().Get()))
	require.NoError(t, c.DB().ReadTransact(t.Context(), func(tr kv.ReadTransaction) error {
		v, err := tr.Get([]byte("k"))
		require.Equal(t, "v", string(v))
		return err
	}))
	require.Equal(t, map[int]int{1021: 1}, c.CommitErrors())
}

// TestClusterFiles: the cluster file as the real client reads it.
func TestClusterFiles(t *testing.T) {
	t.Parallel()
	cluster(t, fdbshim.Config{})
	dir := t.TempDir()
	_, err := fdb.OpenDatabase(filepath.Join(dir, "missing.cluster"))
	require.Equal(t, 1515, code(err), "no_cluster_file_found")
	bad := filepath.Join(dir, "bad.cluster")
	require.NoError(t, os.WriteFile(bad, []byte("not a cluster\n"), 0o644))
	_, err = fdb.OpenDatabase(bad)
	require.Equal(t, 2104, code(err), "connection_string_invalid")
}

// TestTenants: a tenant's keys are its own; a tenant must exist.
func TestTenants(t *testing.T) {
	t.Parallel()
	c, db := cluster(t, fdbshim.Config{})
	missing, err := db.OpenTenant(fdb.Key("nope"))
	require.NoError(t, err, "opening does not check")
	_, err = missing.ReadTransact(func(tr fdb.ReadTransaction) (any, error) { return tr.Get(fdb.Key("k")).Get() })
	require.Equal(t, 2131, code(err))
	c.CreateTenant("acme")
	acme, err := db.OpenTenant(fdb.Key("acme"))
	require.NoError(t, err)
	_, err = acme.Transact(func(tr fdb.Transaction) (any, error) {
		tr.Set(fdb.Key("k"), []byte("acme"))
		return nil, nil
	})
	require.NoError(t, err)
	v, err := db.ReadTransact(func(tr fdb.ReadTransaction) (any, error) { return tr.Get(fdb.Key("k")).Get() })
	require.NoError(t, err)
	require.Nil(t, v)
}

// TestMiscellany: the C API's other functions answer sensibly.
func TestMiscellany(t *testing.T) {
	t.Parallel()
	_, db := cluster(t, fdbshim.Config{})
	set(t, db, "a", "12345", "b", "12345", "c", "12345")
	tr := newTr(t, db)
	tr.Set(fdb.Key("x"), []byte("yz"))
	n, err := tr.GetApproximateSize().Get()
	require.NoError(t, err)
	require.Equal(t, int64(3), n)
	all := fdb.KeyRange{Begin: fdb.Key(""), End: fdb.Key("\xff")}
	n, err = tr.GetEstimatedRangeSizeBytes(all).Get()
	require.NoError(t, err)
	require.Equal(t, int64(18), n)
	points, err := tr.GetRangeSplitPoints(all, 6).Get()
	require.NoError(t, err)
	require.Equal(t, []fdb.Key{fdb.Key(""), fdb.Key("b"), fdb.Key("c"), fdb.Key("\xff")}, points)
	addrs, err := tr.LocalityGetAddressesForKey(fdb.Key("a")).Get()
	require.NoError(t, err)
	require.Equal(t, []string{"127.0.0.1:4500"}, addrs)
	rv, err := tr.GetReadVersion().Get()
	require.NoError(t, err)
	require.Positive(t, rv)
	_, err = tr.GetVersionstamp().Get()
	require.Equal(t, 2108, code(err), "unsupported")
	_, err = tr.GetCommittedVersion()
	require.Equal(t, 2108, code(err), "unsupported")
	tr.Add(fdb.Key("n"), binary.LittleEndian.AppendUint64(nil, 5))
	tr.CompareAndClear(fdb.Key("a"), []byte("12345"))
	require.NoError(t, tr.Commit().Get())
	v, err := db.ReadTransact(func(tr fdb.ReadTransaction) (any, error) { return tr.Get(fdb.Key("a")).Get() })
	require.NoError(t, err)
	require.Nil(t, v)
}

// TestOnlyTestsImportIt: the test double stays out of every build but
// tests'.
func TestOnlyTestsImportIt(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		if strings.HasPrefix(filepath.ToSlash(path), "../../internal/fdbshim/") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			require.NotEqual(t, "github.com/fdbqueue/fdbqueue/internal/fdbshim", p, "%s imports the test double", path)
		}
		return nil
	})
	require.NoError(t, err)
}

// TestMetadataVersion: \xff/metadataVersion as the real client has it. A
// transaction reads it without a system-key option (RYW's get lets the key
// through), as of its read version; only a SET_VERSIONSTAMPED_VALUE of 14
// zero bytes writes it (RYW's atomicOp and set refuse anything else with
// client_invalid_operation), storing the commit's 10-byte versionstamp; a
// read of it after such a bump fails with accessed_unreadable, and so does
// the commit, which waits for every read (RYW's commit). A serializable read,
// or an explicit read conflict range on the key (RYW's addReadConflictRange
// lets it through), conflicts with a later bump; a snapshot read does not.
func TestMetadataVersion(t *testing.T) {
	t.Parallel()
	_, db := cluster(t, fdbshim.Config{})
	key := fdb.Key(kv.MetadataVersionKey)
	read := func(r fdb.ReadTransaction) []byte {
		v, err := r.Get(key).Get()
		require.NoError(t, err)
		return v
	}
	bump := func() {
		_, err := db.Transact(func(tr fdb.Transaction) (any, error) {
			tr.SetVersionstampedValue(key, make([]byte, 14))
			return nil, nil
		})
		require.NoError(t, err)
	}
	require.Nil(t, read(newTr(t, db)), "never bumped")
	old := newTr(t, db)
	_, err := old.GetReadVersion().Get()
	require.NoError(t, err)
	bump()
	v1 := read(newTr(t, db))
	require.Len(t, v1, 10)
	require.Nil(t, read(old), "as of the read version")
	bump()
	require.Positive(t, bytes.Compare(read(newTr(t, db)), v1))

	for name, write := range map[string]func(tr fdb.Transaction){
		"set":                    func(tr fdb.Transaction) { tr.Set(key, make([]byte, 10)) },
		"add":                    func(tr fdb.Transaction) { tr.Add(key, make([]byte, 8)) },
		"another versionstamp":   func(tr fdb.Transaction) { tr.SetVersionstampedValue(key, make([]byte, 15)) },
		"versionstamp elsewhere": func(tr fdb.Transaction) { tr.SetVersionstampedValue(key, append(make([]byte, 13), 1)) },
	} {
		tr := newTr(t, db)
		write(tr)
		require.Equal(t, 2000, code(tr.Commit().Get()), name)
	}
	tr := newTr(t, db)
	tr.Clear(key)
	require.Equal(t, 2004, code(tr.Commit().Get()), "a clear is a write of a system key")

	// Unreadable after a bump, and the commit fails with it.
	tr = newTr(t, db)
	tr.SetVersionstampedValue(key, make([]byte, 14))
	_, err = tr.Get(key).Get()
	require.Equal(t, 1036, code(err))
	_, err = tr.Snapshot().Get(key).Get()
	require.Equal(t, 1036, code(err))
	require.Equal(t, 1036, code(tr.Commit().Get()))
	require.Equal(t, 1036, code(tr.OnError(fdb.Error{Code: 1036}).Get()), "not retryable")

	// Conflicts.
	for name, tc := range map[string]struct {
		read     func(tr fdb.Transaction)
		conflict bool
	}{
		"serializable read": {func(tr fdb.Transaction) { read(tr) }, true},
		"snapshot read":     {func(tr fdb.Transaction) { read(tr.Snapshot()) }, false},
		"read conflict": {func(tr fdb.Transaction) {
			require.NoError(t, tr.AddReadConflictKey(key))
		}, true},
	} {
		tr := newTr(t, db)
		_, err := tr.Get(fdb.Key("k")).Get()
		require.NoError(t, err)
		tc.read(tr)
		bump()
		tr.Set(fdb.Key("out"), []byte("1"))
		err = tr.Commit().Get()
		if tc.conflict {
			require.Equal(t, 1020, code(err), name)
		} else {
			require.NoError(t, err, name)
		}
	}
}
