//go:build fdb

// Package fdb is the FoundationDB engine: an adapter from the kv contract to
// the official Go bindings (API version 730). It needs cgo and the
// FoundationDB client library (libfdb_c), so it is only in builds with
// -tags fdb, and a binary built so needs libfdb_c to start at all, whatever
// its DSN.
//
// All of fdbqueue's keys go under a root prefix (Config.Root), so several
// applications can share a cluster; a Config.Tenant opens a FoundationDB
// tenant instead of (or as well as) a prefix. FoundationDB limits whole keys
// to 10,000 bytes, so under a root prefix a key may be at most 10,000 bytes
// minus the prefix's length; a tenant's prefix does not count.
//
// Retries use FoundationDB's on_error, so backoff and the retry rules are
// FoundationDB's own; the retry limit defaults to DefaultRetryLimit
// (FoundationDB's default is no limit). A transaction's timeout is the
// earlier of Config.Timeout and its context's deadline, counted from the
// transaction's creation across its retries, and the context's cancellation
// cancels the FoundationDB transaction, interrupting a blocked read, commit
// or backoff.
//
// The package selects API version 730 for the whole process: a program that
// already selected another one through the bindings cannot open it.
//
// TLS is configured the way every FoundationDB client is: through network
// options the client library reads from the environment at startup,
// FDB_NETWORK_OPTION_TLS_CERT_PATH, FDB_NETWORK_OPTION_TLS_KEY_PATH,
// FDB_NETWORK_OPTION_TLS_CA_PATH and FDB_NETWORK_OPTION_TLS_VERIFY_PEERS
// (or FDB_TLS_CERTIFICATE_FILE, FDB_TLS_KEY_FILE, FDB_TLS_CA_FILE, which
// the TLS layer reads itself), and a cluster file whose addresses end in
// ":tls".
package fdb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apple/foundationdb/bindings/go/src/fdb"

	"github.com/fdbqueue/fdbqueue/kv"
)

// APIVersion is the FoundationDB API version the engine selects.
const APIVersion = 730

// DefaultRetryLimit is the retry limit of a transaction when
// Config.RetryLimit is 0. FoundationDB's own default is no limit, which
// lets a transaction that always conflicts retry for ever (backing off up
// to a second each time) when its context has no deadline.
const DefaultRetryLimit = 100

// Config says which cluster, where in it, and how transactions retry.
type Config struct {
	// ClusterFile is the cluster file's path; "" uses the default one
	// (FDB_CLUSTER_FILE, ./fdb.cluster, /etc/foundationdb/fdb.cluster).
	ClusterFile string
	// Root prefixes every key fdbqueue writes.
	Root []byte
	// Tenant, if set, opens that FoundationDB tenant, which must exist
	// (fdbcli: tenant create NAME): operations on a missing tenant fail
	// with tenant_not_found (2131).
	Tenant string
	// Timeout bounds each transaction, from its creation, across its
	// retries (FoundationDB's timeout option); 0 means none but the
	// context's deadline.
	Timeout time.Duration
	// RetryLimit bounds a transaction's retries: 0 means
	// DefaultRetryLimit, -1 no limit (the context still bounds them).
	RetryLimit int
	// MaxRetryDelay caps the backoff between retries (FoundationDB's
	// max_retry_delay option); 0 keeps FoundationDB's default, one second.
	MaxRetryDelay time.Duration
}

// Errors of Open.
var (
	// ErrConfig is returned by Open when the Config is invalid.
	ErrConfig = errors.New("fdbqueue: invalid FoundationDB engine config")
)

// handles holds the process's database handles, one per cluster file,
// shared by every DB opened on it and closed with the last of them. The
// bindings hand the same handle to every OpenDatabase of a cluster file from
// a map they do not lock, and destroy it on every Close, so both calls are
// made here, under mu, once per handle.
var handles = struct {
	mu  sync.Mutex // guards dbs, and the bindings' OpenDatabase and Close
	dbs map[string]*shared
}{dbs: map[string]*shared{}}

type shared struct {
	db   fdb.Database
	refs int
}

func acquire(clusterFile string) (fdb.Database, error) {
	handles.mu.Lock()
	defer handles.mu.Unlock()
	if s, ok := handles.dbs[clusterFile]; ok {
		s.refs++
		return s.db, nil
	}
	if err := fdb.APIVersion(APIVersion); err != nil {
		return fdb.Database{}, fmt.Errorf("fdbqueue: selecting FoundationDB API version %d (the process may have selected another): %w", APIVersion, mapError(err))
	}
	db, err := fdb.OpenDatabase(clusterFile)
	if err != nil {
		return fdb.Database{}, err
	}
	handles.dbs[clusterFile] = &shared{db: db, refs: 1}
	return db, nil
}

