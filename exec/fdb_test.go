//go:build fdb

package exec_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/internal/fdbmodel"
	"github.com/fdbqueue/fdbqueue/internal/fdbshim"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/fdb"
)

// TestCatalogCacheFDB runs the catalog cache's tests through the
// FoundationDB engine and the official bindings, on a cluster of the
// FoundationDB test double: the metadata version is \xff/metadataVersion
// there, read and bumped as on a cluster (.ci/run runs it).
func TestCatalogCacheFDB(t *testing.T) {
	fdbshim.SkipUnlessAvailable(t)
	t.Parallel()
	for name, test := range map[string]func(*testing.T, kv.Database){
		"TwoExecutors":    testTwoExecutors,
		"DDLBeforeCommit": testDDLBeforeCommit,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, db := fdbOnTestDouble(t, []byte(name))
			test(t, db)
		})
	}
}

// fdbOnTestDouble returns a cluster of the FoundationDB test double and
// the FoundationDB engine on it, under root, through the official bindings.
func fdbOnTestDouble(t *testing.T, root []byte) (*fdbshim.Cluster, kv.Database) {
	t.Helper()
	c := fdbshim.NewCluster(t, fdbshim.Config{})
	db, err := fdb.Open(fdb.Config{ClusterFile: c.ClusterFile(), Root: root})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return c, db
}

// TestFDBWaitsThroughBindings counts the sequential waits of statements run
// through the FoundationDB engine (kv/fdb), the official bindings and the
// test double of libfdb_c, which counts where the client blocks on a future
// not answered yet (internal/fdbshim's waits.go), and checks that they are
// the modeled cluster's (internal/fdbmodel), statement by statement, on the
// same tables, and that they send as many read requests: what
// BenchmarkFDBWaits and testdata/waits report is what the real adapter and
// bindings wait for.
func TestFDBWaitsThroughBindings(t *testing.T) {
	fdbshim.SkipUnlessAvailable(t)
	t.Parallel()
	sc := waitsScale{rows: 2000, fifo: 300, priority: 300, warmup: 300}
	for _, w := range waitsWorkloads(sc) {
		switch w.name {
		case "insert-1", "insert-100", "fifo-pop", "fifo-lease", "fit-pop-steady", "fit-pop-100", "fit-lease", "ack", "count":
		default:
			continue
		}
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			c, db := fdbOnTestDouble(t, nil)
			shim := w.setup(newWaitsWorldOn(t, db, c.Waits))
			model := w.setup(newWaitsWorld(t))
			for i := range 30 {
				m, s := model(), shim()
				require.Equal(t, waitsOf(m), waitsOf(s), "%s, statement %d: the modeled waits, then those through the bindings", w.name, i)
				// The requests too: both worlds number their rows alike
				// (newWaitsWorldOn), so an INSERT's ids make the same
				// runs, each read as one range.
				require.Equal(t, requests(m), requests(s), "%s, statement %d: requests", w.name, i)
			}
		})
	}
}

// waitsOf renders c's attempts and sequential waits, by kind.
func waitsOf(c fdbmodel.Counts) string {
	return fmt.Sprintf("attempts=%d %s", c.Attempts, c)
}

// requests are c's read requests (the test double counts them all as
// Gets).
func requests(c fdbmodel.Counts) int { return c.Gets + c.GetManyKeys + c.Batches }
