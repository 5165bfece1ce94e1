package driver

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/fdbqueue/fdbqueue/exec"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/kv/shared"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// A client process's autocommit pops run in the serving process
// (exec/forward.go): the shared file database forwards them, and serves
// the others'.
var (
	_ exec.Forwarder  = (*shared.DB)(nil)
	_ exec.CallServer = (*shared.DB)(nil)
)

// DriverName is the name the driver registers under.
const DriverName = "fdbqueue"

func init() {
	sql.Register(DriverName, &Driver{})
}

// Driver is fdbqueue's database/sql driver.
type Driver struct{}

var (
	_ driver.Driver        = (*Driver)(nil)
	_ driver.DriverContext = (*Driver)(nil)
)

// Open opens a connection on a new connector; database/sql uses
// OpenConnector instead, so that the connections of one sql.DB share one
// engine.
func (d *Driver) Open(dsn string) (driver.Conn, error) {
	c, err := d.OpenConnector(dsn)
	if err != nil {
		return nil, err
	}
	return c.Connect(context.Background())
}

// OpenConnector parses dsn and opens its engine.
func (d *Driver) OpenConnector(dsn string) (driver.Connector, error) {
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	return NewConnector(cfg)
}

// root is the key prefix of all of fdbqueue's data on FoundationDB, in a
// cluster other layers share, and in an embedded database made before the
// embedded engines' data went under no prefix (embeddedRoot).
var root = tuple.Tuple{"fdbqueue"}.Pack()

// layoutKey marks a database whose fdbqueue keys have no prefix
// (embeddedRoot). It is under neither root nor any key exec writes.
var layoutKey = tuple.Tuple{"fdbqueue_layout"}.Pack()

// How embeddedRoot may learn a database's layout.
type layoutProbe int

const (
	// probeEmbedded: db is an embedded database (memory: or file:),
	// which holds nothing but fdbqueue's data, and may be marked.
	probeEmbedded layoutProbe = iota
	// probeEmbeddedReadOnly: the same, opened read-only.
	probeEmbeddedReadOnly
	// probeUnknown: an engine the driver does not know, perhaps a
	// wrapper of an embedded database, perhaps a FoundationDB cluster
	// shared with other layers: only a mark says it has no prefix.
	probeUnknown
)

