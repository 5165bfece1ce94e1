// The store behind every handle, the handles, and the registry of named
// databases.

package embedded

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fdbqueue/fdbqueue/internal/btree"

	"github.com/fdbqueue/fdbqueue/kv"
)

// Config tunes an engine. The zero value is the default.
type Config struct {
	// Clock returns the current time; it defaults to time.Now. Tests
	// inject a fake clock to reach the 5-second limit instantly.
	Clock func() time.Time
	// RetryLimit bounds the retries of Transact and OnError: 0 means
	// DefaultRetryLimit, a negative value means no limit (the context
	// still bounds them).
	RetryLimit int
	// InitialBackoff and MaxBackoff bound the randomised, doubling wait
	// before a retry. Defaults: 50µs and 10ms (an in-process engine has no
	// network round trip to wait for).
	InitialBackoff, MaxBackoff time.Duration
	// TransactionTimeout, if positive, fails a transaction's operations
	// with transaction_timed_out (1031) once it has run that long.
	TransactionTimeout time.Duration
	// Faults, if set, injects FoundationDB's commit failures (for tests).
	Faults *Faults
	// MaxWatches bounds the watches that have not fired (kv.MaxWatches
	// when 0).
	MaxWatches int
}

// DefaultRetryLimit is the retry limit when Config.RetryLimit is 0.
const DefaultRetryLimit = 1000

func (c Config) withDefaults() Config {
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.RetryLimit == 0 {
		c.RetryLimit = DefaultRetryLimit
	}
	if c.InitialBackoff <= 0 {
		c.InitialBackoff = 50 * time.Microsecond
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = 10 * time.Millisecond
	}
	if c.MaxBackoff < c.InitialBackoff {
		c.MaxBackoff = c.InitialBackoff
	}
	if c.MaxWatches <= 0 {
		c.MaxWatches = kv.MaxWatches
	}
	return c
}

// store is one database, shared by every handle on it.
type store struct {
	cfg    Config
	faults *injector // nil unless Config.Faults

	// comb queues commits for the store's lock (groups.go).
	comb commitGroups

	// mu guards tree, dead, older, history, gcq, the records' flags and the
	// scratch buffers of applyLocked. Readers hold it shared for one read
	// (or one batch of a range read); commits hold it exclusively.
	mu   sync.RWMutex
	tree *btree.BTreeG[rec] // each live key's newest version
	// heads holds the paths of the last one-row reads (heads.go).
	heads *headHints
	// dead holds the keys whose newest version is a deletion, until no
	// reader can see past it (mvcc.go): the tree holds live keys only, so
	// reads at the newest versions never step over deletions.
	dead *btree.BTreeG[rec]
	// deadMax is at least the version of every deletion in dead: a
	// reader at deadMax or later has no use for them.
	deadMax uint64
	// older maps a record with flagOlder to the next older version of its
	// key.
	older map[rec]rec
	// tombs are the range clears whose keys are still in the tree, by
	// version; a clear of more than tombMin keys makes one (tombs.go).
	tombs      []tomb
	tombBatch  []rec // tombsLocked's scratch, cleared
	tombDead   []rec // the same
	tombMin    int
	tombWait   time.Duration
	tombWorker bool // collectTombs runs
	// tombsBlocked: a tombstone waits for readers older than it to end,
	// and no collectTombs runs; the release of the oldest reader starts
	// one (releaseReadVersion), as no commit may come to start it.
	tombsBlocked atomic.Bool
	recovering   bool // a file database's recovery replays its log
	history      []commitRecord
	gcq          []gcRecord
	gcHead       int
	// slabs holds the records commits write; sweep is the state of the
	// compaction moving them out of slabs most of which is garbage
	// (compact.go); probeBuf is applyLocked's scratch.
	slabs    slabWriter
	sweep    sweep
	probeBuf []byte
	// unchanged lists the writes of the batch applyLocked installs that
	// set a key to the value it held (unchanged.go).
	unchanged []int
	// fing remembers where the last commits' keys went (fingers.go).
	fing fingers
	// arena gives committing clients space for their records, which
	// they write before the lock (prebuilt.go).
	arena recArena

	// version is the last applied version, the newest a reader may read.
	// It is written under mu and read under activeMu (by read-version
	// requests).
	version atomic.Uint64
	// nextVer is the last version handed to a commit. It equals version
	// in memory mode; in file mode it runs ahead while commits wait for
	// the log. Guarded by mu.
	nextVer uint64
	// log is the write-ahead log of a file database, nil in memory.
	log *wal

	// activeMu guards active: the read versions in use, which bound what
	// the garbage collector may prune; and mdv, the metadata version: the
	// stamp of the last commit that bumped it (nil: none since the store
	// was opened or recovered), written with version by that commit's
	// publishLocked. Lock order: mu before activeMu.
	activeMu sync.Mutex
	active   readerQueue
	mdv      []byte

	// registry bookkeeping, guarded by registry.mu.
	name string
	refs int

	// File databases: the lock file held while open, and what recovery
	// found.
	lock     *dirLock
	recovery RecoveryStats
	readOnly bool // opened ReadOnly: no log, every handle refuses writes

	// Watches (watch.go). watchMu guards watches and pendingWatches, and
	// the watches' state; it is taken after mu, never before.
	watchMu        sync.Mutex
	watches        map[string][]*watch // armed watches by key
	pendingWatches int                 // watches not yet settled, armed or not
	registered     atomic.Int64        // len of all of watches' lists, read without watchMu
	closedErr      error               // set as the store closes: watches armed later fail with it
}

