// Package embedded is fdbqueue's in-process engine: FoundationDB's
// transaction semantics and limits (see package kv) without a server.
//
// # Storage and versions
//
// Data lives in one ordered B-tree (github.com/tidwall/btree) of keys, each
// carrying a short chain of versions, newest first. A transaction reads as of
// its read version: the newest version of each key at or below it. Commits
// are serialised by a mutex and take the next version number; readers take a
// read lock for the few microseconds of one read or one batch of a range read,
// so a long transaction never blocks commits (and vice versa).
//
// Old versions are pruned as soon as no live transaction can read them: the
// engine tracks the read versions in use, and each commit prunes the keys
// written by earlier commits up to the oldest of them. A deleted key leaves
// the tree at that point, so the head of a queue that is popped a million
// times does not fill with tombstones (an LSM store's failure mode). A
// transaction older than 5 seconds no longer holds versions back: it fails
// with transaction_too_old (1007), as on FoundationDB.
//
// # Conflicts
//
// Each commit records its write ranges in a history. A committing transaction
// is checked against the history entries newer than its read version; if any
// of its serializable read ranges overlaps one of their writes, it fails with
// not_committed (1020). History older than the oldest live read version is
// dropped.
//
// # Memory databases
//
// Open("") gives a private database; Open(name) gives the database of that
// name, shared by every Open of the name in the process until the last handle
// is closed.
package embedded

import (
	"bytes"
	"context"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/btree"

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
	return c
}

// version is one version of a key's value; del marks a deletion.
type version struct {
	ver   uint64
	val   []byte
	del   bool
	older *version
}

// entry is a key in the tree with its versions, newest inline.
type entry struct {
	key []byte
	v   version
	// removed is set when the entry left the tree (its newest version was a
	// deletion nobody can read past any more). Guarded by store.mu.
	removed bool
}

// at returns the value visible at read version rv.
func (e *entry) at(rv uint64) ([]byte, bool) {
	if e.v.ver <= rv {
		return e.v.val, !e.v.del
	}
	for o := e.v.older; o != nil; o = o.older {
		if o.ver <= rv {
			return o.val, !o.del
		}
	}
	return nil, false
}

// latest returns the newest committed value.
func (e *entry) latest() ([]byte, bool) {
	return e.v.val, !e.v.del
}

func entryLess(a, b *entry) bool { return bytes.Compare(a.key, b.key) < 0 }

// span is a key range [begin, end); end == nil means the single key begin.
type span struct {
	begin, end []byte
}

// beforeEnd reports whether x < s's end.
func (s span) beforeEnd(x []byte) bool {
	if s.end == nil {
		return bytes.Compare(x, s.begin) <= 0
	}
	return bytes.Compare(x, s.end) < 0
}

func (s span) intersects(o span) bool {
	return o.beforeEnd(s.begin) && s.beforeEnd(o.begin)
}

func (s span) size() int { return len(s.begin) + len(s.end) }

// commitRecord is one commit's writes, kept for conflict checks.
type commitRecord struct {
	ver    uint64
	writes []span
}

// gcRecord is one commit's touched entries, to prune once no reader needs
// their older versions.
type gcRecord struct {
	ver     uint64
	entries []*entry
}

// store is one database, shared by every handle on it.
type store struct {
	cfg    Config
	faults *injector // nil unless Config.Faults

	// mu guards tree, history, gcq and the entries' versions. Readers hold
	// it shared for one read (or one batch of a range read); commits hold it
	// exclusively.
	mu      sync.RWMutex
	tree    *btree.BTreeG[*entry]
	history []commitRecord
	gcq     []gcRecord
	gcHead  int

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

	// activeMu guards active: the transactions holding a read version,
	// which bound what the garbage collector may prune. Lock order: mu
	// before activeMu.
	activeMu sync.Mutex
	active   map[*txn]reader

	// registry bookkeeping, guarded by registry.mu.
	name string
	refs int

	// File databases: the lock file held while open, and what recovery
	// found.
	lock     *os.File
	recovery RecoveryStats
	readOnly bool // opened ReadOnly: no log, every handle refuses writes
}

