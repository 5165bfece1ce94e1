package fdbmodel

import (
	"context"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
)

// Latencies are the modeled durations of each kind of wait.
type Latencies struct {
	// GRV is getting a read version: a round trip to a GRV proxy, which
	// confirms it with the transaction logs.
	GRV time.Duration
	// Read is a round trip to a storage server.
	Read time.Duration
	// Commit is a commit: to a commit proxy, the resolvers, and the
	// transaction logs' fsync.
	Commit time.Duration
}

// DefaultLatencies are a cluster in the client's availability zone: GRV
// 0.4 ms, read 0.25 ms, commit 1.5 ms.
var DefaultLatencies = Latencies{
	GRV:    400 * time.Microsecond,
	Read:   250 * time.Microsecond,
	Commit: 1500 * time.Microsecond,
}

// Config is how a modeled cluster behaves.
type Config struct {
	// Latencies are the waits' durations; a zero field takes
	// DefaultLatencies' (the model orders requests by them, so none is
	// ever zero).
	Latencies Latencies
	// Sleep, if set, is called with the length of each wait, for timed
	// runs: Sleep (this package's) sleeps accurately below a millisecond.
	// Nil: the waits are only counted.
	Sleep func(time.Duration)
	// RootLen is the length of the FoundationDB engine's root prefix
	// (kv/fdb's Config.Root; none by default), which every key carries on
	// the cluster and range batches count.
	RootLen int
}

// DB is a kv.Database on the modeled cluster: the database it wraps holds
// the data and answers every operation; DB counts the waits, and sleeps
// them if asked to. It implements kv.Database and, on its transactions,
// kv.GetMany, kv.GetAsync, kv.GetRangeAsync, kv.MetadataVersion and
// kv.BumpMetadataVersion, as the FoundationDB engine does, and nothing else: no kv.CertainCommits, no kv.CommitQueuer, no fast
// path for kv.First.
type DB struct {
	in      kv.Database
	lat     Latencies
	sleepFn func(time.Duration)
	rootLen int
}

var _ kv.Database = (*DB)(nil)

// Wrap returns db on a modeled cluster. The DB owns db: closing it closes
// db.
func Wrap(db kv.Database, cfg Config) *DB {
	lat := cfg.Latencies
	if lat.GRV <= 0 {
		lat.GRV = DefaultLatencies.GRV
	}
	if lat.Read <= 0 {
		lat.Read = DefaultLatencies.Read
	}
	if lat.Commit <= 0 {
		lat.Commit = DefaultLatencies.Commit
	}
	return &DB{in: db, lat: lat, sleepFn: cfg.Sleep, rootLen: cfg.RootLen}
}

// Latencies returns the latencies the DB models.
func (d *DB) Latencies() Latencies { return d.lat }

func (d *DB) sleep(dur time.Duration) {
	if d.sleepFn != nil && dur > 0 {
		d.sleepFn(dur)
	}
}

func (d *DB) Transact(ctx context.Context, fn func(kv.Transaction) error) error {
	return kv.Transact(ctx, d, fn)
}

func (d *DB) ReadTransact(ctx context.Context, fn func(kv.ReadTransaction) error) error {
	return kv.ReadTransact(ctx, d, fn)
}

// CreateTransaction opens a transaction of the wrapped database, modeled;
// its attempts report to the Collector ctx carries (WithCollector), if
// any.
func (d *DB) CreateTransaction(ctx context.Context) (kv.Transaction, error) {
	in, err := d.in.CreateTransaction(ctx)
	if err != nil {
		return nil, err
	}
	t := &txn{db: d, in: in, ctx: ctx, col: collectorOf(ctx)}
	t.snap = &snapshot{t: t}
	t.newAttempt()
	return t, nil
}

// Close closes the wrapped database.
func (d *DB) Close() error { return d.in.Close() }
