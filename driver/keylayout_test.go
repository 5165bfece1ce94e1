package driver_test

import (
	"bytes"
	"database/sql"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	fdbqueue "github.com/fdbqueue/fdbqueue/driver"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/kv/shared"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// legacyRoot is the prefix every key of an embedded database had before
// the embedded engines' data went under none.
var legacyRoot = tuple.Tuple{"fdbqueue"}.Pack()

// opaqueDB is an engine the driver does not know for embedded: a
// connector on it (NewConnectorOn) puts fdbqueue's data under
// ("fdbqueue"), as on FoundationDB, and as the driver did on the embedded
// engines before.
type opaqueDB struct{ kv.Database }

// rawKeys returns every key of the file database in dir.
func rawKeys(t *testing.T, dir string) [][]byte {
	t.Helper()
	eng, err := shared.Open(dir, embedded.FileConfig{Mode: embedded.ReadOnly})
	require.NoError(t, err)
	defer func() { require.NoError(t, eng.Close()) }()
	var keys [][]byte
	require.NoError(t, kv.ReadTransact(bg, eng, func(tr kv.ReadTransaction) error {
		keys = keys[:0]
		it := tr.GetRange(kv.Range{Begin: []byte{}, End: []byte{0xff}}, kv.RangeOptions{})
		for it.Next() {
			keys = append(keys, bytes.Clone(it.KeyValue().Key))
		}
		return it.Err()
	}))
	return keys
}

// TestNewEmbeddedDatabaseHasNoKeyPrefix: a new file: database keeps its
// tables under ("t", id), its catalog under ("catalog", name), and so
// on, with no prefix before them: nothing else lives in it, and the
// prefix cost 10 bytes of every key.
func TestNewEmbeddedDatabaseHasNoKeyPrefix(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, err := sql.Open("fdbqueue", "file:"+dir)
	require.NoError(t, err)
	_, err = db.ExecContext(bg, "CREATE TABLE t (priority INT NOT NULL, cpu INT NOT NULL, mem INT NOT NULL, payload TEXT, INDEX fit (cpu, mem))")
	require.NoError(t, err)
	_, err = db.ExecContext(bg, "INSERT INTO t (priority, cpu, mem, payload) VALUES (1, 2, 3, 'a'), (2, 1, 1, 'b')")
	require.NoError(t, err)
	require.NoError(t, db.Close())

	keys := rawKeys(t, dir)
	require.NotEmpty(t, keys)
	table := tuple.Tuple{"t"}.Pack()
	tableKeys := 0
	for _, k := range keys {
		require.False(t, bytes.HasPrefix(k, legacyRoot), "key %q is under the old prefix", k)
		require.Equal(t, byte(0x02), k[0], "key %q does not start with exec's tag, a string", k)
		if bytes.HasPrefix(k, table) {
			tableKeys++
		}
	}
	require.Greater(t, tableKeys, 2, "the rows and their indexes are under (\"t\", id)")
}

// TestEarlierEmbeddedDatabaseKeepsItsKeyPrefix: a file: database whose
// data is under ("fdbqueue"), as every embedded database made before
// was, is read and written under it: its tables, rows and catalog are
// all there, and nothing goes elsewhere.
func TestEarlierEmbeddedDatabaseKeepsItsKeyPrefix(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	eng, err := shared.Open(dir, embedded.FileConfig{})
	require.NoError(t, err)
	old := sql.OpenDB(fdbqueue.NewConnectorOn(opaqueDB{eng}))
	_, err = old.ExecContext(bg, "CREATE TABLE t (payload TEXT)")
	require.NoError(t, err)
	_, err = old.ExecContext(bg, "INSERT INTO t (payload) VALUES ('before')")
	require.NoError(t, err)
	require.NoError(t, old.Close())
	for _, k := range rawKeys(t, dir) {
		require.True(t, bytes.HasPrefix(k, legacyRoot), "key %q", k)
	}

	db, err := sql.Open("fdbqueue", "file:"+dir)
	require.NoError(t, err)
	_, err = db.ExecContext(bg, "INSERT INTO t (payload) VALUES ('after')")
	require.NoError(t, err)
	_, err = db.ExecContext(bg, "CREATE TABLE u (payload TEXT)")
	require.NoError(t, err)
	var got []string
	rows, err := db.QueryContext(bg, "SELECT payload FROM t")
	require.NoError(t, err)
	for rows.Next() {
		var p string
		require.NoError(t, rows.Scan(&p))
		got = append(got, p)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"before", "after"}, got)
	require.NoError(t, db.Close())

	keys := rawKeys(t, dir)
	for _, k := range keys {
		require.True(t, bytes.HasPrefix(k, legacyRoot), "key %q is not under the database's prefix", k)
	}
}