func newStore(name string, cfg Config) *store {
	return &store{
		faults: newInjector(cfg.Faults),
		cfg:    cfg.withDefaults(),
		tree:   btree.NewBTreeGOptions(entryLess, btree.Options{NoLocks: true, Degree: 64}),
		active: make(map[*txn]reader),
		name:   name,
	}
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

// Close releases the handle. Transactions already open keep working.
func (db *DB) Close() error {
	if !db.closed.CompareAndSwap(false, true) || db.s.name == "" {
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

// close shuts a store down once its last handle is closed.
func (s *store) close() error {
	var err error
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
		return nil, kv.Errorf(2000, "database handle is closed")
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
}

// Stats returns a snapshot of the engine's internal counters. It walks the
// whole tree: use it in tests, not on a hot path.
func (db *DB) Stats() Stats {
	s := db.s
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := Stats{
		Keys:           s.tree.Len(),
		HistoryRecords: len(s.history),
		PendingGC:      len(s.gcq) - s.gcHead,
		Version:        s.version.Load(),
	}
	s.tree.Scan(func(e *entry) bool {
		if !e.v.del {
			st.LiveKeys++
		}
		return true
	})
	s.activeMu.Lock()
	st.ActiveReaders = len(s.active)
	s.activeMu.Unlock()
	return st
}

// reader is a live transaction's read version and when it got it.
type reader struct {
	rv    uint64
	since time.Time
	// pinned readers (checkpoints) never expire.
	pinned bool
}

// acquireReadVersion registers t as a reader at the current version.
func (s *store) acquireReadVersion(t *txn, now time.Time) uint64 {
	s.activeMu.Lock()
	rv := s.version.Load()
	s.active[t] = reader{rv: rv, since: now}
	s.activeMu.Unlock()
	return rv
}

func (s *store) releaseReadVersion(t *txn) {
	s.activeMu.Lock()
	delete(s.active, t)
	s.activeMu.Unlock()
}

// horizonLocked returns the oldest version a live transaction may read:
// everything older than the newest version at or below it can be pruned.
// Transactions past the 5-second limit do not count (they can only fail
// now). Callers hold s.mu.
func (s *store) horizonLocked(now time.Time) uint64 {
	s.activeMu.Lock()
	defer s.activeMu.Unlock()
	h := s.version.Load()
	for t, r := range s.active {
		if !r.pinned && now.Sub(r.since) > kv.MaxTransactionAge {
			delete(s.active, t)
			continue
		}
		if r.rv < h {
			h = r.rv
		}
	}
	return h
}

// get returns the value of key at rv. probe is the caller's scratch entry
// for the lookup.
func (s *store) get(rv uint64, key []byte, probe *entry) ([]byte, bool) {
	probe.key = key
	s.mu.RLock()
	e, ok := s.tree.Get(probe)
	probe.key = nil
	var val []byte
	if ok {
		val, ok = e.at(rv)
	}
	s.mu.RUnlock()
	return val, ok
}

// fetch appends to out up to max key-values visible at rv in [begin, end),
// forward or reverse. done reports that the range holds no more.
// If beginEx, begin itself is excluded.
func (s *store) fetch(rv uint64, begin []byte, beginEx bool, end []byte, reverse bool, max int, out []kv.KeyValue) ([]kv.KeyValue, bool) {
	done := true
	visit := func(e *entry) bool {
		if beginEx && bytes.Equal(e.key, begin) {
			if reverse {
				return false
			}
			return true
		}
		if reverse {
			if bytes.Compare(e.key, begin) < 0 {
				return false
			}
			if bytes.Compare(e.key, end) >= 0 {
				return true
			}
		} else if bytes.Compare(e.key, end) >= 0 {
			return false
		}
		if v, ok := e.at(rv); ok {
			if len(out) == max {
				done = false
				return false
			}
			out = append(out, kv.KeyValue{Key: e.key, Value: v})
		}
		return true
	}
	s.mu.RLock()
	if reverse {
		s.tree.Descend(&entry{key: end}, visit)
	} else {
		s.tree.Ascend(&entry{key: begin}, visit)
	}
	s.mu.RUnlock()
	return out, done
}

// conflictsLocked reports whether any commit after rv wrote into reads
// (sorted by begin, disjoint). Callers hold s.mu.
func (s *store) conflictsLocked(rv uint64, reads []span) bool {
	// History is in version order: find the first record after rv.
	i := len(s.history)
	for i > 0 && s.history[i-1].ver > rv {
		i--
	}
	for _, rec := range s.history[i:] {
		for _, w := range rec.writes {
			// First read span whose end is past w.begin.
			lo, hi := 0, len(reads)
			for lo < hi {
				m := (lo + hi) / 2
				if reads[m].beforeEnd(w.begin) {
					hi = m
				} else {
					lo = m + 1
				}
			}
			if lo < len(reads) && reads[lo].intersects(w) {
				return true
			}
		}
	}
	return false
}

// installLocked applies b at version ver, makes it readable and collects
// garbage. Callers hold s.mu, and install versions in order.
func (s *store) installLocked(now time.Time, ver uint64, b *batch) {
	touched := s.applyLocked(ver, b)
	s.gcq = append(s.gcq, gcRecord{ver: ver, entries: touched})
	s.version.Store(ver)
	s.gcLocked(now, 2*len(touched)+64)
}

// pushVersionLocked makes (val, del) the newest version of e at ver.
func pushVersionLocked(e *entry, ver uint64, val []byte, del bool) {
	old := e.v
	e.v = version{ver: ver, val: val, del: del, older: &old}
}

// gcLocked prunes versions that no reader can see any more, and drops
// history no conflict check needs. budget bounds the entries visited.
// Callers hold s.mu.
func (s *store) gcLocked(now time.Time, budget int) {
	h := s.horizonLocked(now)

	// History: records at or below h are older than every live reader.
	n := 0
	for n < len(s.history) && s.history[n].ver <= h {
		n++
	}
	if n > 0 {
		clear(s.history[:n])
		s.history = s.history[n:]
	}

	for s.gcHead < len(s.gcq) && budget > 0 {
		rec := &s.gcq[s.gcHead]
		if rec.ver > h {
			break
		}
		for len(rec.entries) > 0 && budget > 0 {
			e := rec.entries[len(rec.entries)-1]
			rec.entries = rec.entries[:len(rec.entries)-1]
			budget--
			if e.removed {
				continue
			}
			if e.v.ver <= h {
				e.v.older = nil
				if e.v.del {
					s.tree.Delete(e)
					e.removed = true
				}
				continue
			}
			for o := e.v.older; o != nil; o = o.older {
				if o.ver <= h {
					o.older = nil
					break
				}
			}
		}
		if len(rec.entries) > 0 {
			break
		}
		s.gcq[s.gcHead] = gcRecord{}
		s.gcHead++
	}
	if s.gcHead > 1024 && s.gcHead*2 > len(s.gcq) {
		n := copy(s.gcq, s.gcq[s.gcHead:])
		clear(s.gcq[n:])
		s.gcq = s.gcq[:n]
		s.gcHead = 0
	}
}
