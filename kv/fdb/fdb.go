//go:build fdb

// Package fdb is the FoundationDB engine: a thin adapter from the kv
// contract to the official Go bindings (API version 730). It needs cgo and
// the FoundationDB client library, so it is only in builds with -tags fdb.
//
// All of fdbqueue's keys go under a root prefix (Config.Root), so several
// applications can share a cluster; a Config.Tenant opens a FoundationDB
// tenant instead of (or as well as) a prefix. Retries use the bindings'
// OnError, so backoff, retry limits and timeouts behave exactly as
// FoundationDB defines them; the context's deadline becomes the
// transaction's timeout option.
//
// TLS is configured the way every FoundationDB client is: through the
// FDB_NETWORK_OPTION_TLS_* environment variables (for example
// FDB_NETWORK_OPTION_TLS_CERTIFICATE_FILE, FDB_NETWORK_OPTION_TLS_KEY_FILE,
// FDB_NETWORK_OPTION_TLS_CA_FILE), which the client library reads at
// startup, and a cluster file whose addresses end in ":tls".
package fdb

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/apple/foundationdb/bindings/go/src/fdb"

	"github.com/fdbqueue/fdbqueue/kv"
)

// APIVersion is the FoundationDB API version the engine selects.
const APIVersion = 730

// Config says which cluster and where in it.
type Config struct {
	// ClusterFile is the cluster file's path; "" uses the default one.
	ClusterFile string
	// Root prefixes every key fdbqueue writes.
	Root []byte
	// Tenant, if set, opens that FoundationDB tenant.
	Tenant string
	// Timeout and RetryLimit set the database's default transaction
	// options (0: FoundationDB's defaults).
	Timeout    time.Duration
	RetryLimit int
}

var apiOnce struct {
	sync.Once
	err error
}

// DB is a handle on a FoundationDB database (or tenant). It implements
// kv.Database.
type DB struct {
	db     fdb.Database
	tenant *fdb.Tenant
	root   []byte
}

var _ kv.Database = (*DB)(nil)

// Open connects to the cluster.
func Open(cfg Config) (*DB, error) {
	apiOnce.Do(func() { apiOnce.err = fdb.APIVersion(APIVersion) })
	if apiOnce.err != nil {
		return nil, fmt.Errorf("fdbqueue: selecting FoundationDB API version %d: %w", APIVersion, apiOnce.err)
	}
	var d fdb.Database
	var err error
	if cfg.ClusterFile == "" {
		d, err = fdb.OpenDefault()
	} else {
		d, err = fdb.OpenDatabase(cfg.ClusterFile)
	}
	if err != nil {
		return nil, fmt.Errorf("fdbqueue: opening FoundationDB (cluster file %q): %w", cfg.ClusterFile, mapError(err))
	}
	if cfg.Timeout > 0 {
		if err := d.Options().SetTransactionTimeout(cfg.Timeout.Milliseconds()); err != nil {
			return nil, mapError(err)
		}
	}
	if cfg.RetryLimit != 0 {
		if err := d.Options().SetTransactionRetryLimit(int64(cfg.RetryLimit)); err != nil {
			return nil, mapError(err)
		}
	}
	h := &DB{db: d, root: bytes.Clone(cfg.Root)}
	if cfg.Tenant != "" {
		t, err := d.OpenTenant(fdb.Key(cfg.Tenant))
		if err != nil {
			return nil, fmt.Errorf("fdbqueue: opening tenant %q: %w", cfg.Tenant, mapError(err))
		}
		h.tenant = &t
	}
	return h, nil
}

// Close releases the handle.
func (d *DB) Close() error {
	d.db.Close()
	return nil
}

func (d *DB) Transact(ctx context.Context, fn func(kv.Transaction) error) error {
	return kv.Transact(ctx, d, fn)
}

func (d *DB) ReadTransact(ctx context.Context, fn func(kv.ReadTransaction) error) error {
	return kv.ReadTransact(ctx, d, fn)
}

