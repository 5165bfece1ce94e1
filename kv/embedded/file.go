package embedded

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// FileConfig tunes a file database.
type FileConfig struct {
	Config
	// Sync is when commits reach stable storage; SyncFull by default.
	Sync SyncMode
	// CheckpointBytes is the least disk use, the last checkpoint and the
	// log after it (written by this open or earlier ones), that makes a
	// checkpoint due; DefaultCheckpointBytes when 0. One starts once the
	// log has grown and the disk use reaches the larger of CheckpointBytes
	// and 3 times the live data (at Close, of an eighth of
	// CheckpointBytes and 3 times the live data). Recovery replays at
	// most about that much log.
	CheckpointBytes int64
	// Mode says whether OpenFile may create the database, and whether it
	// may write; ReadWriteCreate by default.
	Mode OpenMode
}

// OpenMode says what OpenFile may do, after SQLite's mode=rwc|rw|ro.
type OpenMode int

const (
	// ReadWriteCreate opens the database in a directory, creating the
	// directory (not its parents) and the database when they do not exist.
	ReadWriteCreate OpenMode = iota
	// ReadWrite opens an existing database, and fails with ErrNoDatabase
	// when there is none: a mistyped path is an error, not a new database.
	ReadWrite
	// ReadOnly opens an existing database for reading. Commits that write
	// fail with ErrReadOnly, nothing in the directory changes (a torn log
	// tail is skipped, not cut), and other read-only opens may share the
	// directory; a read-write open may not.
	ReadOnly
)

func (m OpenMode) String() string {
	switch m {
	case ReadWriteCreate:
		return "rwc"
	case ReadWrite:
		return "rw"
	case ReadOnly:
		return "ro"
	}
	return fmt.Sprintf("OpenMode(%d)", int(m))
}

// The errors OpenFile and its databases return.
var (
	// ErrLocked is returned (wrapped, with the owner's process id) by
	// OpenFile when another process has the database open.
	ErrLocked = errors.New("fdbqueue: database is locked")
	// ErrNoDatabase is returned (wrapped, with the path) by OpenFile in
	// ReadWrite or ReadOnly mode when the directory holds no database, and
	// in ReadWriteCreate mode when the directory's parent does not exist or
	// the directory holds other files and no database.
	ErrNoDatabase = errors.New("fdbqueue: no database")
	// ErrReadOnly is returned by a commit that writes to a database opened
	// ReadOnly. Not retryable.
	ErrReadOnly = errors.New("fdbqueue: the database is open read-only (mode=ro); writes are refused")
)

// RecoveryStats describes what OpenFile found.
type RecoveryStats struct {
	Segments    int   // log segments replayed
	Records     int   // records applied
	LogBytes    int64 // bytes of log read: each segment up to its last good record
	TornBytes   int64 // bytes cut from the end of the log (an incomplete last write)
	LastVersion uint64
	// CheckpointVersion is the version of the checkpoint loaded, 0 for none;
	// CheckpointSize, its bytes.
	CheckpointVersion uint64
	CheckpointSize    int64
}

// OpenFile opens (creating it if needed) the durable database in directory
// dir. A commit returns once its log record is on stable storage (with
// SyncFull); reopening replays the log, cutting a torn or corrupt tail. One
// process owns a directory at a time; within a process, every OpenFile of
// the same directory shares one database until the last handle is closed.
//
// A directory reached through symbolic links is the same database as the
// directory itself: the path is resolved before it is looked up.
func OpenFile(dir string, cfg FileConfig) (*DB, error) {
	if cfg.Mode < ReadWriteCreate || cfg.Mode > ReadOnly {
		return nil, fmt.Errorf("fdbqueue: open mode %v; accepted: rwc, rw, ro", cfg.Mode)
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	abs, err := prepareDir(dir, cfg.Mode)
	if err != nil {
		return nil, err
	}
	key := "file:" + abs
	if s, ok := registry.dbs[key]; ok {
		if s.readOnly && cfg.Mode != ReadOnly {
			return nil, fmt.Errorf("fdbqueue: %s is open read-only in this process; close it before opening it mode=%v", abs, cfg.Mode)
		}
		s.refs++
		return &DB{s: s, readOnly: cfg.Mode == ReadOnly}, nil
	}
	s, err := openFileStore(abs, cfg)
	if err != nil {
		return nil, err
	}
	s.name = key
	s.refs = 1
	registry.dbs[key] = s
	return &DB{s: s, readOnly: cfg.Mode == ReadOnly}, nil
}

// prepareDir resolves dir to an absolute path without symbolic links,
// checking (and in ReadWriteCreate mode making) the database directory.
func prepareDir(dir string, mode OpenMode) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	info, err := os.Stat(abs)
	switch {
	case errors.Is(err, os.ErrNotExist) && mode != ReadWriteCreate:
		return "", fmt.Errorf("%w: %s does not exist (mode=%v opens an existing database; mode=rwc, the default, creates one)", ErrNoDatabase, abs, mode)
	case errors.Is(err, os.ErrNotExist):
		parent := filepath.Dir(abs)
		if _, err := os.Stat(parent); errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("%w: the directory %s does not exist; fdbqueue creates the database's own directory, not its parents", ErrNoDatabase, parent)
		}
		if err := os.Mkdir(abs, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("fdbqueue: creating %s: %w", abs, err)
		}
	case err != nil:
		return "", fmt.Errorf("fdbqueue: opening %s: %w", abs, err)
	case !info.IsDir():
		return "", fmt.Errorf("%w: %s is a file; a file: database is a directory", ErrNoDatabase, abs)
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return "", fmt.Errorf("fdbqueue: opening %s: %w", dir, err)
	}
	has, other, err := dirContents(abs)
	if err != nil {
		return "", fmt.Errorf("fdbqueue: opening %s: %w", abs, err)
	}
	switch {
	case has:
	case mode != ReadWriteCreate:
		return "", fmt.Errorf("%w: %s holds no fdbqueue database (mode=%v opens an existing database; mode=rwc, the default, creates one)", ErrNoDatabase, abs, mode)
	case other != "":
		return "", fmt.Errorf("%w: %s holds other files (%s) and no fdbqueue database; name a new or empty directory", ErrNoDatabase, abs, other)
	}
	return abs, nil
}

