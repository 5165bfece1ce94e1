//go:build fdb

package fdbshim

import (
	"encoding/binary"
	"sync"

	"github.com/fdbqueue/fdbqueue/kv/embedded"
)

// database is an FDBDatabase: a client's handle on a cluster (nil: a
// cluster file naming no test cluster, so every request waits).
type database struct {
	cl *Cluster

	// mu guards the fields below.
	mu         sync.Mutex
	defaults   []option // transaction defaults (database options 500-502)
	deferred   int      // an invalid option value, reported by every transaction
	maxWatches int
	watches    int
}

func newDatabase(cl *Cluster) *database {
	return &database{cl: cl, maxWatches: 10_000}
}

// option is a transaction option as set, for re-application after a reset
// (FoundationDB's persistent options).
type option struct {
	code  int
	value []byte
}

// Database option codes (fdb.options).
const (
	dbLocationCacheSize        = 10
	dbMaxWatches               = 20
	dbMachineID                = 21
	dbDatacenterID             = 22
	dbSnapshotRYWEnable        = 26
	dbSnapshotRYWDisable       = 27
	dbLoggingMaxFieldLength    = 405
	dbTransactionTimeout       = 500
	dbTransactionRetryLimit    = 501
	dbTransactionMaxRetryDelay = 502
	dbTransactionSizeLimit     = 503
	dbCausalReadRisky          = 504
	dbIncludePortInAddress     = 505
	dbAutomaticIdempotency     = 506
	dbBypassUnreadable         = 700
	dbUsedDuringCommitProtDis  = 701
	dbReportConflictingKeys    = 702
	dbUseConfigDatabase        = 800
	dbTestCausalReadRisky      = 900
)

// setOption is fdb_database_set_option: an unknown option fails at once;
// an invalid value is deferred, and fails every transaction of the
// database, as the real client does.
func (d *database) setOption(code int, value []byte) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	defer1 := func(c int) {
		if d.deferred == 0 {
			d.deferred = c
		}
	}
	switch code {
	case dbLocationCacheSize, dbMachineID, dbDatacenterID, dbSnapshotRYWEnable, dbLoggingMaxFieldLength,
		dbCausalReadRisky, dbIncludePortInAddress, dbBypassUnreadable, dbTestCausalReadRisky:
		// Accepted; nothing to do without a network or servers.
	case dbMaxWatches:
		n, ok := intOption(value, 0, 1_000_000)
		if !ok {
			defer1(errInvalidOptionValue)
			return 0
		}
		d.maxWatches = int(n)
	case dbTransactionTimeout, dbTransactionRetryLimit, dbTransactionMaxRetryDelay:
		if _, ok := validTxnOption(code, value); !ok {
			defer1(errInvalidOptionValue)
			return 0
		}
		d.defaults = append(d.defaults, option{code: code, value: append([]byte(nil), value...)})
	case dbSnapshotRYWDisable, dbTransactionSizeLimit, dbAutomaticIdempotency, dbUsedDuringCommitProtDis,
		dbReportConflictingKeys, dbUseConfigDatabase:
		defer1(errUnsupportedOperation) // semantics the test double does not have
	default:
		return errInvalidOption
	}
	return 0
}

func (d *database) snapshot() (defaults []option, deferred int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]option(nil), d.defaults...), d.deferred
}

func (d *database) deferredErr() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.deferred
}

// intOption reads an integer option: 8 bytes, little-endian, in [lo, hi]
// (the real client's extractIntOption).
func intOption(v []byte, lo, hi int64) (int64, bool) {
	if len(v) != 8 {
		return 0, false
	}
	n := int64(binary.LittleEndian.Uint64(v))
	return n, n >= lo && n <= hi
}

// tenant is an FDBTenant: a name, resolved when a transaction uses it.
type tenant struct {
	db   *database
	name string
}

// keyspace is where a transaction's keys live: the cluster's storage, or
// a tenant's.
type keyspace struct {
	db     *database
	tenant *string
}

// store returns the storage, or the code a transaction fails with: a
// missing tenant, or 0 and nil for an unreachable cluster.
func (k keyspace) store() (*embedded.DB, int) {
	if k.db.cl == nil {
		return nil, 0
	}
	if k.tenant == nil {
		return k.db.cl.db, 0
	}
	return k.db.cl.tenant(*k.tenant)
}