func releaseHandle(clusterFile string) {
	handles.mu.Lock()
	defer handles.mu.Unlock()
	s := handles.dbs[clusterFile]
	if s.refs--; s.refs == 0 {
		delete(handles.dbs, clusterFile)
		s.db.Close()
	}
}

// DB is a handle on a FoundationDB database (or tenant). It implements
// kv.Database.
type DB struct {
	cfg    Config
	db     fdb.Database
	tenant *fdb.Tenant
	root   []byte
	closed atomic.Bool
}

var _ kv.Database = (*DB)(nil)

// Open connects to the cluster. Every DB opened on a cluster file shares
// the process's one handle on it.
func Open(cfg Config) (*DB, error) {
	if cfg.Timeout < 0 || cfg.MaxRetryDelay < 0 || cfg.RetryLimit < -1 {
		return nil, fmt.Errorf("%w: timeout %v, max retry delay %v, retry limit %d; durations are positive (0: none, or the default), the retry limit a count or -1 for none",
			ErrConfig, cfg.Timeout, cfg.MaxRetryDelay, cfg.RetryLimit)
	}
	d, err := acquire(cfg.ClusterFile)
	if err != nil {
		return nil, fmt.Errorf("fdbqueue: opening FoundationDB (cluster file %q): %w", cfg.ClusterFile, mapError(err))
	}
	h := &DB{cfg: cfg, db: d, root: bytes.Clone(cfg.Root)}
	if cfg.Tenant != "" {
		t, err := d.OpenTenant(fdb.Key(cfg.Tenant))
		if err != nil {
			releaseHandle(cfg.ClusterFile)
			return nil, fmt.Errorf("fdbqueue: opening tenant %q: %w", cfg.Tenant, mapError(err))
		}
		h.tenant = &t
	}
	return h, nil
}

// Close releases the handle; the process's handle on the cluster is
// destroyed with the last DB on it. Transactions already open keep working.
func (d *DB) Close() error {
	if d.closed.CompareAndSwap(false, true) {
		releaseHandle(d.cfg.ClusterFile)
	}
	return nil
}

func (d *DB) Transact(ctx context.Context, fn func(kv.Transaction) error) error {
	return kv.Transact(ctx, d, fn)
}

func (d *DB) ReadTransact(ctx context.Context, fn func(kv.ReadTransaction) error) error {
	return kv.ReadTransact(ctx, d, fn)
}

// CreateTransaction opens a transaction whose options come from the Config
// and ctx (see the package doc), and which ctx's cancellation cancels.
func (d *DB) CreateTransaction(ctx context.Context) (kv.Transaction, error) {
	if d.closed.Load() {
		return nil, kv.Errorf(kv.CodeClientInvalidOperation, "database handle is closed")
	}
	if err := ctx.Err(); err != nil {
		return nil, kv.Join(kv.ErrTransactionCancelled, err)
	}
	var tr fdb.Transaction
	var err error
	if d.tenant != nil {
		tr, err = d.tenant.CreateTransaction()
	} else {
		tr, err = d.db.CreateTransaction()
	}
	if err != nil {
		return nil, mapError(err)
	}
	t := &txn{tr: tr, ctx: ctx, root: d.root}
	if err := t.setOptions(d.cfg); err != nil {
		tr.Cancel()
		return nil, err
	}
	t.snap = &snapshot{t: t}
	t.stop = context.AfterFunc(ctx, tr.Cancel)
	return t, nil
}

// setOptions applies the transaction's options. They persist across
// on_error's resets, and the timeout counts from now, so they are set once.
// Their values' errors would only show at the next operation: they are
// kept in range here.
func (t *txn) setOptions(cfg Config) error {
	timeout := cfg.Timeout
	if dl, ok := t.ctx.Deadline(); ok {
		if rem := time.Until(dl); timeout == 0 || rem <= timeout {
			timeout, t.deadlineTimeout = rem, true
		}
	}
	if timeout != 0 || t.deadlineTimeout {
		t.deadline = time.Now().Add(timeout)
		if err := t.tr.Options().SetTimeout(millis(timeout)); err != nil {
			return mapError(err)
		}
	}
	limit := cfg.RetryLimit
	if limit == 0 {
		limit = DefaultRetryLimit
	}
	if err := t.tr.Options().SetRetryLimit(int64(limit)); err != nil {
		return mapError(err)
	}
	if cfg.MaxRetryDelay > 0 {
		if err := t.tr.Options().SetMaxRetryDelay(millis(cfg.MaxRetryDelay)); err != nil {
			return mapError(err)
		}
	}
	return nil
}

// millis converts a duration to the milliseconds of an FDB option: at least
// 1 (0 would mean "none"), at most 2^31-1 (FoundationDB refuses more).
func millis(d time.Duration) int64 {
	ms := (d + time.Millisecond - 1) / time.Millisecond
	return min(max(int64(ms), 1), math.MaxInt32)
}
