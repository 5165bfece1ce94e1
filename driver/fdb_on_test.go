//go:build fdb

package driver_test

import (
	"database/sql"
	"fmt"
	"os"
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

			exactlyOnce(t, db, 4, 40, 4)
			faults := c.CommitErrors()
			for _, code := range []int{1007, 1020, 1021} {
				require.Positive(t, faults[code], "no commit failed with %d: %v", code, faults)
			}
		})
	}
}

// TestPutBackUnderFaultsFDB is TestPutBackUnderFaults through the
// FoundationDB engine: early Closes put the rows not read back exactly
// once through commits that fail with not_committed and
// commit_unknown_result (applied or not), and pops whose contexts end at
// random moments lose nothing, under conflicts.
func TestPutBackUnderFaultsFDB(t *testing.T) {
	t.Parallel()
	if !fdbshim.Available() {
		t.Skip("needs the FoundationDB test double (a real cluster injects no faults)")
	}
	for name, faults := range map[string]*embedded.Faults{
		"unknown":   {Seed: 1, Conflict: 0.1, UnknownApplied: 0.15, UnknownNotApplied: 0.15},
		"deadlines": {Seed: 2, Conflict: 0.2},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := fdbshim.NewCluster(t, fdbshim.Config{Faults: faults})
			db, err := sql.Open("fdbqueue", "fdb:"+c.ClusterFile()+"?root=q")
			require.NoError(t, err)
			defer db.Close()
			const total = 300
			fillFit(t, db, total)
			if name == "deadlines" {
				popUntilEmpty(t, db, 4).check(t, db, total)
				return
			}
			tally := &popTally{}
			drain(t, 2, func() (int, error) { return popOne(db, tally) }, nil)
			tally.check(t, db, total)
			require.Len(t, tally.delivered, total)
			require.Positive(t, c.CommitErrors()[1021], "no commit failed with 1021")
		})
	}
}
