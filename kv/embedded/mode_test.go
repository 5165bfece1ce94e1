package embedded_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
)

func set(t *testing.T, db kv.Database, k, v string) error {
	t.Helper()
	return db.Transact(context.Background(), func(tr kv.Transaction) error {
		tr.Set([]byte(k), []byte(v))
		return nil
	})
}

// dirState lists a directory's files with their sizes and modification times.
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	out := map[string]string{}
	for _, e := range entries {
		info, err := e.Info()
		require.NoError(t, err)
		out[e.Name()] = fmt.Sprint(info.Size(), info.ModTime().UnixNano())
	}
	return out
}

// TestFileOpenModes: mode=rw and mode=ro open only an existing database, and
// a mistyped path is an error that creates nothing; mode=rwc creates the
// database's directory but not its parents, nor a database among other files.
func TestFileOpenModes(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	missing := filepath.Join(base, "missing")
	for _, mode := range []embedded.OpenMode{embedded.ReadWrite, embedded.ReadOnly} {
		_, err := embedded.OpenFile(missing, embedded.FileConfig{Mode: mode})
		require.ErrorIs(t, err, embedded.ErrNoDatabase, "mode=%v", mode)
		require.ErrorContains(t, err, "does not exist")
		require.ErrorContains(t, err, "mode=rwc")
		require.NoDirExists(t, missing)
	}
	_, err := embedded.OpenFile(filepath.Join(base, "no", "such", "parent"), embedded.FileConfig{})
	require.ErrorIs(t, err, embedded.ErrNoDatabase)
	require.ErrorContains(t, err, "not its parents")
	require.NoDirExists(t, filepath.Join(base, "no"))

	empty := filepath.Join(base, "empty")
	require.NoError(t, os.Mkdir(empty, 0o700))
	_, err = embedded.OpenFile(empty, embedded.FileConfig{Mode: embedded.ReadWrite})
	require.ErrorIs(t, err, embedded.ErrNoDatabase)
	require.ErrorContains(t, err, "holds no fdbqueue database")

	other := filepath.Join(base, "other")
	require.NoError(t, os.Mkdir(other, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(other, "notes.txt"), nil, 0o600))
	_, err = embedded.OpenFile(other, embedded.FileConfig{})
	require.ErrorIs(t, err, embedded.ErrNoDatabase)
	require.ErrorContains(t, err, "notes.txt")
	require.Equal(t, []string{"notes.txt"}, keys(dirState(t, other)), "nothing was written there")

	file := filepath.Join(base, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	_, err = embedded.OpenFile(file, embedded.FileConfig{})
	require.ErrorContains(t, err, "is a file")

	_, err = embedded.OpenFile(base, embedded.FileConfig{Mode: embedded.OpenMode(7)})
	require.ErrorContains(t, err, "accepted: rwc, rw, ro")

	// rwc creates; rw reopens it.
	dir := filepath.Join(base, "db")
	db, err := embedded.OpenFile(dir, embedded.FileConfig{})
	require.NoError(t, err)
	require.NoError(t, set(t, db, "k", "1"))
	require.NoError(t, db.Close())
	db, err = embedded.OpenFile(dir, embedded.FileConfig{Mode: embedded.ReadWrite})
	require.NoError(t, err)
	require.Equal(t, "1", string(mustGet(t, db, "k")))
	require.NoError(t, set(t, db, "k", "2"))
	require.NoError(t, db.Close())
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestFileReadOnly: mode=ro reads what is there, refuses every write (not
// as a retryable error) and changes no file, not even to cut a torn tail.
func TestFileReadOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	db, err := embedded.OpenFile(dir, embedded.FileConfig{})
	require.NoError(t, err)
	require.NoError(t, set(t, db, "k", "v"))
	require.NoError(t, db.Close())
	segs := segments(t, dir)
	f, err := os.OpenFile(segs[len(segs)-1], os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.Write([]byte{9, 0, 0}) // a torn record
	require.NoError(t, err)
	require.NoError(t, f.Close())
	before := dirState(t, dir)

	ro, err := embedded.OpenFile(dir, embedded.FileConfig{Mode: embedded.ReadOnly})
	require.NoError(t, err)
	require.Equal(t, "v", string(mustGet(t, ro, "k")))
	require.Equal(t, int64(3), ro.Recovery().TornBytes)
	err = set(t, ro, "k", "w")
	require.ErrorIs(t, err, embedded.ErrReadOnly)
	require.ErrorContains(t, err, "mode=ro")
	require.False(t, kv.IsRetryable(err))
	require.ErrorIs(t, ro.Checkpoint(), embedded.ErrReadOnly)
	require.NoError(t, ro.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		_, err := kv.Collect(tr.GetRange(kv.PrefixRange(nil), kv.RangeOptions{}))
		return err
	}))

	// In this process, a read-write open must wait for the read-only one.
	_, err = embedded.OpenFile(dir, embedded.FileConfig{})
	require.ErrorContains(t, err, "open read-only in this process")
	again, err := embedded.OpenFile(dir, embedded.FileConfig{Mode: embedded.ReadOnly})
	require.NoError(t, err)
	require.NoError(t, again.Close())
	require.NoError(t, ro.Close())
	require.Equal(t, before, dirState(t, dir), "a read-only open changed the directory")

	// A read-only handle on a database this process has open read-write
	// refuses writes; the read-write handle goes on writing.
	rw, err := embedded.OpenFile(dir, embedded.FileConfig{})
	require.NoError(t, err)
	defer rw.Close()
	ro, err = embedded.OpenFile(dir, embedded.FileConfig{Mode: embedded.ReadOnly})
	require.NoError(t, err)
	require.ErrorIs(t, set(t, ro, "k", "x"), embedded.ErrReadOnly)
	require.NoError(t, ro.Close())
	require.NoError(t, set(t, rw, "k", "y"))
}

// TestFileReadOnlyAcrossProcesses: read-only opens in two processes share a
// database; a read-write open in another process is refused while they hold it.
func TestFileReadOnlyAcrossProcesses(t *testing.T) {
	if dir := os.Getenv("FDBQUEUE_RO_CHILD"); dir != "" {
		for _, mode := range []embedded.OpenMode{embedded.ReadOnly, embedded.ReadWrite} {
			db, err := embedded.OpenFile(dir, embedded.FileConfig{Mode: mode})
			if err != nil {
				fmt.Printf("mode=%v: %v\n", mode, err)
				continue
			}
			fmt.Printf("mode=%v: opened, k=%s\n", mode, mustGet(t, db, "k"))
			db.Close()
		}
		return
	}
	t.Parallel()
	dir := t.TempDir()
	db, err := embedded.OpenFile(dir, embedded.FileConfig{})
	require.NoError(t, err)
	require.NoError(t, set(t, db, "k", "v"))
	require.NoError(t, db.Close())
	ro, err := embedded.OpenFile(dir, embedded.FileConfig{Mode: embedded.ReadOnly})
	require.NoError(t, err)
	defer ro.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^TestFileReadOnlyAcrossProcesses$")
	cmd.Env = append(os.Environ(), "FDBQUEUE_RO_CHILD="+dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	require.Contains(t, string(out), "mode=ro: opened, k=v")
	require.Contains(t, string(out), "mode=rw: fdbqueue: database is locked")
}

// TestFileSymlinkIsSameDatabase: a directory opened through a symbolic link
// is the database already open under its own name, not a second one that
// finds it locked by this very process.
func TestFileSymlinkIsSameDatabase(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	dir := filepath.Join(base, "db")
	link := filepath.Join(base, "link")
	db, err := embedded.OpenFile(dir, embedded.FileConfig{})
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, os.Symlink(dir, link))
	viaLink, err := embedded.OpenFile(link+"/", embedded.FileConfig{})
	require.NoError(t, err)
	defer viaLink.Close()
	require.NoError(t, set(t, viaLink, "k", "v"))
	require.Equal(t, "v", string(mustGet(t, db, "k")))
}

// TestFileReadOnlyAfterRetry: a read-only handle's transaction refuses
// writes on every attempt, not only the first (a retry resets it).
func TestFileReadOnlyAfterRetry(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, err := embedded.OpenFile(dir, embedded.FileConfig{})
	require.NoError(t, err)
	require.NoError(t, db.Close())
	ro, err := embedded.OpenFile(dir, embedded.FileConfig{Mode: embedded.ReadOnly})
	require.NoError(t, err)
	defer ro.Close()
	attempts := 0
	err = ro.Transact(context.Background(), func(tr kv.Transaction) error {
		attempts++
		tr.Set([]byte("k"), []byte("v"))
		if attempts == 1 {
			return kv.ErrNotCommitted // as a conflict would: retried
		}
		return nil
	})
	require.Equal(t, 2, attempts)
	require.ErrorIs(t, err, embedded.ErrReadOnly)
	require.Nil(t, mustGet(t, ro, "k"))
}