// CreateTransaction opens a transaction; a deadline on ctx becomes its
// timeout.
func (d *DB) CreateTransaction(ctx context.Context) (kv.Transaction, error) {
	if err := ctx.Err(); err != nil {
		return nil, errors.Join(kv.ErrTransactionCancelled, err)
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
	if err := t.applyDeadline(); err != nil {
		return nil, err
	}
	t.snap = &snapshot{t: t}
	return t, nil
}

// mapError turns the bindings' errors into kv's.
func mapError(err error) error {
	var fe fdb.Error
	if errors.As(err, &fe) {
		return &kv.Error{Code: fe.Code, Detail: fe.Error()}
	}
	return err
}

type txn struct {
	tr   fdb.Transaction
	ctx  context.Context
	root []byte
	snap *snapshot
}

var _ kv.Transaction = (*txn)(nil)

func (t *txn) applyDeadline() error {
	if dl, ok := t.ctx.Deadline(); ok {
		ms := time.Until(dl).Milliseconds()
		if ms < 1 {
			ms = 1
		}
		if err := t.tr.Options().SetTimeout(ms); err != nil {
			return mapError(err)
		}
	}
	return nil
}

func (t *txn) key(k []byte) fdb.Key {
	return fdb.Key(append(bytes.Clone(t.root), k...))
}

func (t *txn) rng(r kv.Range) fdb.KeyRange {
	return fdb.KeyRange{Begin: t.key(r.Begin), End: t.key(r.End)}
}

func (t *txn) check() error {
	if err := t.ctx.Err(); err != nil {
		return errors.Join(kv.ErrTransactionCancelled, err)
	}
	return nil
}

func (t *txn) Context() context.Context { return t.ctx }

func (t *txn) Get(key []byte) ([]byte, error) { return get(t, t.tr.Get(t.key(key))) }

func get(t *txn, f fdb.FutureByteSlice) ([]byte, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	v, err := f.Get()
	return v, mapError(err)
}

func (t *txn) GetRange(r kv.Range, opts kv.RangeOptions) kv.Iterator {
	return newIter(t, t.tr.GetRange(t.rng(r), rangeOptions(opts)))
}

func rangeOptions(o kv.RangeOptions) fdb.RangeOptions {
	mode := fdb.StreamingModeIterator
	switch o.Mode {
	case kv.StreamingModeWantAll:
		mode = fdb.StreamingModeWantAll
	case kv.StreamingModeSmall:
		mode = fdb.StreamingModeSmall
	}
	return fdb.RangeOptions{Limit: o.Limit, Reverse: o.Reverse, Mode: mode}
}

func (t *txn) GetReadVersion() (int64, error) {
	if err := t.check(); err != nil {
		return 0, err
	}
	v, err := t.tr.GetReadVersion().Get()
	return v, mapError(err)
}

func (t *txn) Snapshot() kv.ReadTransaction { return t.snap }

func (t *txn) Set(key, value []byte) { t.tr.Set(t.key(key), value) }
func (t *txn) Clear(key []byte)      { t.tr.Clear(t.key(key)) }
func (t *txn) ClearRange(r kv.Range) { t.tr.ClearRange(t.rng(r)) }

func (t *txn) Add(key []byte, delta int64) {
	t.tr.Add(t.key(key), binary.LittleEndian.AppendUint64(nil, uint64(delta)))
}

func (t *txn) CompareAndClear(key, value []byte) { t.tr.CompareAndClear(t.key(key), value) }

func (t *txn) AddReadConflictKey(key []byte) error {
	return mapError(t.tr.AddReadConflictKey(t.key(key)))
}

func (t *txn) AddReadConflictRange(r kv.Range) error {
	return mapError(t.tr.AddReadConflictRange(t.rng(r)))
}

func (t *txn) AddWriteConflictKey(key []byte) error {
	return mapError(t.tr.AddWriteConflictKey(t.key(key)))
}

func (t *txn) Commit() error {
	if err := t.check(); err != nil {
		return err
	}
	return mapError(t.tr.Commit().Get())
}

func (t *txn) Cancel() { t.tr.Cancel() }

// Watch implements kv.Transaction over the bindings' watch future.
func (t *txn) Watch(key []byte) kv.Watch {
	w := &watch{f: t.tr.Watch(t.key(key)), done: make(chan struct{})}
	go func() {
		// The bindings wait on the future's callback, not on a thread.
		err := w.f.Get()
		w.mu.Lock()
		w.err = mapError(err)
		w.mu.Unlock()
		close(w.done)
	}()
	return w
}

// watch is a kv.Watch over a FoundationDB watch future.
type watch struct {
	f    fdb.FutureNil
	done chan struct{}
	mu   sync.Mutex // guards err
	err  error
}

func (w *watch) Done() <-chan struct{} { return w.done }
func (w *watch) Cancel()               { w.f.Cancel() }

func (w *watch) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *watch) Wait(ctx context.Context) error {
	select {
	case <-w.done:
		return w.Err()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// OnError hands retryable errors to FoundationDB's own OnError (its backoff,
// retry limit and timeout), and returns the rest.
func (t *txn) OnError(err error) error {
	var ke *kv.Error
	if !errors.As(err, &ke) {
		return err
	}
	if cerr := t.check(); cerr != nil {
		return errors.Join(err, cerr)
	}
	if e := t.tr.OnError(fdb.Error{Code: ke.Code}).Get(); e != nil {
		return mapError(e)
	}
	return t.applyDeadline()
}

// snapshot is the transaction's snapshot view.
type snapshot struct{ t *txn }

func (s *snapshot) Get(key []byte) ([]byte, error) {
	return get(s.t, s.t.tr.Snapshot().Get(s.t.key(key)))
}

func (s *snapshot) GetRange(r kv.Range, opts kv.RangeOptions) kv.Iterator {
	return newIter(s.t, s.t.tr.Snapshot().GetRange(s.t.rng(r), rangeOptions(opts)))
}

func (s *snapshot) GetReadVersion() (int64, error) { return s.t.GetReadVersion() }
func (s *snapshot) Snapshot() kv.ReadTransaction   { return s }
func (s *snapshot) Context() context.Context       { return s.t.ctx }

// iter strips the root prefix from the keys the bindings return.
type iter struct {
	t   *txn
	ri  *fdb.RangeIterator
	cur kv.KeyValue
	err error
}

func newIter(t *txn, rr fdb.RangeResult) *iter {
	it := &iter{t: t, ri: rr.Iterator()}
	it.err = t.check()
	return it
}

func (it *iter) Next() bool {
	if it.err != nil || !it.ri.Advance() {
		return false
	}
	e, err := it.ri.Get()
	if err != nil {
		it.err = mapError(err)
		return false
	}
	it.cur = kv.KeyValue{Key: bytes.TrimPrefix(e.Key, it.t.root), Value: e.Value}
	return true
}

func (it *iter) KeyValue() kv.KeyValue { return it.cur }
func (it *iter) Err() error            { return it.err }
