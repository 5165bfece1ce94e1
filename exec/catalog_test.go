package exec_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/exec"
	"github.com/fdbqueue/fdbqueue/internal/fdbmodel"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// catalogEngines are the engines the catalog cache's tests run on: the
// embedded engine (certain commits: combined statements, no receipts) and
// a modeled FoundationDB cluster (receipts, as on FoundationDB). The
// FoundationDB engine runs them too (fdb_test.go).
var catalogEngines = map[string]func() kv.Database{
	"memory":   func() kv.Database { return embedded.Open("", embedded.Config{}) },
	"fdbmodel": func() kv.Database { return fdbmodel.Wrap(embedded.Open("", embedded.Config{}), fdbmodel.Config{}) },
}

func eachCatalogEngine(t *testing.T, test func(t *testing.T, db kv.Database)) {
	for name, open := range catalogEngines {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := open()
			t.Cleanup(func() { _ = db.Close() })
			test(t, db)
		})
	}
}

// TestCatalogCacheTwoExecutors: the catalog cache (see catalog.table)
// under DDL from another client (testTwoExecutors).
func TestCatalogCacheTwoExecutors(t *testing.T) {
	t.Parallel()
	eachCatalogEngine(t, testTwoExecutors)
}

// TestCatalogCacheDDLBeforeCommit: a statement finds its table's schema in
// its executor's cache, and another executor drops the table and creates
// it again, with other columns, before the statement commits (the guard
// runs the DDL at its commit): the statement's commit conflicts with the
// DROP, as it would had it read the catalog key, and its retry runs on the
// new table. Without that conflict a pop would return a row of the dropped
// table, and an INSERT would write into its keys.
func TestCatalogCacheDDLBeforeCommit(t *testing.T) {
	t.Parallel()
	eachCatalogEngine(t, testDDLBeforeCommit)
}

func testDDLBeforeCommit(t *testing.T, db kv.Database) {
	root := []byte("ddl")
	ddl := exec.New(db, root)
	g := &guard{Database: db, root: root, cat: ddl}
	user := exec.New(g, root)
	recreate := func() {
		mustRun(t, ddl, "DROP TABLE q")
		mustRun(t, ddl, "CREATE TABLE q (a INT, b TEXT)")
		mustRun(t, ddl, "INSERT INTO q (a, b) VALUES (2, 'new')")
	}

	mustRun(t, ddl, "CREATE TABLE q (a INT)")
	mustRun(t, ddl, "INSERT INTO q (a) VALUES (1)")
	mustRun(t, user, "SELECT COUNT(*) FROM q") // caches q
	g.atCommit(recreate)
	res := mustRun(t, user, "SELECT a FROM q LIMIT 1 FOR POP")
	require.Equal(t, [][]any{{int64(2)}}, res.Rows, "the pop ran again, on the new table")

	// The user's first INSERT reserves its executor's ids (queues.IDs) in
	// a transaction of its own, whose commit the guard would take for the
	// INSERT's: one first.
	mustRun(t, user, "INSERT INTO q (a) VALUES (0)")
	mustRun(t, user, "SELECT COUNT(*) FROM q")
	g.atCommit(recreate)
	mustRun(t, user, "INSERT INTO q (a) VALUES (3)")
	res = mustRun(t, ddl, "SELECT a, b FROM q")
	require.Equal(t, [][]any{{int64(2), "new"}, {int64(3), nil}}, res.Rows, "the INSERT ran again, on the new table")

	require.Equal(t, int64(2), g.conflicts.Load(), "each statement's first commit conflicted with the DROP")
	require.Empty(t, g.violations())
	g.checkNoStrayKeys(t)
}

