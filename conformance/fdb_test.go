//go:build fdb

package conformance_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/fdbqueue/fdbqueue/conformance"
)

// TestFoundationDB runs the scenarios on the cluster FDB_CLUSTER_FILE names,
// under a fresh root prefix.
func TestFoundationDB(t *testing.T) {
	cluster := os.Getenv("FDB_CLUSTER_FILE")
	if cluster == "" {
		t.Skip("FDB_CLUSTER_FILE names no cluster: the FoundationDB conformance run needs one (see docs/foundationdb.md)")
	}
	conformance.Run(t, fmt.Sprintf("fdb:%s?root=conformance-%d", cluster, time.Now().UnixNano()))
}
