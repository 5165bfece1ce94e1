//go:build fdb

package exec_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/internal/fdbshim"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/fdb"
)

// TestCatalogCacheFDB runs the catalog cache's tests through the
// FoundationDB engine and the official bindings, on a cluster of the
// FoundationDB test double: the metadata version is \xff/metadataVersion
// there, read and bumped as on a cluster (.ci/run runs it).
func TestCatalogCacheFDB(t *testing.T) {
	if !fdbshim.Available() {
		t.Skip("needs the FoundationDB test double (internal/fdbshim/build.sh, see .ci/run)")
	}
	t.Parallel()
	for name, test := range map[string]func(*testing.T, kv.Database){
		"TwoExecutors":    testTwoExecutors,
		"DDLBeforeCommit": testDDLBeforeCommit,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := fdbshim.NewCluster(t, fdbshim.Config{})
			db, err := fdb.Open(fdb.Config{ClusterFile: c.ClusterFile(), Root: []byte(name)})
			require.NoError(t, err)
			t.Cleanup(func() { _ = db.Close() })
			test(t, db)
		})
	}
}
