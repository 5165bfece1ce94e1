//go:build fdb

package fdb_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sync"
	"testing"
	"time"

	bindings "github.com/apple/foundationdb/bindings/go/src/fdb"
	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/internal/fdbshim"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/fdb"
	"github.com/fdbqueue/fdbqueue/kv/kvtest"
)

// The tests run on clusters of the FoundationDB test double
// (internal/fdbshim) when the test binary links its libfdb_c (.ci/run
// does), or else on the real cluster FDB_CLUSTER_FILE names.

// realCluster returns the real cluster's file, "" with the test double
// (which reaches no real cluster).
func realCluster() string {
	if fdbshim.Available() {
		return ""
	}
	return os.Getenv("FDB_CLUSTER_FILE")
}

// shimCluster returns a test cluster of the test double, or skips t: the
// test needs what only the test double does (faults, a clock, an
// unreachable cluster, a look behind the client).
func shimCluster(t *testing.T, cfg fdbshim.Config) *fdbshim.Cluster {
	t.Helper()
	if !fdbshim.Available() {
		t.Skip("needs the FoundationDB test double (see docs/foundationdb.md)")
	}
	return fdbshim.NewCluster(t, cfg)
}

// clock is a test cluster's clock, for the 5-second limit without waiting.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Unix(1_700_000_000, 0)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestContract runs the kv contract suite through the official bindings:
// each test on a cluster of its own (the test double), or on a tenant of
// its own on a real cluster. Not under a root prefix: a prefix takes from
// the 10,000-byte key limit that the suite checks (TestRootPrefix covers
// prefixes).
func TestContract(t *testing.T) {
	if cluster := realCluster(); cluster != "" {
		kvtest.Run(t, func(t *testing.T) kvtest.Instance {
			return kvtest.Instance{DB: openTenant(t, cluster)} // real time: the 5-second test sleeps
		})
		return
	}
	if !fdbshim.Available() {
		t.Skip("no cluster: set FDB_CLUSTER_FILE, or link the FoundationDB test double (see docs/foundationdb.md)")
	}
	kvtest.Run(t, func(t *testing.T) kvtest.Instance {
		c := newClock()
		cl := fdbshim.NewCluster(t, fdbshim.Config{Clock: c.Now})
		db, err := fdb.Open(fdb.Config{ClusterFile: cl.ClusterFile(), MaxRetryDelay: 5 * time.Millisecond})
		require.NoError(t, err)
		return kvtest.Instance{DB: db, Advance: c.Advance}
	})
}

// openTenant opens a fresh tenant of a real cluster (tenant_mode must allow
// tenants), deleted when t ends.
func openTenant(t *testing.T, cluster string) kv.Database {
	t.Helper()
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	name := "fdbqueue-test-" + hex.EncodeToString(b)
	require.NoError(t, fdb.WithBindings(cluster, func(db bindings.Database) error {
		return db.CreateTenant(bindings.Key(name))
	}), "the contract suite runs in tenants: configure tenant_mode=optional_experimental")
	db, err := fdb.Open(fdb.Config{ClusterFile: cluster, Tenant: name, MaxRetryDelay: 5 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() {
		// Runs after kvtest closed db (cleanups run last first): on a
		// handle of its own.
		cleaner, err := fdb.Open(fdb.Config{ClusterFile: cluster, Tenant: name})
		if err != nil {
			return
		}
		defer cleaner.Close()
		_ = cleaner.Transact(context.Background(), func(tr kv.Transaction) error {
			tr.ClearRange(kv.PrefixRange(nil))
			return nil
		})
		_ = fdb.WithBindings(cluster, func(db bindings.Database) error {
			return db.DeleteTenant(bindings.Key(name))
		})
	})
	return db
}