func newStore(name string, cfg Config) *store {
	s := &store{
		faults:   newInjector(cfg.Faults),
		cfg:      cfg.withDefaults(),
		tree:     btree.NewBTreeGKeyed(rec.key, btree.Options{NoLocks: true, Degree: 64}),
		dead:     btree.NewBTreeGOptions(recLess, btree.Options{NoLocks: true, Degree: 16}),
		heads:    newHeadHints(),
		watches:  make(map[string][]*watch),
		name:     name,
		sweep:    sweep{slack: compactSlack},
		fing:     fingers{minTree: fingerMinTree},
		tombMin:  tombMinKeys,
		tombWait: tombWait,
	}
	// Set before any client runs: recArena allocates slabs too.
	s.slabs.slabBytes = new(atomic.Int64)
	return s
}

var registry = struct {
	mu  sync.Mutex
	dbs map[string]*store
}{dbs: make(map[string]*store)}

// DB is a handle on an embedded database. It implements kv.Database and is
// safe for concurrent use.
type DB struct {
	s        *store
	closed   atomic.Bool
	readOnly bool // this handle's transactions refuse writes (ReadOnly)
}

var _ kv.Database = (*DB)(nil)

// Open returns a handle on the in-memory database called name. An empty name
// gives a new private database. A named database is shared by every handle
// opened with that name in this process, and is dropped when the last one is
// closed; its Config is the one given by the first Open.
func Open(name string, cfg Config) *DB {
	if name == "" {
		return &DB{s: newStore("", cfg)}
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	s, ok := registry.dbs[name]
	if !ok {
		s = newStore(name, cfg)
		registry.dbs[name] = s
	}
	s.refs++
	return &DB{s: s}
}

// Close releases the handle. Transactions already open keep reading; once
// the last handle of a file database closes, their commits fail.
func (db *DB) Close() error {
	if !db.closed.CompareAndSwap(false, true) {
		return nil
	}
	if db.s.name == "" {
		// Its only handle: no transaction begins any more whose commit
		// would fire its watches (those open may still commit).
		db.s.failWatches(errStoreClosed)
		return nil
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	db.s.refs--
	if db.s.refs > 0 {
		return nil
	}
	if registry.dbs[db.s.name] == db.s {
		delete(registry.dbs, db.s.name)
	}
	return db.s.close()
}

// errStoreClosed fails the watches of a store whose last handle closed.
var errStoreClosed = kv.Errorf(kv.CodeClientInvalidOperation, "the database was closed")

// close shuts a store down once its last handle is closed.
func (s *store) close() error {
	var err error
	s.failWatches(errStoreClosed)
	if s.log != nil {
		err = s.log.close()
	}
	if s.lock != nil {
		if cerr := s.lock.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// Transact implements kv.Database.
func (db *DB) Transact(ctx context.Context, fn func(kv.Transaction) error) error {
	return kv.Transact(ctx, db, fn)
}

// ReadTransact implements kv.Database.
func (db *DB) ReadTransact(ctx context.Context, fn func(kv.ReadTransaction) error) error {
	return kv.ReadTransact(ctx, db, fn)
}

// CreateTransaction implements kv.Database.
func (db *DB) CreateTransaction(ctx context.Context) (kv.Transaction, error) {
	if db.closed.Load() {
		return nil, kv.Errorf(kv.CodeClientInvalidOperation, "database handle is closed")
	}
	t := newTxn(db.s, ctx)
	t.readOnly = db.readOnly
	return t, nil
}

// Stats describes the engine's internal state, for tests and benchmarks.
type Stats struct {
	Keys           int // entries in the tree, tombstones included
	LiveKeys       int
	HistoryRecords int
	PendingGC      int
	ActiveReaders  int
	Version        uint64
	// RecordBytes is the bytes of the records in use (newest versions,
	// older ones readers may need); SlabBytes, of the slabs holding them
	// and not yet freed by the Go collector, which frees a slab once none
	// of its records is referenced.
	RecordBytes int
	SlabBytes   int64
}

// Stats returns a snapshot of the engine's internal counters, for tests.
func (db *DB) Stats() Stats {
	s := db.s
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := Stats{
		Keys:           s.tree.Len() + s.dead.Len(),
		HistoryRecords: len(s.history),
		PendingGC:      len(s.gcq) - s.gcHead,
		Version:        s.version.Load(),
		RecordBytes:    s.slabs.live,
	}
	if s.slabs.slabBytes != nil {
		st.SlabBytes = s.slabs.slabBytes.Load()
	}
	// The tree holds live keys only, and those a range clear's tombstone
	// covers until the collector takes them out (tombs.go).
	st.LiveKeys = s.tree.Len()
	s.activeMu.Lock()
	st.ActiveReaders = s.active.live + len(s.active.pinned)
	s.activeMu.Unlock()
	return st
}
