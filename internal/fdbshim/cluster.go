//go:build fdb

package fdbshim

import (
	"crypto/rand"
	"encoding/hex"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
)

func init() {
	if !testing.Testing() {
		panic("fdbshim is a test double of FoundationDB's client library: only tests may import it")
	}
}

// Config describes a test cluster.
type Config struct {
	// Faults, if set, fails commits the way a FoundationDB cluster does
	// (the embedded engine's fault injection), as seen through the client
	// library: not_committed, commit_unknown_result applied or not,
	// transaction_too_old, transaction_timed_out, and commit latency.
	Faults *embedded.Faults
	// Clock is the cluster's clock for the 5-second transaction limit
	// (transaction_too_old); nil is time.Now. Client-side timers
	// (timeouts, backoff, watch polling) always use real time.
	Clock func() time.Time
	// WatchPoll is how often a watch looks at its key; 0 means 5ms.
	WatchPoll time.Duration
	// Latencies are those of the waits the test double counts (Waits); a
	// zero one is FDBSHIM_GRV_LATENCY's, FDBSHIM_READ_LATENCY's or
	// FDBSHIM_COMMIT_LATENCY's (which turn on Sleep), or else
	// internal/fdbmodel's default.
	Latencies Latencies
}

// Cluster is a test cluster: an embedded database that the test double
// reaches through a cluster file.
type Cluster struct {
	id   string
	file string
	cfg  Config
	db   *embedded.DB

	waits *waitCounts // what its transactions waited (waits.go)

	// mu guards tenants and commitErrors.
	mu           sync.Mutex
	tenants      map[string]*embedded.DB
	commitErrors map[int]int
}

var clusters = struct {
	sync.Mutex
	byID map[string]*Cluster
}{byID: map[string]*Cluster{}}

// NewCluster starts a cluster for t, empty, and stops it when t ends. It
// fails t if the program's libfdb_c is not the test double.
func NewCluster(t testing.TB, cfg Config) *Cluster {
	t.Helper()
	if !Available() {
		t.Fatal("fdbshim: the program's libfdb_c is not the test double; build it with internal/fdbshim/build.sh and link it (see .ci/run)")
	}
	if cfg.WatchPoll <= 0 {
		cfg.WatchPoll = 5 * time.Millisecond
	}
	c := &Cluster{
		id:           randomID(),
		cfg:          cfg,
		db:           embedded.Open("", embedded.Config{Faults: cfg.Faults, Clock: cfg.Clock}),
		tenants:      map[string]*embedded.DB{},
		commitErrors: map[int]int{},
		waits:        newWaitCounts(latenciesFromEnv(cfg.Latencies)),
	}
	c.file = WriteClusterFile(t, c.id)
	clusters.Lock()
	clusters.byID[c.id] = c
	clusters.Unlock()
	t.Cleanup(func() {
		clusters.Lock()
		delete(clusters.byID, c.id)
		clusters.Unlock()
	})
	return c
}

// SkipUnlessAvailable skips t when the program's libfdb_c is not the test
// double (a test binary linked with the real client library).
func SkipUnlessAvailable(t testing.TB) {
	t.Helper()
	if !Available() {
		t.Skip("needs the FoundationDB test double (internal/fdbshim/build.sh, see .ci/run)")
	}
}

// WriteClusterFile writes a cluster file naming the cluster id (a file for
// a cluster that does not exist, when id is not a NewCluster's: every
// request then waits, as on a cluster whose coordinators are unreachable)
// and returns its path.
func WriteClusterFile(t testing.TB, id string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fdb.cluster")
	if err := os.WriteFile(path, []byte(connectionString(id)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func randomID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ClusterFile returns the path of the cluster's cluster file.
func (c *Cluster) ClusterFile() string { return c.file }

// ConnectionString returns the cluster's connection string, the cluster
// file's content (for fdb.OpenWithConnectionString).
func (c *Cluster) ConnectionString() string { return connectionString(c.id) }

func connectionString(id string) string { return "fdbshim:" + id + "@127.0.0.1:4500" }

// DB returns the cluster's storage as the embedded engine, to look behind
// the client library (what a commit that reported an error really wrote).
func (c *Cluster) DB() kv.Database { return c.db }

// CommitErrors counts the commits that failed, by error code, as the
// client library reported them: tests check that their faults happened.
func (c *Cluster) CommitErrors() map[int]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.commitErrors)
}

func (c *Cluster) countCommitError(code int) {
	c.mu.Lock()
	c.commitErrors[code]++
	c.mu.Unlock()
}

// CreateTenant creates a tenant (FoundationDB's tenants must exist before a
// transaction uses them: fdb_database_open_tenant does not check).
func (c *Cluster) CreateTenant(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.tenants[name]; !ok {
		c.tenants[name] = embedded.Open("", embedded.Config{Faults: c.cfg.Faults, Clock: c.cfg.Clock})
	}
}

// tenant returns a tenant's storage, or the code a transaction on it fails
// with.
func (c *Cluster) tenant(name string) (*embedded.DB, int) {
	if len(name) > 0 && name[0] == 0xff {
		return nil, errInvalidTenantName
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	db, ok := c.tenants[name]
	if !ok {
		return nil, errTenantNotFound
	}
	return db, 0
}

// clusterString is a cluster file's content: description:ID@addresses.
var clusterString = regexp.MustCompile(`^\s*([A-Za-z0-9_]+):([A-Za-z0-9]+)@(\S+)\s*$`)

// lookupCluster finds the cluster a connection string names: nil (and no
// error) for a well-formed string naming no test cluster.
func lookupCluster(conn string) (*Cluster, int) {
	m := clusterString.FindStringSubmatch(conn)
	if m == nil {
		return nil, errConnectionStringInvalid
	}
	clusters.Lock()
	defer clusters.Unlock()
	return clusters.byID[m[2]], 0
}

// clusterFile resolves the cluster file as the real client does: the given
// path, or FDB_CLUSTER_FILE, ./fdb.cluster, /etc/foundationdb/fdb.cluster.
func clusterFile(path string) (string, int) {
	if path != "" {
		return path, 0
	}
	if p := os.Getenv("FDB_CLUSTER_FILE"); p != "" {
		return p, 0
	}
	for _, p := range []string{"fdb.cluster", "/etc/foundationdb/fdb.cluster"} {
		if _, err := os.Stat(p); err == nil {
			return p, 0
		}
	}
	return "", errNoClusterFileFound
}

func openClusterFile(path string) (*Cluster, int) {
	p, code := clusterFile(path)
	if code != 0 {
		return nil, code
	}
	b, err := os.ReadFile(p)
	if os.IsNotExist(err) {
		return nil, errNoClusterFileFound
	}
	if err != nil {
		return nil, errFileNotReadable
	}
	return lookupCluster(string(b))
}
