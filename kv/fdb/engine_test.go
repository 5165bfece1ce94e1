//go:build fdb

package fdb_test

// Tests of the engine's own behaviour through the official bindings, one per
// finding of the adapter's review that running it confirmed (see the
// commit messages); most need the FoundationDB test double.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/internal/fdbshim"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/kv/fdb"
)

var bg = context.Background()

func open(t *testing.T, cfg fdb.Config) *fdb.DB {
	t.Helper()
	db, err := fdb.Open(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func setKeys(t *testing.T, db kv.Database, kvs ...string) {
	t.Helper()
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		for i := 0; i+1 < len(kvs); i += 2 {
			tr.Set([]byte(kvs[i]), []byte(kvs[i+1]))
		}
		return nil
	}))
}

// TestHandlesShared: every DB on a cluster file shares the process's one
// handle, which the bindings would destroy on each Close: closing one DB
// must leave the others working, and opening and closing concurrently must
// not race.
func TestHandlesShared(t *testing.T) {
	t.Parallel()
	c := shimCluster(t, fdbshim.Config{})
	a := open(t, fdb.Config{ClusterFile: c.ClusterFile(), Root: []byte("a")})
	b := open(t, fdb.Config{ClusterFile: c.ClusterFile(), Root: []byte("b")})
	require.NoError(t, a.Close())
	require.NoError(t, a.Close(), "Close twice is harmless")
	setKeys(t, b, "k", "v")

	tr, err := a.CreateTransaction(bg)
	require.Error(t, err, "a closed handle refuses transactions")
	require.Nil(t, tr)
	require.Equal(t, kv.CodeClientInvalidOperation, kv.Code(err))

	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 10; j++ {
				db, err := fdb.Open(fdb.Config{ClusterFile: c.ClusterFile()})
				if !assertNoError(t, err) {
					return
				}
				assertNoError(t, db.Transact(bg, func(tr kv.Transaction) error {
					tr.Add([]byte("n"), 1)
					return nil
				}))
				assertNoError(t, db.Close())
			}
		}()
	}
	wg.Wait()
	require.NoError(t, b.ReadTransact(bg, func(tr kv.ReadTransaction) error {
		v, err := tr.Get([]byte("k"))
		require.Equal(t, "v", string(v))
		return err
	}))
}

func assertNoError(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}

// TestRetryLimit: FoundationDB retries for ever by default; the engine
// stops at DefaultRetryLimit, or at the Config's limit.
func TestRetryLimit(t *testing.T) {
	t.Parallel()
	c := shimCluster(t, fdbshim.Config{})
	errRunaway := errors.New("retried past the limit")
	for _, tc := range []struct {
		limit, runs int
	}{
		{0, fdb.DefaultRetryLimit + 1},
		{3, 4},
		{-1, 2 * fdb.DefaultRetryLimit},
	} {
		db := open(t, fdb.Config{ClusterFile: c.ClusterFile(), RetryLimit: tc.limit, MaxRetryDelay: time.Millisecond})
		runs := 0
		err := db.Transact(bg, func(kv.Transaction) error {
			runs++
			if runs == 2*fdb.DefaultRetryLimit {
				return errRunaway // non-retryable: ends the loop
			}
			return kv.ErrNotCommitted
		})
		if tc.limit == -1 {
			require.ErrorIs(t, err, errRunaway, "no limit")
		} else {
			require.ErrorIs(t, err, kv.ErrNotCommitted, "limit %d", tc.limit)
		}
		require.Equal(t, tc.runs, runs, "limit %d", tc.limit)
	}
	_, err := fdb.Open(fdb.Config{ClusterFile: c.ClusterFile(), RetryLimit: -2})
	require.ErrorIs(t, err, fdb.ErrConfig)
}

