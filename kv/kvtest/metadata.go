package kvtest

import (
	"bytes"
	"encoding/binary"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// The contract of the metadata version (kv.MetadataVersion,
// kv.BumpMetadataVersion). An engine without one skips these tests.

// metadataTests are Run's tests of the metadata version.
var metadataTests = []struct {
	name string
	fn   func(t *testing.T, in Instance)
}{
	{"MetadataVersionAtReadVersion", testMetadataVersionAtReadVersion},
	{"MetadataVersionUnreadableAfterBump", testMetadataVersionUnreadableAfterBump},
	{"MetadataVersionConflicts", testMetadataVersionConflicts},
	{"MetadataVersionWithItsCommit", testMetadataVersionWithItsCommit},
}

// metadataVersion reads the metadata version through r, skipping t on an
// engine without one.
func metadataVersion(t *testing.T, r kv.ReadTransaction) []byte {
	t.Helper()
	v, err := kv.MetadataVersion(r)
	if err == kv.ErrNoMetadataVersion {
		t.Skip("the engine has no metadata version")
	}
	require.NoError(t, err)
	return v
}

// bump commits a transaction that bumps the metadata version and returns
// the version a new transaction then reads.
func bump(t *testing.T, db kv.Database) []byte {
	t.Helper()
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		require.True(t, kv.BumpMetadataVersion(tr))
		return nil
	}))
	return metadataVersion(t, newTr(t, db))
}

// testMetadataVersionAtReadVersion: the metadata version is nil until a
// commit bumps it, then that commit's versionstamp (10 bytes), greater at
// each bump; a transaction reads the one at its read version, as it reads
// keys; commits that do not bump it leave it as it is.
func testMetadataVersionAtReadVersion(t *testing.T, in Instance) {
	require.Nil(t, metadataVersion(t, newTr(t, in.DB)), "never bumped")

	old := newTr(t, in.DB)
	_, err := old.GetReadVersion()
	require.NoError(t, err)
	v1 := bump(t, in.DB)
	require.Len(t, v1, 10, "a versionstamp")
	require.Nil(t, metadataVersion(t, old), "as of the read version, taken before the bump")
	require.Nil(t, metadataVersion(t, old.Snapshot()))

	set(t, in.DB, "k", "v")
	tr := newTr(t, in.DB)
	require.Equal(t, v1, metadataVersion(t, tr), "a commit that does not bump it leaves it")
	require.Equal(t, v1, metadataVersion(t, tr.Snapshot()))

	v2 := bump(t, in.DB)
	require.Positive(t, bytes.Compare(v2, v1), "a later bump's version is greater: %x after %x", v2, v1)
	require.Equal(t, v1, metadataVersion(t, tr), "the same transaction still reads at its read version")

	// A transaction that bumps it and writes nothing else commits, and is
	// a write (a read-only commit would change nothing).
	require.NoError(t, in.DB.Transact(bg, func(tr kv.Transaction) error {
		kv.BumpMetadataVersion(tr)
		tr.Set([]byte("k"), []byte("w"))
		return nil
	}))
	require.Equal(t, "w", string(get(t, in.DB, "k")))
	require.Positive(t, bytes.Compare(metadataVersion(t, newTr(t, in.DB)), v2))
}

// testMetadataVersionUnreadableAfterBump: a transaction that bumped the
// metadata version cannot read it (its value is the commit's
// versionstamp), with accessed_unreadable (1036); it can still commit, and
// a retry starts without the bump.
func testMetadataVersionUnreadableAfterBump(t *testing.T, in Instance) {
	tr := newTr(t, in.DB)
	v0 := metadataVersion(t, tr)
	kv.BumpMetadataVersion(tr)
	_, err := kv.MetadataVersion(tr)
	require.ErrorIs(t, err, kv.ErrAccessedUnreadable)
	_, err = kv.MetadataVersion(tr.Snapshot())
	require.ErrorIs(t, err, kv.ErrAccessedUnreadable, "through the snapshot view too")
	require.False(t, kv.IsRetryable(err))
	tr.Set([]byte("k"), []byte("v"))
	require.NoError(t, tr.Commit(), "the refused read leaves the transaction as it was")
	v1 := metadataVersion(t, newTr(t, in.DB))
	require.NotEqual(t, v0, v1, "and the bump was committed")

	// After OnError, the new attempt has not bumped it.
	tr = newTr(t, in.DB)
	_, err = tr.Get([]byte("k"))
	require.NoError(t, err)
	kv.BumpMetadataVersion(tr)
	set(t, in.DB, "k", "w")
	err = tr.Commit()
	require.ErrorIs(t, err, kv.ErrNotCommitted)
	require.NoError(t, tr.OnError(err))
	v, err := kv.MetadataVersion(tr)
	require.NoError(t, err)
	require.Equal(t, v1, v, "a failed attempt's bump is gone with it")
}

