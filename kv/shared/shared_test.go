package shared_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/kv/kvtest"
	"github.com/fdbqueue/fdbqueue/kv/shared"
)

// TestServeChild is the process that serves a database to the tests
// below (they start it with FDBQUEUE_SHARED_DIR set): it opens the
// database, says "ready", and serves until killed.
func TestServeChild(t *testing.T) {
	dir := os.Getenv("FDBQUEUE_SHARED_DIR")
	if dir == "" {
		t.Skip("the child process of the tests below")
	}
	if os.Getenv("FDBQUEUE_SHARED_LONE") != "" {
		// An open that holds the lock and serves no one, as an fdbqueue
		// from before sharing does.
		if _, err := embedded.OpenFile(dir, embedded.FileConfig{}); err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		fmt.Println("ready")
		select {}
	}
	db, err := shared.Open(dir, embedded.FileConfig{Sync: embedded.SyncNone})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	if pair := os.Getenv("FDBQUEUE_SHARED_PUT"); pair != "" {
		// A client that writes k=v, and waits.
		k, v, _ := strings.Cut(pair, "=")
		err := db.Transact(context.Background(), func(tr kv.Transaction) error {
			tr.Set([]byte(k), []byte(v))
			return nil
		})
		if err != nil || db.Serving() {
			fmt.Println("error: the client's write:", err, "serving:", db.Serving())
			os.Exit(2)
		}
		fmt.Println("ready")
		select {}
	}
	if !db.Serving() {
		fmt.Println("error: the child does not serve")
		os.Exit(2)
	}
	if os.Getenv("FDBQUEUE_SHARED_CALLS") != "" {
		// Calls: "close" closes the handle whose handler answers them
		// (another stays open), the others are echoed.
		if _, err := shared.Open(dir, embedded.FileConfig{Sync: embedded.SyncNone}); err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		db.ServeCalls(func(ctx context.Context, req []byte) ([]byte, error) {
			if string(req) == "close" {
				_ = db.Close()
			}
			return req, nil
		})
	}
	fmt.Println("ready")
	select {}
}

func open(t *testing.T, dir string) *shared.DB {
	db, err := shared.Open(dir, embedded.FileConfig{Sync: embedded.SyncNone})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return db
}

// The engine contract, in the process that serves the database.
func TestContractServing(t *testing.T) {
	kvtest.Run(t, func(t *testing.T) kvtest.Instance {
		db := open(t, t.TempDir())
		require.True(t, db.Serving())
		return kvtest.Instance{DB: db}
	})
}

// The engine contract, in a process that another serves.
func TestContractClient(t *testing.T) {
	if testing.Short() {
		t.Skip("a process a test, on real time")
	}
	kvtest.Run(t, func(t *testing.T) kvtest.Instance {
		dir := t.TempDir()
		shared.ServeInChild(t, dir)
		db := open(t, dir)
		require.False(t, db.Serving())
		require.False(t, db.CertainCommits(), "a client's commits can end in commit_unknown_result")
		return kvtest.Instance{DB: db}
	})
}

func put(t *testing.T, db kv.Database, k, v string) {
	require.NoError(t, db.Transact(context.Background(), func(tr kv.Transaction) error {
		tr.Set([]byte(k), []byte(v))
		return nil
	}))
}

func get(t *testing.T, db kv.Database, k string) string {
	var v []byte
	require.NoError(t, db.ReadTransact(context.Background(), func(tr kv.ReadTransaction) error {
		var err error
		v, err = tr.Get([]byte(k))
		return err
	}))
	return string(v)
}

// TestTakeOver kills the serving process: the client's next transaction
// finds the database served by itself, with everything acknowledged.
func TestTakeOver(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	child := shared.ServeInChild(t, dir)
	db := open(t, dir)
	require.False(t, db.Serving())
	for i := range 100 {
		put(t, db, fmt.Sprint("k", i), fmt.Sprint("v", i))
	}
	child.Kill(t)
	put(t, db, "after", "the kill")
	require.True(t, db.Serving())
	for i := range 100 {
		require.Equal(t, fmt.Sprint("v", i), get(t, db, fmt.Sprint("k", i)))
	}
	require.Equal(t, "the kill", get(t, db, "after"))
	require.False(t, db.CertainCommits(), "transactions begun as a client retry through the connection")
}

// TestCloseHandsOver: a process that closes the database stops serving it,
// and another takes over.
func TestCloseHandsOver(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first, err := shared.Open(dir, embedded.FileConfig{})
	require.NoError(t, err)
	put(t, first, "a", "1")
	require.NoError(t, first.Close())
	_, err = os.Stat(filepath.Join(dir, shared.SocketName))
	require.ErrorIs(t, err, os.ErrNotExist, "a process that stops serving removes its socket")

	shared.ServeInChild(t, dir)
	db := open(t, dir)
	require.False(t, db.Serving())
	require.Equal(t, "1", get(t, db, "a"))
}

