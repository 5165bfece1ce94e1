//go:build fdb

package driver_test

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	fdbqueue "github.com/fdbqueue/fdbqueue/driver"
	"github.com/fdbqueue/fdbqueue/internal/fdbshim"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
)

// testCluster returns a cluster file for fdb: DSNs: a cluster of the
// FoundationDB test double (internal/fdbshim) when the test binary links
// it, or else the one FDB_CLUSTER_FILE names.
func testCluster(t *testing.T) string {
	t.Helper()
	if fdbshim.Available() {
		return fdbshim.NewCluster(t, fdbshim.Config{}).ClusterFile()
	}
	if f := os.Getenv("FDB_CLUSTER_FILE"); f != "" {
		return f
	}
	t.Skip("no cluster: set FDB_CLUSTER_FILE, or link the FoundationDB test double (see docs/foundationdb.md)")
	return ""
}

// TestFDBEngine: a build with -tags fdb opens fdb: DSNs, and says what is
// wrong with a bad one.
func TestFDBEngine(t *testing.T) {
	t.Parallel()
	cluster := testCluster(t)
	db, err := sql.Open("fdbqueue", "fdb:"+cluster+"?root="+t.Name())
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec("CREATE TABLE q (priority INT NOT NULL, v TEXT)")
	require.NoError(t, err)
	_, err = db.Exec("INSERT INTO q VALUES (1, 'a')")
	require.NoError(t, err)
	require.Equal(t, int64(1), count(t, db, "q"))

	for dsn, want := range map[string]string{
		"fdb:?retry_limit=0":    "a count of at least 1, or -1",
		"fdb:?retry_limit=x":    "a count of at least 1, or -1",
		"fdb:?timeout=-1s":      "a duration such as 5s",
		"fdb:?root=":            "root is empty",
		"fdb:" + cluster + "?x": `unknown parameter "x"`,
	} {
		_, err := sql.Open("fdbqueue", dsn)
		require.ErrorIs(t, err, fdbqueue.ErrDSN, dsn)
		require.ErrorContains(t, err, want, dsn)
	}

	// The engine's error keeps its code behind ErrEngine.
	_, err = sql.Open("fdbqueue", "fdb:"+t.TempDir()+"/no.cluster")
	require.ErrorIs(t, err, fdbqueue.ErrEngine)
	require.Equal(t, 1515, kv.Code(err), "no_cluster_file_found: %v", err)
}

// TestTenantMustExist: FoundationDB opens any tenant name; the first
// statement on one that does not exist fails with tenant_not_found.
func TestTenantMustExist(t *testing.T) {
	t.Parallel()
	if !fdbshim.Available() {
		t.Skip("needs the FoundationDB test double")
	}
	c := fdbshim.NewCluster(t, fdbshim.Config{})
	db, err := sql.Open("fdbqueue", "fdb:"+c.ClusterFile()+"?tenant=nope")
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec("CREATE TABLE q (priority INT NOT NULL)")
	require.Error(t, err)
	require.Equal(t, 2131, kv.Code(err), "%v", err)

	c.CreateTenant("acme")
	db2, err := sql.Open("fdbqueue", "fdb:"+c.ClusterFile()+"?tenant=acme")
	require.NoError(t, err)
	defer db2.Close()
	_, err = db2.Exec("CREATE TABLE q (priority INT NOT NULL)")
	require.NoError(t, err)
}

// TestExactlyOnceUnderFaultsFDB is TestExactlyOnceUnderFaults through the
// FoundationDB engine, the official bindings and the test double's client
// library: the cluster fails commits with not_committed, with
// commit_unknown_result applied and not applied, and with
// transaction_too_old, and every pushed item is popped exactly once.
func TestExactlyOnceUnderFaultsFDB(t *testing.T) {
	t.Parallel()
	if !fdbshim.Available() {
		t.Skip("needs the FoundationDB test double (a real cluster injects no faults)")
	}
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			c := fdbshim.NewCluster(t, fdbshim.Config{Faults: &embedded.Faults{
				Seed: seed, Conflict: 0.1, UnknownApplied: 0.1, UnknownNotApplied: 0.1, TooOld: 0.1,
			}})
			db, err := sql.Open("fdbqueue", "fdb:"+c.ClusterFile()+"?root=q")
			require.NoError(t, err)
			defer db.Close()
			for i := 0; i < 5; i++ {
				_, err = db.Exec("CREATE TABLE q (priority INT NOT NULL, cpu INT NOT NULL, item TEXT NOT NULL, INDEX fit (cpu))")
				require.NoError(t, err)
				_, err = db.Exec("DROP TABLE q")
				require.NoError(t, err)
			}
			_, err = db.Exec("CREATE TABLE q (priority INT NOT NULL, cpu INT NOT NULL, item TEXT NOT NULL, INDEX fit (cpu))")
			require.NoError(t, err)

			const producers, each, consumers = 4, 40, 4
			var popped sync.Map
			var taken atomic.Int64
			var producing, consuming sync.WaitGroup
			var pushed atomic.Bool
			errs := make(chan error, producers+consumers)
			for p := 0; p < producers; p++ {
				producing.Add(1)
				go func() {
					defer producing.Done()
					for i := 0; i < each; i++ {
						res, err := db.Exec("INSERT INTO q (priority, cpu, item) VALUES (?, ?, ?)", i%3, i%2, fmt.Sprint(p, "-", i))
						if err != nil {
							errs <- fmt.Errorf("push: %w", err)
							return
						}
						if n, _ := res.RowsAffected(); n != 1 {
							errs <- fmt.Errorf("push reported %d rows", n)
							return
						}
					}
				}()
			}
			for w := 0; w < consumers; w++ {
				consuming.Add(1)
				go func() {
					defer consuming.Done()
					for taken.Load() < producers*each {
						if pushed.Load() {
							var n int
							if err := db.QueryRow("SELECT COUNT(*) FROM q").Scan(&n); err != nil {
								errs <- err
								return
							}
							if n == 0 {
								return
							}
						}
						query := "SELECT item FROM q ORDER BY priority DESC LIMIT 1 FOR POP"
						if w%2 == 1 {
							query = "SELECT item FROM q WHERE cpu <= 1 ORDER BY priority DESC LIMIT 1 FOR POP"
						}
						var item string
						err := db.QueryRow(query).Scan(&item)
						if errors.Is(err, sql.ErrNoRows) {
							continue
						}
						if err != nil {
							errs <- fmt.Errorf("pop: %w", err)
							return
						}
						if _, dup := popped.LoadOrStore(item, true); dup {
							errs <- fmt.Errorf("%s popped twice", item)
							return
						}
						taken.Add(1)
					}
				}()
			}
			producing.Wait()
			pushed.Store(true)
			consuming.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			for p := 0; p < producers; p++ {
				for i := 0; i < each; i++ {
					_, ok := popped.Load(fmt.Sprint(p, "-", i))
					require.True(t, ok, "item %d-%d lost", p, i)
				}
			}
			require.Zero(t, count(t, db, "q"), "items pushed twice")
			faults := c.CommitErrors()
			for _, code := range []int{1007, 1020, 1021} {
				require.Positive(t, faults[code], "no commit failed with %d: %v", code, faults)
			}
		})
	}
}