// testMetadataVersionConflicts: read through the transaction, the metadata
// version conflicts with a bump committed after the read version, as a key
// with its writes; through the snapshot view it conflicts with nothing. A
// bump reads nothing: two bumps never conflict, and a bump conflicts with
// no read of a key.
func testMetadataVersionConflicts(t *testing.T, in Instance) {
	tr := newTr(t, in.DB)
	metadataVersion(t, tr)
	bump(t, in.DB)
	tr.Set([]byte("out"), []byte("1"))
	require.ErrorIs(t, tr.Commit(), kv.ErrNotCommitted, "a serializable read of the metadata version")

	tr = newTr(t, in.DB)
	metadataVersion(t, tr.Snapshot())
	bump(t, in.DB)
	tr.Set([]byte("out"), []byte("1"))
	require.NoError(t, tr.Commit(), "a snapshot read adds no conflict")

	// Two transactions that read keys and bump the metadata version: the
	// bumps do not conflict with each other, nor with the reads.
	a, b := newTr(t, in.DB), newTr(t, in.DB)
	for _, x := range []kv.Transaction{a, b} {
		_, err := x.Get([]byte("k"))
		require.NoError(t, err)
		kv.BumpMetadataVersion(x)
	}
	require.NoError(t, a.Commit())
	require.NoError(t, b.Commit(), "bumps are blind writes")

	// A bump does not conflict with a read of any key.
	tr = newTr(t, in.DB)
	_, err := tr.Get([]byte("k"))
	require.NoError(t, err)
	rangeKeys(t, tr, "", "\xff", kv.RangeOptions{})
	bump(t, in.DB)
	tr.Set([]byte("out"), []byte("2"))
	require.NoError(t, tr.Commit(), "a bump writes the metadata version only")
}

// testMetadataVersionWithItsCommit: concurrent commits each bump the
// metadata version and add 1 to a counter, while readers read both: a
// reader sees a bump exactly when it sees its commit's writes, so each
// metadata version goes with one count, and a greater one with a greater
// count.
func testMetadataVersionWithItsCommit(t *testing.T, in Instance) {
	metadataVersion(t, newTr(t, in.DB)) // or skip
	const writers, bumps, readers = 3, 30, 3
	type pair struct {
		v []byte
		n uint64
	}
	var (
		wg, rg sync.WaitGroup
		mu     sync.Mutex
		errs   []error
		pairs  []pair
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	for range writers {
		wg.Go(func() {
			for range bumps {
				if err := in.DB.Transact(bg, func(tr kv.Transaction) error {
					tr.Add([]byte("n"), 1)
					kv.BumpMetadataVersion(tr)
					return nil
				}); err != nil {
					fail(err)
				}
			}
		})
	}
	done := make(chan struct{})
	for range readers {
		rg.Go(func() {
			for last := false; !last; {
				select {
				case <-done:
					last = true // one more read, after every bump
				default:
				}
				err := in.DB.ReadTransact(bg, func(tr kv.ReadTransaction) error {
					v, err := kv.MetadataVersion(tr.Snapshot())
					if err != nil {
						return err
					}
					raw, err := tr.Snapshot().Get([]byte("n"))
					if err != nil {
						return err
					}
					p := pair{v: v}
					if len(raw) == 8 {
						p.n = binary.LittleEndian.Uint64(raw)
					}
					mu.Lock()
					pairs = append(pairs, p)
					mu.Unlock()
					return nil
				})
				if err != nil {
					fail(err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(done)
	rg.Wait()
	require.Empty(t, errs)
	count := map[string]uint64{} // metadata version -> count
	for _, p := range pairs {
		if n, ok := count[string(p.v)]; ok {
			require.Equal(t, n, p.n, "metadata version %x went with count %d, and with %d", p.v, n, p.n)
		}
		count[string(p.v)] = p.n
	}
	require.Contains(t, count, string(metadataVersion(t, newTr(t, in.DB))), "the last read saw the last bump")
	for v, n := range count {
		for w, m := range count {
			if bytes.Compare([]byte(v), []byte(w)) < 0 {
				require.Less(t, n, m, "%x before %x", v, w)
			}
		}
	}
}
