//go:build fdb

package exec_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/internal/fdbmodel"
	"github.com/fdbqueue/fdbqueue/internal/fdbshim"
	"github.com/fdbqueue/fdbqueue/kv/fdb"
)

// TestFDBWaitsThroughBindings counts the sequential waits of statements run
// through the FoundationDB engine (kv/fdb), the official bindings and the
// test double of libfdb_c, which counts where the client blocks on a future
// not answered yet (internal/fdbshim's waits.go), and checks that they are
// the modeled cluster's (internal/fdbmodel), statement by statement, on the
// same tables, and that they send as many read requests: what
// BenchmarkFDBWaits and testdata/waits report is what the real adapter and
// bindings wait for.
func TestFDBWaitsThroughBindings(t *testing.T) {
	if !fdbshim.Available() {
		t.Skip("needs the FoundationDB test double (internal/fdbshim/build.sh, see .ci/run)")
	}
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
			c := fdbshim.NewCluster(t, fdbshim.Config{})
			db, err := fdb.Open(fdb.Config{ClusterFile: c.ClusterFile()})
			require.NoError(t, err)
			t.Cleanup(func() { _ = db.Close() })
			shim := w.setup(newWaitsWorldOn(t, db, c.Waits))
			model := w.setup(newWaitsWorld(t))
			for i := range 30 {
				m, s := model(), shim()
				require.Equal(t, waitsOf(m), waitsOf(s), "%s, statement %d: the modeled waits, then those through the bindings", w.name, i)
				// The requests too, but for the ids' runs: each executor
				// draws its ids at random, in blocks, and an INSERT reads
				// a run of four or more consecutive ids as one range.
				require.InDelta(t, requests(m), requests(s), 2, "%s, statement %d: requests", w.name, i)
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