// embeddedRoot returns the key prefix of fdbqueue's data in db: none in a
// database marked so (layoutKey); root in an unmarked one that holds data
// under root (as every embedded database made before the embedded
// engines' keys lost the prefix does) or that the driver does not know
// for embedded; none otherwise, marking the database when it may write.
// The prefix was 10 of a key's ~31 bytes: 35 bytes of memory a queued
// row, and as many of every row's log record.
//
// The mark, not the data, decides once it is there: data written under
// root later (by an earlier build, or a connector on a wrapper of the
// engine opened first) does not turn the database to the other layout
// and hide its tables, and a connector on a wrapper of a marked database
// (NewConnectorOn) reads it as a DSN's does.
func embeddedRoot(ctx context.Context, db kv.Database, probe layoutProbe) ([]byte, error) {
	var legacy bool
	read := func(tr kv.ReadTransaction) (marked bool, err error) {
		legacy = false
		v, err := tr.Get(layoutKey)
		switch {
		case err != nil || v != nil:
			return v != nil, err
		case probe == probeUnknown:
			legacy = true
			return false, nil
		}
		_, legacy, err = kv.First(tr, kv.PrefixRange(root), false)
		return false, err
	}
	var marked bool
	err := db.ReadTransact(ctx, func(tr kv.ReadTransaction) (err error) {
		marked, err = read(tr)
		return err
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("reading which key layout the database has: %w", err)
	case legacy:
		return root, nil
	case !marked && probe == probeEmbedded:
		// Marked in a transaction that reads again, so that data
		// written under root meanwhile keeps its layout. A mark that
		// fails to commit (an injected fault, say) is left to the next
		// open: the database is still empty, or holds data without the
		// prefix, which an open reads the same way.
		err := db.Transact(ctx, func(tr kv.Transaction) error {
			marked, err := read(tr)
			if err == nil && !marked && !legacy {
				tr.Set(layoutKey, []byte{1})
			}
			return err
		})
		if err == nil && legacy {
			return root, nil
		}
	}
	return nil, nil
}

// NewConnector opens the engine cfg names. Its connections share the
// engine; closing the sql.DB closes the engine (a named in-memory database
// lives on while other connectors use it).
func NewConnector(cfg *Config) (driver.Connector, error) {
	var db kv.Database
	ec, err := engineConfig(cfg)
	if err != nil {
		return nil, err
	}
	switch cfg.Engine {
	case EngineMemory:
		db = embedded.Open(cfg.Name, ec)
	case EngineFile:
		fc := embedded.FileConfig{Config: ec}
		switch cfg.Params["sync"] {
		case "", "full":
			fc.Sync = embedded.SyncFull
		case "none":
			fc.Sync = embedded.SyncNone
		default:
			return nil, fmt.Errorf("%w: sync=%s; accepted: full (default: a commit returns once it is on disk), none (no fsync: a power loss may lose the last commits)", ErrDSN, cfg.Params["sync"])
		}
		switch cfg.Params["mode"] {
		case "", "rwc":
			fc.Mode = embedded.ReadWriteCreate
		case "rw":
			fc.Mode = embedded.ReadWrite
		case "ro":
			fc.Mode = embedded.ReadOnly
		default:
			return nil, fmt.Errorf("%w: mode=%s; accepted: rwc (default: open, creating the database if needed), rw (open an existing database), ro (open an existing database read-only)", ErrDSN, cfg.Params["mode"])
		}
		fdb, err := shared.Open(cfg.Path, fc)
		if err != nil {
			return nil, err
		}
		db = fdb
	case EngineFDB:
		return openFDB(cfg)
	default:
		return nil, fmt.Errorf("%w: %q", ErrDSN, cfg.Engine)
	}
	probe := probeEmbedded
	if cfg.Params["mode"] == "ro" {
		probe = probeEmbeddedReadOnly
	}
	r, err := embeddedRoot(context.Background(), db, probe)
	if err != nil {
		return nil, errors.Join(err, db.Close())
	}
	c := &connector{cfg: cfg.Clone(), exec: exec.New(db, r)}
	return c, nil
}

// NewConnectorOn returns a connector on db, an engine the caller opened
// and hands over: its connections share it, and closing the sql.DB closes
// it. It is for tools and tests that put something of theirs around an
// engine (fdbqueue bench runs the in-memory engine on a modeled
// FoundationDB cluster with it); programs open engines from DSNs
// (NewConnector, sql.Open).
//
// On an embedded database (embedded.DB, shared.DB), the connector's key
// layout is the database's, as for a DSN's; on any other engine (a
// wrapper of one), fdbqueue's data goes under the prefix ("fdbqueue"), as
// on FoundationDB, unless the database is marked as one whose keys have
// none (a DSN's connector or this one on the embedded database marks it
// when it finds it empty). If the layout cannot be read, every connection
// fails with the error.
func NewConnectorOn(db kv.Database) driver.Connector {
	probe := probeUnknown
	switch db.(type) {
	case *embedded.DB, *shared.DB:
		probe = probeEmbedded
	}
	r, err := embeddedRoot(context.Background(), db, probe)
	return &connector{exec: exec.New(db, r), err: err}
}

// engineConfig reads the embedded engine's parameters: injected faults.
func engineConfig(cfg *Config) (embedded.Config, error) {
	var ec embedded.Config
	var f embedded.Faults
	injected := false
	rate := func(name string, dst ...*float64) error {
		v, ok := cfg.Params[name]
		if !ok {
			return nil
		}
		p, err := strconv.ParseFloat(v, 64)
		if err != nil || p < 0 || p > 1 {
			return fmt.Errorf("%w: %s=%s; a rate from 0 to 1", ErrDSN, name, v)
		}
		for _, d := range dst {
			*d = p / float64(len(dst))
		}
		injected = true
		return nil
	}
	for _, r := range []struct {
		name string
		dst  []*float64
	}{
		{"fault_conflict", []*float64{&f.Conflict}},
		{"fault_unknown", []*float64{&f.UnknownApplied, &f.UnknownNotApplied}},
		{"fault_too_old", []*float64{&f.TooOld}},
		{"fault_timeout", []*float64{&f.TimedOut}},
	} {
		if err := rate(r.name, r.dst...); err != nil {
			return ec, err
		}
	}
	if f.Conflict+f.UnknownApplied+f.UnknownNotApplied+f.TooOld+f.TimedOut > 1 {
		return ec, fmt.Errorf("%w: the fault rates add up to more than 1", ErrDSN)
	}
	if v, ok := cfg.Params["fault_seed"]; ok {
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return ec, fmt.Errorf("%w: fault_seed=%s; an unsigned integer", ErrDSN, v)
		}
		f.Seed, injected = seed, true
	}
	if v, ok := cfg.Params["commit_latency"]; ok {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return ec, fmt.Errorf("%w: commit_latency=%s; a duration such as 2ms", ErrDSN, v)
		}
		f.CommitLatency, injected = d, true
	}
	if injected {
		ec.Faults = &f
	}
	return ec, nil
}

// connector holds one engine and an immutable copy of its config, and
// the open rows of its autocommit pops (see openPops).
type connector struct {
	cfg  Config
	exec *exec.Executor
	// err, if set, fails every connection: NewConnectorOn could not
	// read the database's key layout (embeddedRoot).
	err  error
	pops openPops
	obs  observers
	// sched fires the schedules due (schedule.go), from the first
	// connection on.
	sched ticker
}

var _ driver.Connector = (*connector)(nil)

func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c.err != nil {
		return nil, c.err
	}
	c.sched.start(c.exec)
	return &conn{exec: c.exec, pops: &c.pops, obs: &c.obs}, nil
}

func (c *connector) Driver() driver.Driver { return &Driver{} }

// Close stops the schedules' ticker and closes the engine; database/sql
// calls it from DB.Close. The rows
// of autocommit pops still open go back to their tables first (openPops),
// and DB.Close returns the errors of those that could not.
func (c *connector) Close() error {
	c.sched.close()
	return errors.Join(c.pops.close(), c.exec.DB().Close())
}

// ExecuteTx runs fn in a transaction and commits it, running it again from
// the start while it fails with an error IsRetryable recognises, with
// backoff, until ctx is done. fn must be safe to run several times: it may
// only act through tx.
func ExecuteTx(ctx context.Context, db *sql.DB, opts *sql.TxOptions, fn func(*sql.Tx) error) error {
	backoff := time.Millisecond
	for {
		err := execTxOnce(ctx, db, opts, fn)
		if err == nil || !IsRetryable(err) {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return kv.Join(err, ctx.Err())
		case <-t.C:
		}
		if backoff < 100*time.Millisecond {
			backoff *= 2
		}
	}
}

func execTxOnce(ctx context.Context, db *sql.DB, opts *sql.TxOptions, fn func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}
