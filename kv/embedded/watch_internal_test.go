package embedded

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
)

// stagedCommit starts a commit of change, with enough other writes that
// the log's writer stages it in the tree while its fsync runs
// (wal.commitGroup), holds that fsync, and returns once the commit is
// staged: in the tree, not yet readable. free lets the fsync return;
// committed then delivers the commit's outcome.
func stagedCommit(t *testing.T, db *DB, change func(kv.Transaction)) (free func(), committed <-chan error) {
	t.Helper()
	staged, free := HoldFsync(db)
	t.Cleanup(free) // before db.Close, which waits for the log's writer
	done := make(chan error, 1)
	go func() {
		done <- db.Transact(context.Background(), func(tr kv.Transaction) error {
			change(tr)
			setFiller(tr, stageMin)
			return nil
		})
	}()
	require.Eventually(t, staged, 10*time.Second, time.Millisecond, "the commit is staged while its fsync runs")
	return free, done
}

// watchKey arms a watch on key, in a transaction of its own.
func watchKey(t *testing.T, db *DB, key string) kv.Watch {
	t.Helper()
	var w kv.Watch
	require.NoError(t, db.Transact(context.Background(), func(tr kv.Transaction) error {
		w = tr.Watch([]byte(key))
		return nil
	}))
	t.Cleanup(w.Cancel)
	return w
}

// fired reports whether w has fired; it fails the test if w failed.
func fired(t *testing.T, w kv.Watch) bool {
	t.Helper()
	select {
	case <-w.Done():
		require.NoError(t, w.Err())
		return true
	default:
		return false
	}
}

// openWatchFile opens a file database holding the keys k (value "v1") and
// r/000 to r/019, whose range clear is a tombstone.
func openWatchFile(t *testing.T) *DB {
	t.Helper()
	db, err := OpenFile(t.TempDir(), FileConfig{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	db.s.tombMin, db.s.tombWait = 8, 0
	require.NoError(t, db.Transact(context.Background(), func(tr kv.Transaction) error {
		tr.Set([]byte("k"), []byte("v1"))
		for i := range 20 {
			tr.Set([]byte(fmt.Sprintf("r/%03d", i)), []byte("v1"))
		}
		return nil
	}))
	return db
}

// A watch fires when a read at the newest readable version sees its key
// changed, not before: a file database's large commit, staged in the tree
// while its fsync runs, fires the watches on its keys once it is readable,
// whether they were armed before it was staged or while it was (compared
// then with the readable value, not the staged one). A watch woken early
// reads the old value, watches again and is woken again, busy, until the
// commit is readable (a FOR POP WAIT consumer spun so).
func TestWatchFiresWhenStagedCommitIsReadable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		change func(kv.Transaction)
		key    string
	}{
		{"set", func(tr kv.Transaction) { tr.Set([]byte("k"), []byte("v2")) }, "k"},
		// The key's newest version, a deletion, is in s.dead.
		{"clear", func(tr kv.Transaction) { tr.Clear([]byte("k")) }, "k"},
		// A clear of more than tombMin keys is a tombstone.
		{"range clear", func(tr kv.Transaction) { tr.ClearRange(kv.PrefixRange([]byte("r/"))) }, "r/005"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db := openWatchFile(t)
			before := watchKey(t, db, c.key)
			free, committed := stagedCommit(t, db, c.change)
			require.False(t, fired(t, before), "a watch armed before the commit was staged fired before it was readable")
			during := watchKey(t, db, c.key)
			require.False(t, fired(t, during), "a watch armed while the commit was staged fired before it was readable")
			free()
			require.NoError(t, <-committed)
			// The commit returns once it is readable, its watches fired.
			require.True(t, fired(t, before), "armed before the commit")
			require.True(t, fired(t, during), "armed while it was staged")
		})
	}
}