// TestRootPrefix: keys live under the root prefix, FoundationDB's limits
// apply to the whole key, and the system key space is refused whatever the
// prefix hides.
func TestRootPrefix(t *testing.T) {
	t.Parallel()
	c := shimCluster(t, fdbshim.Config{})
	root := []byte("\x02app\x00")
	db := open(t, fdb.Config{ClusterFile: c.ClusterFile(), Root: root})
	setKeys(t, db, "a", "1", "b", "2")
	// Behind the client: the keys carry the prefix.
	require.NoError(t, c.DB().ReadTransact(bg, func(tr kv.ReadTransaction) error {
		kvs, err := kv.Collect(tr.GetRange(kv.PrefixRange(nil), kv.RangeOptions{}))
		require.Len(t, kvs, 2)
		require.Equal(t, append(bytes.Clone(root), 'a'), kvs[0].Key)
		return err
	}))

	commit := func(fn func(tr kv.Transaction)) error {
		tr, err := db.CreateTransaction(bg)
		require.NoError(t, err)
		defer tr.Cancel()
		fn(tr)
		return tr.Commit()
	}
	max := kv.MaxKeySize - len(root)
	require.NoError(t, commit(func(tr kv.Transaction) { tr.Set(bytes.Repeat([]byte("k"), max), nil) }))
	err := commit(func(tr kv.Transaction) { tr.Set(bytes.Repeat([]byte("k"), max+1), nil) })
	require.ErrorIs(t, err, kv.ErrKeyTooLarge)
	require.ErrorContains(t, err, "root prefix")

	err = commit(func(tr kv.Transaction) { tr.Set([]byte("\xffsys"), []byte("v")) })
	require.ErrorIs(t, err, kv.ErrKeyOutsideLegalRange)
	tr, err := db.CreateTransaction(bg)
	require.NoError(t, err)
	defer tr.Cancel()
	_, err = tr.Get([]byte("\xffsys"))
	require.Equal(t, 2004, kv.Code(err))
	_, err = kv.Collect(tr.GetRange(kv.Range{Begin: []byte("a"), End: []byte("\xff\xff")}, kv.RangeOptions{}))
	require.Equal(t, 2004, kv.Code(err))
	require.Equal(t, 2004, kv.Code(tr.AddReadConflictKey([]byte("\xff"))))

	// An invalid write is reported by Commit, and only there: reads go on.
	tr.Set([]byte("\xffsys"), []byte("v"))
	kvs, err := kv.Collect(tr.GetRange(kv.PrefixRange(nil), kv.RangeOptions{}))
	require.NoError(t, err)
	require.Equal(t, "a", string(kvs[0].Key), "the prefix is stripped")
	require.ErrorIs(t, tr.Commit(), kv.ErrKeyOutsideLegalRange)
}

// TestDeadlineAcrossRetries: a context's deadline is the transaction's
// timeout, counted from its creation; a retry in the second half of the
// budget must not shrink it into the past.
func TestDeadlineAcrossRetries(t *testing.T) {
	t.Parallel()
	c := shimCluster(t, fdbshim.Config{})
	db := open(t, fdb.Config{ClusterFile: c.ClusterFile()})
	ctx, cancel := context.WithTimeout(bg, 4*time.Second)
	defer cancel()
	runs := 0
	err := db.Transact(ctx, func(tr kv.Transaction) error {
		runs++
		if _, err := tr.Get([]byte("k")); err != nil {
			return err
		}
		if runs == 1 {
			time.Sleep(2500 * time.Millisecond) // past half the budget
			return kv.ErrNotCommitted
		}
		tr.Set([]byte("k"), []byte("v"))
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 2, runs)
}

// TestTimeouts: Config.Timeout is each transaction's own, not the shared
// handle's (the last DB opened would set it for all), and a longer context
// deadline does not lift it; a sub-millisecond timeout is 1 ms, not
// "none"; a deadline beyond FoundationDB's 2^31 ms does not make every
// operation fail.
func TestTimeouts(t *testing.T) {
	t.Parallel()
	slow := func(db kv.Database, ctx context.Context) error {
		tr, err := db.CreateTransaction(ctx)
		require.NoError(t, err)
		defer tr.Cancel()
		time.Sleep(300 * time.Millisecond)
		_, err = tr.Get([]byte("k"))
		return err
	}
	c := shimCluster(t, fdbshim.Config{})
	patient := open(t, fdb.Config{ClusterFile: c.ClusterFile()})
	hasty := open(t, fdb.Config{ClusterFile: c.ClusterFile(), Timeout: 100 * time.Millisecond})
	require.NoError(t, slow(patient, bg), "no timeout")
	require.ErrorIs(t, slow(hasty, bg), kv.ErrTransactionTimedOut)
	ctx, cancel := context.WithTimeout(bg, time.Minute)
	defer cancel()
	require.ErrorIs(t, slow(hasty, ctx), kv.ErrTransactionTimedOut, "the shorter of the two")

	tiny := open(t, fdb.Config{ClusterFile: shimCluster(t, fdbshim.Config{}).ClusterFile(), Timeout: 500 * time.Microsecond})
	require.ErrorIs(t, slow(tiny, bg), kv.ErrTransactionTimedOut)

	far, cancel := context.WithDeadline(bg, time.Now().Add(30*24*time.Hour))
	defer cancel()
	require.NoError(t, patient.Transact(far, func(tr kv.Transaction) error {
		_, err := tr.Get([]byte("k"))
		return err
	}))
}

// TestContextReachesFoundationDB: cancelling the context cancels the
// transaction, so a read blocked on an unreachable cluster returns, with
// the contract's error; a deadline likewise.
func TestContextReachesFoundationDB(t *testing.T) {
	t.Parallel()
	if !fdbshim.Available() {
		t.Skip("needs the FoundationDB test double")
	}
	file := fdbshim.WriteClusterFile(t, "unreachable")
	db := open(t, fdb.Config{ClusterFile: file})

	ctx, cancel := context.WithCancel(bg)
	tr, err := db.CreateTransaction(ctx)
	require.NoError(t, err)
	defer tr.Cancel()
	res := make(chan error, 1)
	go func() {
		_, err := tr.Get([]byte("k"))
		res <- err
	}()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case err = <-res:
	case <-time.After(30 * time.Second):
		t.Fatal("a read on an unreachable cluster still waits 30 s after its context was cancelled")
	}
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, kv.ErrTransactionCancelled)

	ctx, cancel = context.WithTimeout(bg, 50*time.Millisecond)
	defer cancel()
	err = db.Transact(ctx, func(tr kv.Transaction) error {
		_, err := tr.Get([]byte("k"))
		return err
	})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, kv.ErrTransactionCancelled)
}