// testTwoExecutors: two executors on one database, each with its own cache
// of schemas, as two clients. One drops table q and creates it again with
// other columns, over and over; the other inserts into q and pops from it
// meanwhile, from several goroutines. Then:
//
//   - no statement ran on a schema that was not the catalog's at its read
//     version: every key a committed attempt of the second executor read
//     or wrote under a table's prefix belongs to a table the catalog held
//     then (guard checks each commit);
//   - none wrote into a dropped table's keys after its DROP: no key is
//     left under a table id the catalog does not hold (DROP clears them,
//     and ids are never reused), so a statement whose schema was the
//     catalog's at its read version conflicted with a DROP committed
//     before its commit;
//   - the second executor did use its cache (its statements read the
//     metadata version and not the catalog), and did read the catalog
//     again after DDL: otherwise the test proves nothing.
func testTwoExecutors(t *testing.T, db kv.Database) {
	root := []byte("two")
	ddl := exec.New(db, root)
	g := &guard{Database: db, root: root, cat: ddl}
	user := exec.New(g, root)
	mustRun(t, ddl, "CREATE TABLE q (a INT)")

	const cycles = 40
	schemas := []string{"(a INT)", "(b TEXT, a INT)"}
	var (
		done, failed atomic.Bool
		wg           sync.WaitGroup
		mu           sync.Mutex
		errs         []error
		pushed       atomic.Int64
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
		failed.Store(true)
	}
	// expected are the errors a statement of the second executor may meet
	// between DDL statements: the table is gone, or has other columns.
	expected := func(err error) bool {
		return err == nil || errors.Is(err, exec.ErrNoTable) || errors.Is(err, exec.ErrUnknownColumn)
	}
	statements := []string{
		"INSERT INTO q (a) VALUES (1)",
		"INSERT INTO q (b, a) VALUES ('x', 2)",
		"SELECT * FROM q LIMIT 1 FOR POP",
		"SELECT COUNT(*) FROM q",
	}
	for w := range 3 {
		wg.Go(func() {
			for i := w; !done.Load(); i++ {
				sql := statements[i%len(statements)]
				res, err := run(t, user, sql)
				if !expected(err) {
					fail(fmt.Errorf("%s: %w", sql, err))
					return
				}
				if err == nil && res.RowsAffected > 0 {
					pushed.Add(1)
				}
			}
		})
	}
	wg.Go(func() {
		defer done.Store(true)
		for i := range cycles {
			for _, sql := range []string{"DROP TABLE q", "CREATE TABLE q " + schemas[(i+1)%len(schemas)]} {
				if _, err := run(t, ddl, sql); err != nil {
					fail(fmt.Errorf("%s: %w", sql, err))
					return
				}
			}
			// Let the second executor cache the new schema and use it
			// before the next DROP: progress, not time (a bounded count
			// of statements here).
			for n, start := 0, pushed.Load(); pushed.Load() < start+3 && !failed.Load(); n++ {
				if n == 100_000 {
					fail(fmt.Errorf("after %s, the other executor inserted no row in %d statements of this one", schemas[(i+1)%len(schemas)], n))
					return
				}
				if _, err := run(t, ddl, "SELECT COUNT(*) FROM q"); err != nil {
					fail(err)
					return
				}
			}
		}
	})
	wg.Wait()
	require.Empty(t, errs)
	require.Empty(t, g.violations(), "statements ran on schemas the catalog did not hold at their read version")
	g.checkNoStrayKeys(t)
	misses := g.misses.Load()
	hits := g.lookups.Load() - misses
	t.Logf("catalog: %d statements found their schema cached, %d read it", hits, misses)
	require.Positive(t, hits, "the cache was used")
	require.GreaterOrEqual(t, misses, int64(cycles), "each DDL made the other executor read the catalog again")
}

// guard is a kv.Database whose transactions remember the tables (by id)
// whose keys they read or write, and check at commit that the catalog held
// each at the transaction's read version (read through the snapshot view:
// the check adds no conflict that the statement lacked). Transactions that
// bump the metadata version (DDL) are not checked: DROP TABLE clears the
// table it removes from the catalog. It counts the reads of the metadata
// version (each statement's lookup of its table) and of catalog keys (the
// cache's misses), and passes on every optional interface the executor
// uses.
type guard struct {
	kv.Database
	root []byte
	cat  *exec.Executor // reads the catalog (TablesIn)

	lookups, misses atomic.Int64
	// conflicts counts the commits that failed with not_committed.
	conflicts atomic.Int64
	// hook, if set, runs at the next commit, before it is sent.
	hook atomic.Pointer[func()]
	mu   sync.Mutex // guards bad
	bad  []string
}

// atCommit makes the next commit of g's transactions run fn first.
func (g *guard) atCommit(fn func()) { g.hook.Store(&fn) }

func (g *guard) CertainCommits() bool { return kv.CommitsCertain(g.Database) }

func (g *guard) Transact(ctx context.Context, fn func(kv.Transaction) error) error {
	return kv.Transact(ctx, g, fn)
}

func (g *guard) ReadTransact(ctx context.Context, fn func(kv.ReadTransaction) error) error {
	return kv.ReadTransact(ctx, g, fn)
}

func (g *guard) CreateTransaction(ctx context.Context) (kv.Transaction, error) {
	in, err := g.Database.CreateTransaction(ctx)
	if err != nil {
		return nil, err
	}
	return &guardTx{guardRead: guardRead{in: in, g: g, tables: map[int64]bool{}}, tr: in}, nil
}