// A watch whose key a commit leaves as it was stays armed, whichever way
// the commit left it: untouched, set to the value it had, or cleared by a
// range clear (a tombstone, or a deletion per key) and set again to the
// value it had; and an absent key cleared stays absent. The watches armed
// while the commit was staged, and before it, still fire on a later change.
func TestWatchUnchangedKeyStaysArmed(t *testing.T) {
	t.Parallel()
	for _, tomb := range []bool{false, true} {
		t.Run(fmt.Sprint("tombstone=", tomb), func(t *testing.T) {
			t.Parallel()
			db := openWatchFile(t)
			if !tomb {
				db.s.tombMin = 1000
			}
			keys := []string{"k", "r/005", "u", "absent"}
			var ws []kv.Watch
			for _, k := range keys {
				ws = append(ws, watchKey(t, db, k))
			}
			free, committed := stagedCommit(t, db, func(tr kv.Transaction) {
				tr.Set([]byte("k"), []byte("v1"))
				tr.ClearRange(kv.PrefixRange([]byte("r/")))
				tr.Set([]byte("r/005"), []byte("v1"))
				tr.Clear([]byte("absent"))
			})
			require.Equal(t, tomb, Tombs(db) == 1)
			for _, k := range keys {
				ws = append(ws, watchKey(t, db, k))
			}
			free()
			require.NoError(t, <-committed)
			for i, w := range ws {
				require.False(t, fired(t, w), "watch %d, on %s", i, keys[i%len(keys)])
			}
			require.NoError(t, db.Transact(context.Background(), func(tr kv.Transaction) error {
				for _, k := range keys {
					tr.Set([]byte(k), []byte("v3"))
				}
				return nil
			}))
			for i, w := range ws {
				require.True(t, fired(t, w), "watch %d, on %s, after a change", i, keys[i%len(keys)])
			}
		})
	}
}

// A watch armed once its database closed fails, as the watches armed
// before did, rather than wait for a commit that no longer comes.
func TestWatchArmedAfterCloseFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, open := range map[string]func() *DB{
		"file": func() *DB {
			db, err := OpenFile(t.TempDir(), FileConfig{})
			require.NoError(t, err)
			return db
		},
		"memory": func() *DB { return Open(t.Name()+"/memory", Config{}) },
		// Closing its only handle closes it: no transaction can begin
		// whose commit would fire the watches.
		"private memory": func() *DB { return Open("", Config{}) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := open()
			before := watchKey(t, db, "k")
			tr, err := db.CreateTransaction(ctx)
			require.NoError(t, err)
			defer tr.Cancel()
			w := tr.Watch([]byte("k"))
			defer w.Cancel()
			require.NoError(t, db.Close())
			select {
			case <-before.Done():
				require.Error(t, before.Err(), "armed before the close")
			default:
				t.Fatal("a watch armed before the close is still pending")
			}
			require.NoError(t, tr.Commit())
			select {
			case <-w.Done():
			default:
				t.Fatal("a watch armed after the close is still pending")
			}
			require.Equal(t, kv.CodeClientInvalidOperation, kv.Code(w.Err()), "%v", w.Err())
		})
	}
}

// TestWatchFailsWithTheLog: once the log fails, no commit is published
// again, so no watch would ever fire. Those armed fail at once with the
// log's error, as do those armed later (a read-only transaction still
// commits), rather than each waiting out its context.
func TestWatchFailsWithTheLog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := OpenFile(t.TempDir(), FileConfig{})
	require.NoError(t, err)
	defer db.Close()
	before := watchKey(t, db, "k")
	db.s.log.syncFault = func() error { return errors.New("injected fsync error") }
	err = db.Transact(ctx, func(tr kv.Transaction) error {
		tr.Set([]byte("other"), []byte("v"))
		return nil
	})
	require.ErrorIs(t, err, ErrFailed)
	for name, w := range map[string]kv.Watch{"armed before": before, "armed after": watchKey(t, db, "k")} {
		select {
		case <-w.Done():
			require.ErrorIs(t, w.Err(), ErrFailed, name)
			require.ErrorContains(t, w.Err(), "injected fsync error", name)
		default:
			t.Fatalf("a watch %s the log failed is still pending", name)
		}
	}
}