// TestCommitInFlight: a commit cut short by the context's deadline (or a
// timeout) may have been applied: the error says so.
func TestCommitInFlight(t *testing.T) {
	t.Parallel()
	c := shimCluster(t, fdbshim.Config{Faults: &embedded.Faults{CommitLatency: 1500 * time.Millisecond}})
	db := open(t, fdb.Config{ClusterFile: c.ClusterFile()})
	ctx, cancel := context.WithTimeout(bg, 500*time.Millisecond)
	defer cancel()
	tr, err := db.CreateTransaction(ctx)
	require.NoError(t, err)
	defer tr.Cancel()
	tr.Set([]byte("k"), []byte("v"))
	err = tr.Commit()
	require.True(t, kv.IsMaybeCommitted(err), "%v", err)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, kv.ErrTransactionCancelled)
	// And indeed: the cluster applied it.
	require.Eventually(t, func() bool {
		var v []byte
		_ = c.DB().ReadTransact(bg, func(tr kv.ReadTransaction) error {
			v, err = tr.Get([]byte("k"))
			return err
		})
		return string(v) == "v"
	}, 30*time.Second, 10*time.Millisecond)
}

type rowErr struct{ err error }

func (e *rowErr) Error() string { return "row 7: " + e.err.Error() }
func (e *rowErr) Unwrap() error { return e.err }

// TestOnErrorReturnsTheCallersError: when FoundationDB does not retry, the
// caller gets its own error back, wrappers and detail included.
func TestOnErrorReturnsTheCallersError(t *testing.T) {
	t.Parallel()
	c := shimCluster(t, fdbshim.Config{})
	db := open(t, fdb.Config{ClusterFile: c.ClusterFile(), RetryLimit: 1, MaxRetryDelay: time.Millisecond})
	want := &rowErr{kv.Errorf(kv.CodeValueTooLarge, "value of row 7 too large")}
	err := db.Transact(bg, func(kv.Transaction) error { return want })
	var got *rowErr
	require.ErrorAs(t, err, &got)
	require.Same(t, want, got)

	conflict := fmt.Errorf("step 2: %w", kv.Errorf(kv.CodeNotCommitted, "injected"))
	err = db.Transact(bg, func(kv.Transaction) error { return conflict })
	require.Same(t, conflict, err, "at the retry limit")
}

// TestRangeReadConflictsOnlyWhatWasConsumed: a serializable scan that stops
// early conflicts with writes up to the last key it returned, not with the
// rest of the batch FoundationDB fetched (nor the batch the bindings
// prefetch).
func TestRangeReadConflictsOnlyWhatWasConsumed(t *testing.T) {
	t.Parallel()
	c := shimCluster(t, fdbshim.Config{})
	db := open(t, fdb.Config{ClusterFile: c.ClusterFile()})
	var kvs []string
	for i := 0; i < 50; i++ {
		kvs = append(kvs, fmt.Sprintf("q/%02d", i), "x")
	}
	setKeys(t, db, kvs...)
	scan := func(reverse bool, consume int, write string) error {
		tr, err := db.CreateTransaction(bg)
		require.NoError(t, err)
		defer tr.Cancel()
		it := tr.GetRange(kv.PrefixRange([]byte("q/")), kv.RangeOptions{Reverse: reverse})
		for i := 0; i < consume; i++ {
			require.True(t, it.Next())
		}
		setKeys(t, db, write, "y")
		tr.Set([]byte("out"), []byte("1"))
		return tr.Commit()
	}
	require.NoError(t, scan(false, 1, "q/10"))
	require.NoError(t, scan(false, 5, "q/05a"))
	require.ErrorIs(t, scan(false, 5, "q/03a"), kv.ErrNotCommitted)
	require.NoError(t, scan(true, 1, "q/40"))
	require.ErrorIs(t, scan(true, 3, "q/48a"), kv.ErrNotCommitted)
}