func (g *guard) violations() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.bad
}

// tableOf returns the id of the table whose keys hold k (root, then the
// tuple ("t", id, ...): see exec's keys.go).
func (g *guard) tableOf(k []byte) (int64, bool) {
	rest, ok := bytes.CutPrefix(k, g.prefix("t"))
	if !ok {
		return 0, false
	}
	id, _, err := tuple.DecodeInt(rest)
	return id, err == nil
}

// prefix returns the root, then the tuple (tag).
func (g *guard) prefix(tag string) []byte {
	return append(bytes.Clone(g.root), tuple.Tuple{tag}.Pack()...)
}

func (g *guard) catalogKey(k []byte) bool { return bytes.HasPrefix(k, g.prefix("catalog")) }

// checkNoStrayKeys fails t if any key is left under a table id the catalog
// does not hold.
func (g *guard) checkNoStrayKeys(t *testing.T) {
	t.Helper()
	require.NoError(t, g.Database.ReadTransact(bg, func(tr kv.ReadTransaction) error {
		tables, err := g.cat.TablesIn(tr)
		if err != nil {
			return err
		}
		live := map[int64]bool{}
		for _, tb := range tables {
			live[tb.ID] = true
			if err := tb.Queue.Check(tr); err != nil {
				return err
			}
		}
		kvs, err := kv.Collect(tr.GetRange(kv.PrefixRange(g.prefix("t")), kv.RangeOptions{Mode: kv.StreamingModeWantAll}))
		if err != nil {
			return err
		}
		for _, e := range kvs {
			id, ok := g.tableOf(e.Key)
			require.True(t, ok, "%q", e.Key)
			require.True(t, live[id], "key %q of table %d, dropped: written after its DROP", e.Key, id)
		}
		return nil
	}))
}

// guardRead records the reads of a transaction, or of its snapshot view.
type guardRead struct {
	in     kv.ReadTransaction
	g      *guard
	tables map[int64]bool // shared by the transaction and its view
}

func (x guardRead) touch(k []byte) {
	if id, ok := x.g.tableOf(k); ok {
		x.tables[id] = true
	}
}

func (x guardRead) Get(key []byte) ([]byte, error) {
	x.touch(key)
	if x.g.catalogKey(key) {
		x.g.misses.Add(1)
	}
	return x.in.Get(key)
}

func (x guardRead) GetMany(keys [][]byte) ([][]byte, error) {
	for _, k := range keys {
		x.touch(k)
	}
	return kv.GetMany(x.in, keys)
}

func (x guardRead) GetAsync(key []byte) kv.FutureValue {
	x.touch(key)
	return kv.GetAsync(x.in, key)
}

func (x guardRead) GetRangeAsync(r kv.Range, opts kv.RangeOptions) kv.FutureRange {
	x.touch(r.Begin)
	return kv.GetRangeAsync(x.in, r, opts)
}

func (x guardRead) GetRange(r kv.Range, opts kv.RangeOptions) kv.Iterator {
	x.touch(r.Begin)
	return x.in.GetRange(r, opts)
}

func (x guardRead) First(r kv.Range, reverse bool) (kv.KeyValue, bool, error) {
	x.touch(r.Begin)
	return kv.First(x.in, r, reverse)
}

func (x guardRead) MetadataVersion() ([]byte, error) {
	x.g.lookups.Add(1)
	return kv.MetadataVersion(x.in)
}

func (x guardRead) GetReadVersion() (int64, error) { return x.in.GetReadVersion() }
func (x guardRead) Context() context.Context       { return x.in.Context() }
func (x guardRead) Snapshot() kv.ReadTransaction {
	return guardRead{in: x.in.Snapshot(), g: x.g, tables: x.tables}
}

// guardTx records a transaction's reads and writes, and checks them at
// commit.
type guardTx struct {
	guardRead
	tr  kv.Transaction
	ddl bool // the attempt bumped the metadata version
}

func (x *guardTx) Set(key, value []byte) {
	x.touch(key)
	x.tr.Set(key, value)
}

func (x *guardTx) Clear(key []byte) {
	x.touch(key)
	x.tr.Clear(key)
}

func (x *guardTx) ClearRange(r kv.Range) {
	x.touch(r.Begin)
	x.tr.ClearRange(r)
}

func (x *guardTx) Add(key []byte, delta int64) {
	x.touch(key)
	x.tr.Add(key, delta)
}