// TestConnectorOnEmbeddedDatabaseSharesItsLayout: a connector on an
// embedded database the program opened (NewConnectorOn) and one from a
// DSN on the same named in-memory database see the same tables.
func TestConnectorOnEmbeddedDatabaseSharesItsLayout(t *testing.T) {
	t.Parallel()
	name := t.Name()
	byDSN, err := sql.Open("fdbqueue", "memory:"+name)
	require.NoError(t, err)
	defer func() { require.NoError(t, byDSN.Close()) }()
	_, err = byDSN.ExecContext(bg, "CREATE TABLE t (payload TEXT)")
	require.NoError(t, err)
	_, err = byDSN.ExecContext(bg, "INSERT INTO t (payload) VALUES ('a')")
	require.NoError(t, err)

	on := sql.OpenDB(fdbqueue.NewConnectorOn(embedded.Open(name, embedded.Config{})))
	defer func() { require.NoError(t, on.Close()) }()
	var got string
	require.NoError(t, on.QueryRowContext(bg, "SELECT payload FROM t").Scan(&got))
	require.Equal(t, "a", got)
}

// newFileWithRow returns the directory of a new file: database, made
// through a DSN, with a table t holding one row of payload.
func newFileWithRow(t *testing.T, payload string) string {
	t.Helper()
	dir := t.TempDir()
	db, err := sql.Open("fdbqueue", "file:"+dir)
	require.NoError(t, err)
	_, err = db.Exec("CREATE TABLE t (payload TEXT)")
	require.NoError(t, err)
	_, err = db.Exec("INSERT INTO t (payload) VALUES (?)", payload)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	return dir
}

// TestWrappedEngineSeesTheSameDatabase: a program that hands the driver
// its file: engine wrapped (tracing, metrics, a model: anything that is
// not the engine itself) sees the tables a DSN's connector made, and what
// it writes does not hide them from the next open: the database is
// marked as one whose keys have no prefix.
func TestWrappedEngineSeesTheSameDatabase(t *testing.T) {
	t.Parallel()
	dir := newFileWithRow(t, "queued")
	eng, err := shared.Open(dir, embedded.FileConfig{})
	require.NoError(t, err)
	wrapped := sql.OpenDB(fdbqueue.NewConnectorOn(opaqueDB{eng}))
	var n int
	require.NoError(t, wrapped.QueryRow("SELECT COUNT(*) FROM t").Scan(&n))
	require.Equal(t, 1, n)
	_, err = wrapped.Exec("CREATE TABLE audit (x INT)")
	require.NoError(t, err)
	require.NoError(t, wrapped.Close())

	db, err := sql.Open("fdbqueue", "file:"+dir)
	require.NoError(t, err)
	defer db.Close()
	var p string
	require.NoError(t, db.QueryRow("SELECT payload FROM t").Scan(&p))
	require.Equal(t, "queued", p)
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM audit").Scan(&n))
}

// TestMarkedDatabaseKeepsItsLayout: keys written under ("fdbqueue") into
// a database marked as one whose keys have none (by an earlier build, say)
// do not turn it to the other layout: its tables stay in view, read-write
// and read-only.
func TestMarkedDatabaseKeepsItsLayout(t *testing.T) {
	t.Parallel()
	dir := newFileWithRow(t, "kept")
	eng, err := shared.Open(dir, embedded.FileConfig{})
	require.NoError(t, err)
	require.NoError(t, eng.Transact(bg, func(tr kv.Transaction) error {
		tr.Set(append(slices.Clone(legacyRoot), tuple.Tuple{"catalog", "t"}.Pack()...), []byte("an earlier build's"))
		return nil
	}))
	require.NoError(t, eng.Close())

	for _, dsn := range []string{"file:" + dir, "file:" + dir + "?mode=ro"} {
		db, err := sql.Open("fdbqueue", dsn)
		require.NoError(t, err)
		var p string
		require.NoError(t, db.QueryRow("SELECT payload FROM t").Scan(&p), dsn)
		require.Equal(t, "kept", p)
		require.NoError(t, db.Close())
	}
}

// TestLayoutMarkIsNotNeededToOpen: a database whose every commit fails
// (injected faults) still opens: marking it is left to a later open, and
// until then it is read as a new database is.
func TestLayoutMarkIsNotNeededToOpen(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("fdbqueue", "memory:?fault_timeout=1")
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.Ping())
	rows, err := db.Query("SELECT name FROM fdbqueue_queues")
	require.NoError(t, err)
	require.False(t, rows.Next(), "no tables")
	require.NoError(t, rows.Err())
	require.NoError(t, rows.Close())
}