// dirContents reports whether dir holds a database (its lock file, a log
// segment or a checkpoint), and else names a file that is not one.
func dirContents(dir string) (db bool, other string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, "", err
	}
	for _, e := range entries {
		name := e.Name()
		if name == "LOCK" || strings.HasPrefix(name, "wal-") || strings.HasPrefix(name, "ckpt-") {
			return true, "", nil
		}
		if other == "" {
			other = name
		}
	}
	return false, other, nil
}

func openFileStore(dir string, cfg FileConfig) (*store, error) {
	readOnly := cfg.Mode == ReadOnly
	lock, err := lockDir(dir, readOnly, nil)
	if err != nil {
		return nil, err
	}
	s := newStore("", cfg.Config)
	s.lock = lock
	s.readOnly = readOnly
	st, err := s.recover(dir, readOnly)
	if err != nil {
		lock.Close()
		return nil, err
	}
	s.recovery = st
	if readOnly {
		return s, nil
	}
	seg, err := createSegment(dir, s.nextVer+1)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("fdbqueue: starting a log segment in %s: %w", dir, err)
	}
	s.log = &wal{
		s: s, dir: dir, sync: cfg.Sync, seg: seg, lastVer: s.nextVer,
		policy: newCkptPolicy(cfg.CheckpointBytes),
		// The log earlier opens left counts toward the next checkpoint
		// (which starts now if it is due), or a program that restarts
		// would never checkpoint.
		ckptSize:  st.CheckpointSize,
		sinceCkpt: st.LogBytes,
		live:      int64(s.slabs.live),
	}
	s.log.start()
	lock.watch(s.log.lose)
	return s, nil
}

// recover replays the log segments in order. A read-only recovery changes
// no file: it skips a torn tail instead of cutting it.
func (s *store) recover(dir string, readOnly bool) (RecoveryStats, error) {
	var st RecoveryStats
	s.recovering = true
	defer func() { s.recovering = false }()
	if !readOnly {
		tmps, _ := filepath.Glob(filepath.Join(dir, "*.tmp"))
		for _, tmp := range tmps {
			os.Remove(tmp) // a checkpoint that never finished
		}
	}
	ckptVer, ckptSize, err := s.loadCheckpoint(dir)
	if err != nil {
		return st, err
	}
	st.CheckpointVersion, st.CheckpointSize = ckptVer, ckptSize
	names, err := filepath.Glob(filepath.Join(dir, "wal-*.log"))
	if err != nil {
		return st, err
	}
	sort.Strings(names)
	now := s.cfg.Clock()
	for i, name := range names {
		last := i == len(names)-1
		good, torn, err := replaySegment(name, func(ver uint64, b *batch) error {
			if ver <= s.nextVer {
				return nil // already in a checkpoint
			}
			if ver != s.nextVer+1 {
				return fmt.Errorf("fdbqueue: log %s jumps from version %d to %d", name, s.nextVer, ver)
			}
			s.nextVer = ver
			s.installLocked(now, ver, b)
			st.Records++
			return nil
		})
		if err != nil {
			return st, err
		}
		st.Segments++
		st.LogBytes += good
		if torn && !last {
			return st, fmt.Errorf("fdbqueue: log segment %s is corrupt at offset %d, and later segments exist", name, good)
		}
		info, err := os.Stat(name)
		if err != nil {
			return st, err
		}
		if torn {
			st.TornBytes = info.Size() - good
		}
		// Cut a torn end, or the space a segment reserved and a crash
		// left unused: the log is written from a new segment on. The
		// cut is synced before that segment takes commits: where syncing
		// a file does not persist another's size (btrfs logs each file
		// apart), a power loss could bring the torn end back behind a
		// later segment, and the next open would refuse the log.
		if info.Size() > good && !readOnly {
			if err := truncateSynced(name, good); err != nil {
				return st, fmt.Errorf("fdbqueue: cutting the end of %s after its last record: %w", name, err)
			}
		}
	}
	// Nobody reads yet: prune every old version now, and the keys of
	// every tombstone.
	s.gcLocked(now, int(^uint(0)>>1))
	s.tombsLocked(s.nextVer, int(^uint(0)>>1))
	st.LastVersion = s.nextVer
	// The log does not record which commits bumped the metadata version:
	// recovery counts as a bump at the last version, as FoundationDB's
	// restore bumps it, so no metadata cached before it is taken for
	// current (and none can be: caches live in the process, and the
	// store's handles closed with it).
	s.mdv = stamp(s.nextVer)
	return st, nil
}

// Checkpoint writes a checkpoint now and waits for it: reopening then
// replays only the log written after it. File databases checkpoint on their
// own, as FileConfig.CheckpointBytes says.
func (db *DB) Checkpoint() error {
	if db.readOnly {
		return ErrReadOnly
	}
	if db.s.log == nil {
		return nil
	}
	return db.s.log.checkpoint()
}

// Recovery returns what opening the database found.
func (db *DB) Recovery() RecoveryStats { return db.s.recovery }
