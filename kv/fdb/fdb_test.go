//go:build fdb

package fdb_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/fdb"
	"github.com/fdbqueue/fdbqueue/kv/kvtest"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// TestContract runs the kv contract suite on a FoundationDB cluster named by
// FDB_CLUSTER_FILE, each test under its own random root prefix.
func TestContract(t *testing.T) {
	cluster := os.Getenv("FDB_CLUSTER_FILE")
	if cluster == "" {
		t.Skip("FDB_CLUSTER_FILE names no cluster: the FoundationDB engine's tests need one (see docs/foundationdb.md)")
	}
	kvtest.Run(t, func(t *testing.T) kvtest.Instance {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		root := tuple.Tuple{"fdbqueue-test", hex.EncodeToString(b)}.Pack()
		db, err := fdb.Open(fdb.Config{ClusterFile: cluster, Root: root})
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = db.Transact(context.Background(), func(tr kv.Transaction) error {
				tr.ClearRange(kv.Range{Begin: []byte{}, End: []byte{0xff}})
				return nil
			})
		})
		return kvtest.Instance{DB: db} // real time: the 5-second test sleeps
	})
}
