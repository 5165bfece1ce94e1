package embedded

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// TestUnchangedWritesConflictWithNoOne: a commit that sets a key to the
// value it holds makes no reader of the key conflict, whether the set
// is the commit's only write or one of a run; its writes that change a
// key still do, so does one that adds a write conflict key on it, and so
// does a set that brings back a key a range clear hid, with the same
// value as the hidden one.
func TestUnchangedWritesConflictWithNoOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, engine := range []string{"memory", "file"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			db := Open("", Config{RetryLimit: -1})
			if engine == "file" {
				var err error
				db, err = OpenFile(t.TempDir(), FileConfig{Config: Config{RetryLimit: -1}})
				require.NoError(t, err)
			}
			t.Cleanup(func() { require.NoError(t, db.Close()) })
			write := func(kvs ...string) {
				t.Helper()
				require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
					for i := 0; i < len(kvs); i += 2 {
						tr.Set([]byte(kvs[i]), []byte(kvs[i+1]))
					}
					return nil
				}))
			}
			// reader reads key and writes a key of its own: it commits
			// unless a commit since its read changed key.
			reader := func(key string) kv.Transaction {
				t.Helper()
				tr := readerNow(t, db)
				_, err := tr.Get([]byte(key))
				require.NoError(t, err)
				tr.Set([]byte("own/"+key), []byte("x"))
				return tr
			}
			write("a", "1", "b", "2", "c", "3")

			ra := reader("a")
			write("a", "1") // alone: replaceLocked
			require.NoError(t, ra.Commit(), "a lone set of the value a key holds")

			ra, rb, rc := reader("a"), reader("b"), reader("c")
			write("a", "1", "b", "two", "c", "3") // a run: setRunsLocked
			require.NoError(t, ra.Commit(), "a set of the value held, first of a run")
			require.ErrorIs(t, rb.Commit(), kv.ErrNotCommitted, "a set of another value")
			require.NoError(t, rc.Commit(), "a set of the value held, last of a run")

			// A writer that wants the conflict asks for it.
			ra = reader("a")
			require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
				tr.Set([]byte("a"), []byte("1"))
				return tr.AddWriteConflictKey([]byte("a"))
			}))
			require.ErrorIs(t, ra.Commit(), kv.ErrNotCommitted, "a set of the value held, with a write conflict key")

			// Keys a range clear hid, still in the tree while an older
			// reader lives (tombs.go), set again to their old values.
			SetTombMinKeys(db, 1)
			write("t/1", "v", "t/2", "v", "t/3", "v")
			oldest := readerNow(t, db)
			defer oldest.Cancel()
			require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
				tr.ClearRange(kv.Range{Begin: []byte("t/"), End: []byte("t0")})
				return nil
			}))
			require.Equal(t, 1, Tombs(db))
			r1, r2 := reader("t/1"), reader("t/2")
			write("t/1", "v")
			write("t/2", "v", "t/3", "v")
			require.ErrorIs(t, r1.Commit(), kv.ErrNotCommitted, "a key back, alone")
			require.ErrorIs(t, r2.Commit(), kv.ErrNotCommitted, "a key back, in a run")
		})
	}
}