// TestReadOnlyClient: a read-only handle reads what others write and
// refuses to write.
func TestReadOnlyClient(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	shared.ServeInChild(t, dir)
	rw := open(t, dir)
	put(t, rw, "a", "1")
	ro, err := shared.Open(dir, embedded.FileConfig{Mode: embedded.ReadOnly})
	require.NoError(t, err)
	defer ro.Close()
	require.Equal(t, "1", get(t, ro, "a"))
	for name, write := range map[string]func(kv.Transaction){
		"Set":             func(tr kv.Transaction) { tr.Set([]byte("b"), []byte("2")) },
		"Clear":           func(tr kv.Transaction) { tr.Clear([]byte("a")) },
		"ClearRange":      func(tr kv.Transaction) { tr.ClearRange(kv.Range{Begin: []byte("a"), End: []byte("z")}) },
		"Add":             func(tr kv.Transaction) { tr.Add([]byte("b"), 1) },
		"BitAnd":          func(tr kv.Transaction) { tr.BitAnd([]byte("a"), []byte{0}) },
		"CompareAndClear": func(tr kv.Transaction) { tr.CompareAndClear([]byte("a"), []byte("1")) },
	} {
		err = ro.Transact(context.Background(), func(tr kv.Transaction) error {
			write(tr)
			return nil
		})
		require.ErrorIs(t, err, embedded.ErrReadOnly, name)
	}
	require.Empty(t, get(t, rw, "b"))
	require.Equal(t, "1", get(t, rw, "a"))
}

// TestReadOnlyTakesOver: a read-only handle's process takes the database
// over when the serving one dies, and serves it to the others writable.
func TestReadOnlyTakesOver(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	child := shared.ServeInChild(t, dir)
	rw := open(t, dir)
	put(t, rw, "a", "1")
	require.NoError(t, rw.Close())
	ro, err := shared.Open(dir, embedded.FileConfig{Mode: embedded.ReadOnly})
	require.NoError(t, err)
	defer ro.Close()
	require.False(t, ro.Serving())
	child.Kill(t)
	require.Equal(t, "1", get(t, ro, "a"))
	require.True(t, ro.Serving())
	shared.ServeInChild(t, dir, "FDBQUEUE_SHARED_PUT=b=2")
	require.Equal(t, "2", get(t, ro, "b"), "another process writes through the read-only handle's process")
	err = ro.Transact(context.Background(), func(tr kv.Transaction) error {
		tr.Set([]byte("c"), []byte("3"))
		return nil
	})
	require.ErrorIs(t, err, embedded.ErrReadOnly)
}

// TestLongPath: a directory whose path is too long for a socket's address
// is shared all the same (on Linux, through /proc/self/fd).
func TestLongPath(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	t.Parallel()
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60))
	require.NoError(t, os.MkdirAll(dir, 0o700))
	shared.ServeInChild(t, dir)
	db := open(t, dir)
	require.False(t, db.Serving())
	put(t, db, "a", "1")
	require.Equal(t, "1", get(t, db, "a"))
}

// TestOpenTimesOut: a process that holds the lock and does not serve (an
// fdbqueue from before sharing) makes Open fail, saying so.
func TestOpenTimesOut(t *testing.T) {
	dir := t.TempDir()
	shared.ServeInChild(t, dir, "FDBQUEUE_SHARED_LONE=1")
	old := shared.OpenTimeout
	shared.OpenTimeout = 200 * time.Millisecond
	defer func() { shared.OpenTimeout = old }()
	_, err := shared.Open(dir, embedded.FileConfig{})
	require.ErrorIs(t, err, shared.ErrNoServer)
	require.ErrorIs(t, err, embedded.ErrLocked)
	require.ErrorContains(t, err, "locked by process")
}

// TestForward: a client's call is answered by the serving process's
// handler; the serving process itself runs its work (Forward says false);
// a handle that closes while its handler runs leaves the outcome unknown,
// and then no handler answers (the caller runs the work itself).
func TestForward(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	shared.ServeInChild(t, dir, "FDBQUEUE_SHARED_CALLS=1")
	db := open(t, dir)
	ctx := context.Background()
	resp, ok, err := db.Forward(ctx, []byte("echo"))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "echo", string(resp))

	_, ok, err = db.Forward(ctx, []byte("close"))
	require.True(t, ok)
	require.True(t, kv.IsMaybeCommitted(err), "%v", err)
	_, ok, err = db.Forward(ctx, []byte("echo"))
	require.NoError(t, err)
	require.False(t, ok, "no handle of the serving process has a handler now")

	own := open(t, t.TempDir())
	require.True(t, own.Serving())
	_, ok, err = own.Forward(ctx, []byte("echo"))
	require.NoError(t, err)
	require.False(t, ok, "a serving process runs its work itself")
}