// TestUseAfterCommit: the contract's error codes, not FoundationDB's:
// client_invalid_operation after Commit, range_limits_invalid for a
// negative limit; and error texts that do not repeat the code.
func TestUseAfterCommit(t *testing.T) {
	t.Parallel()
	c := shimCluster(t, fdbshim.Config{})
	db := open(t, fdb.Config{ClusterFile: c.ClusterFile()})
	tr, err := db.CreateTransaction(bg)
	require.NoError(t, err)
	defer tr.Cancel()
	tr.Set([]byte("k"), []byte("v"))
	require.NoError(t, tr.Commit())
	_, err = tr.Get([]byte("k"))
	require.Equal(t, kv.CodeClientInvalidOperation, kv.Code(err))
	require.Equal(t, kv.CodeClientInvalidOperation, kv.Code(tr.Commit()))

	tr, err = db.CreateTransaction(bg)
	require.NoError(t, err)
	defer tr.Cancel()
	_, err = kv.Collect(tr.GetRange(kv.PrefixRange(nil), kv.RangeOptions{Limit: -1}))
	require.Equal(t, kv.CodeRangeLimitsInvalid, kv.Code(err))

	err = db.Transact(bg, func(tr kv.Transaction) error {
		tr.Set([]byte("k"), make([]byte, 10))
		for i := 0; i <= kv.MaxTransactionSize/kv.MaxValueSize; i++ {
			tr.Set([]byte(fmt.Sprint("big", i)), make([]byte, kv.MaxValueSize))
		}
		return nil
	})
	require.ErrorIs(t, err, kv.ErrTransactionTooLarge)
	require.NotContains(t, err.Error(), "error code", "the code is printed once: %v", err)
	require.Contains(t, err.Error(), "Transaction exceeds byte limit", "FoundationDB's own text")
}

// TestTenant: a Config.Tenant's keys are the tenant's; a tenant that does
// not exist fails with tenant_not_found.
func TestTenant(t *testing.T) {
	t.Parallel()
	c := shimCluster(t, fdbshim.Config{})
	missing := open(t, fdb.Config{ClusterFile: c.ClusterFile(), Tenant: "nope"})
	err := missing.Transact(bg, func(tr kv.Transaction) error {
		_, err := tr.Get([]byte("k"))
		return err
	})
	require.Equal(t, 2131, kv.Code(err), "%v", err)

	c.CreateTenant("acme")
	acme := open(t, fdb.Config{ClusterFile: c.ClusterFile(), Tenant: "acme"})
	setKeys(t, acme, string(bytes.Repeat([]byte("k"), kv.MaxKeySize)), "v")
	require.NoError(t, c.DB().ReadTransact(bg, func(tr kv.ReadTransaction) error {
		kvs, err := kv.Collect(tr.GetRange(kv.PrefixRange(nil), kv.RangeOptions{}))
		require.Empty(t, kvs, "the tenant's keys are not the cluster's")
		return err
	}))
}

// TestMetadataVersionOfTheCluster: the metadata version is the cluster's
// one \xff/metadataVersion, outside the root prefix: a bump under one root
// changes what every root reads.
func TestMetadataVersionOfTheCluster(t *testing.T) {
	t.Parallel()
	c := shimCluster(t, fdbshim.Config{})
	a := open(t, fdb.Config{ClusterFile: c.ClusterFile(), Root: []byte("a")})
	b := open(t, fdb.Config{ClusterFile: c.ClusterFile(), Root: []byte("b")})
	read := func(db kv.Database) []byte {
		var v []byte
		require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) (err error) {
			v, err = kv.MetadataVersion(tr)
			return err
		}))
		return v
	}
	require.Nil(t, read(b))
	require.NoError(t, a.Transact(bg, func(tr kv.Transaction) error {
		require.True(t, kv.BumpMetadataVersion(tr))
		return nil
	}))
	require.Len(t, read(b), 10)
	require.Equal(t, read(a), read(b))
}