func (x *guardTx) BitAnd(key, param []byte) {
	x.touch(key)
	x.tr.BitAnd(key, param)
}

func (x *guardTx) CompareAndClear(key, value []byte) {
	x.touch(key)
	x.tr.CompareAndClear(key, value)
}

func (x *guardTx) AddReadConflictKey(key []byte) error {
	x.touch(key)
	return x.tr.AddReadConflictKey(key)
}

func (x *guardTx) AddReadConflictRange(r kv.Range) error {
	x.touch(r.Begin)
	return x.tr.AddReadConflictRange(r)
}

func (x *guardTx) AddWriteConflictKey(key []byte) error {
	x.touch(key)
	return x.tr.AddWriteConflictKey(key)
}

func (x *guardTx) Watch(key []byte) kv.Watch {
	x.touch(key)
	return x.tr.Watch(key)
}

func (x *guardTx) BumpMetadataVersion() {
	x.ddl = true
	kv.BumpMetadataVersion(x.tr)
}

// Commit checks the attempt's tables against the catalog at its read
// version, then commits.
func (x *guardTx) Commit() error {
	if !x.ddl && len(x.tables) > 0 {
		tables, err := x.g.cat.TablesIn(x.tr.Snapshot())
		if err != nil {
			return err
		}
		live := map[int64]bool{}
		for _, tb := range tables {
			live[tb.ID] = true
		}
		for id := range x.tables {
			if !live[id] {
				x.g.mu.Lock()
				x.g.bad = append(x.g.bad, fmt.Sprintf("table %d, not in the catalog at the read version", id))
				x.g.mu.Unlock()
			}
		}
	}
	if fn := x.g.hook.Swap(nil); fn != nil {
		(*fn)()
	}
	err := x.tr.Commit()
	if errors.Is(err, kv.ErrNotCommitted) {
		x.g.conflicts.Add(1)
	}
	return err
}

func (x *guardTx) Cancel() { x.tr.Cancel() }

// OnError starts a new attempt: nothing touched yet.
func (x *guardTx) OnError(err error) error {
	if err := x.tr.OnError(err); err != nil {
		return err
	}
	clear(x.tables)
	x.ddl = false
	return nil
}

// TestCatalogWithoutMetadataVersion: on an engine without a metadata
// version every statement reads its table's schema, as before the cache,
// and sees another executor's DDL at once.
func TestCatalogWithoutMetadataVersion(t *testing.T) {
	t.Parallel()
	db := plainDB{embedded.Open("", embedded.Config{})}
	t.Cleanup(func() { _ = db.Close() })
	tr, err := db.CreateTransaction(bg)
	require.NoError(t, err)
	_, err = kv.MetadataVersion(tr.Snapshot())
	require.ErrorIs(t, err, kv.ErrNoMetadataVersion)
	tr.Cancel()

	a, b := exec.New(db, []byte("p")), exec.New(db, []byte("p"))
	mustRun(t, a, "CREATE TABLE q (a INT)")
	mustRun(t, b, "INSERT INTO q (a) VALUES (1)")
	mustRun(t, a, "DROP TABLE q")
	mustRun(t, a, "CREATE TABLE q (b TEXT)")
	_, err = run(t, b, "INSERT INTO q (a) VALUES (2)")
	require.ErrorIs(t, err, exec.ErrUnknownColumn)
	mustRun(t, b, "INSERT INTO q (b) VALUES ('x')")
	require.Equal(t, [][]any{{"x"}}, mustRun(t, a, "SELECT b FROM q").Rows)
}

// plainDB is an engine without the optional interfaces: its transactions
// and their snapshot views have kv's methods only.
type plainDB struct{ kv.Database }

func (d plainDB) Transact(ctx context.Context, fn func(kv.Transaction) error) error {
	return kv.Transact(ctx, d, fn)
}

func (d plainDB) ReadTransact(ctx context.Context, fn func(kv.ReadTransaction) error) error {
	return kv.ReadTransact(ctx, d, fn)
}

func (d plainDB) CreateTransaction(ctx context.Context) (kv.Transaction, error) {
	tr, err := d.Database.CreateTransaction(ctx)
	if err != nil {
		return nil, err
	}
	return plainTx{tr}, nil
}

type plainTx struct{ kv.Transaction }

func (x plainTx) Snapshot() kv.ReadTransaction { return plainRead{x.Transaction.Snapshot()} }

type plainRead struct{ kv.ReadTransaction }

func (x plainRead) Snapshot() kv.ReadTransaction { return x }
