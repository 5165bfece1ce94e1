//go:build fdb

package conformance_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/fdbqueue/fdbqueue/conformance"
	"github.com/fdbqueue/fdbqueue/internal/fdbshim"
)

// TestFoundationDB runs the scenarios through the FoundationDB engine: on a
// cluster of the FoundationDB test double (internal/fdbshim) when the test
// binary links it (.ci/run does), or else on the cluster FDB_CLUSTER_FILE
// names, under a fresh root prefix.
func TestFoundationDB(t *testing.T) {
	cluster := os.Getenv("FDB_CLUSTER_FILE")
	switch {
	case fdbshim.Available():
		cluster = fdbshim.NewCluster(t, fdbshim.Config{}).ClusterFile()
	case cluster == "":
		t.Skip("no cluster: set FDB_CLUSTER_FILE, or link the FoundationDB test double (see docs/foundationdb.md)")
	}
	conformance.Run(t, fmt.Sprintf("fdb:%s?root=conformance-%d", cluster, time.Now().UnixNano()))
}
