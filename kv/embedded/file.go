package embedded

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// FileConfig tunes a file database.
type FileConfig struct {
	Config
	// Sync is when commits reach stable storage; SyncFull by default.
	Sync SyncMode
	// CheckpointBytes is how much log is written between checkpoints;
	// DefaultCheckpointBytes when 0. Recovery replays at most about this
	// much log.
	CheckpointBytes int64
}

// ErrLocked is returned (wrapped, with the owner's process id) by OpenFile
// when another process has the database open.
var ErrLocked = errors.New("fdbqueue: database is locked")

// RecoveryStats describes what OpenFile found.
type RecoveryStats struct {
	Segments    int   // log segments replayed
	Records     int   // records applied
	TornBytes   int64 // bytes cut from the end of the log (an incomplete last write)
	LastVersion uint64
	// CheckpointVersion is the version of the checkpoint loaded, 0 for none.
	CheckpointVersion uint64
}

// OpenFile opens (creating it if needed) the durable database in directory
// dir. A commit returns once its log record is on stable storage (with
// SyncFull); reopening replays the log, cutting a torn or corrupt tail. One
// process owns a directory at a time; within a process, every OpenFile of
// the same directory shares one database until the last handle is closed.
func OpenFile(dir string, cfg FileConfig) (*DB, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	key := "file:" + abs
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if s, ok := registry.dbs[key]; ok {
		s.refs++
		return &DB{s: s}, nil
	}
	s, err := openFileStore(abs, cfg)
	if err != nil {
		return nil, err
	}
	s.name = key
	s.refs = 1
	registry.dbs[key] = s
	return &DB{s: s}, nil
}

func openFileStore(dir string, cfg FileConfig) (*store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("fdbqueue: opening %s: %w", dir, err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	s := newStore("", cfg.Config)
	s.lock = lock
	st, err := s.recover(dir)
	if err != nil {
		lock.Close()
		return nil, err
	}
	s.recovery = st
	f, err := createSegment(dir, s.nextVer+1)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("fdbqueue: starting a log segment in %s: %w", dir, err)
	}
	s.log = &wal{s: s, dir: dir, sync: cfg.Sync, f: f, lastVer: s.nextVer, ckptBytes: cfg.CheckpointBytes}
	if s.log.ckptBytes <= 0 {
		s.log.ckptBytes = DefaultCheckpointBytes
	}
	s.log.start()
	return s, nil
}

// lockDir takes the directory's lock file, or says who holds it.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, "LOCK")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("fdbqueue: opening %s: %w", path, err)
	}
	// The lock can outlive its database for a moment when this process
	// forks a child (os/exec) while the lock file is open: the child holds
	// a copy of the descriptor until its exec closes it. Wait that out when
	// the owner on record is this process; any open database here was
	// found in the registry before we got this far.
	self := strconv.Itoa(os.Getpid())
	deadline := time.Now().Add(2 * time.Second)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			break
		}
		if owner, _ := os.ReadFile(path); strings.TrimSpace(string(owner)) != self {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err != nil {
		owner, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is locked by process %s", ErrLocked, dir, strings.TrimSpace(string(owner)))
		}
		return nil, fmt.Errorf("fdbqueue: locking %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

// recover replays the log segments in order.
func (s *store) recover(dir string) (RecoveryStats, error) {
	var st RecoveryStats
	tmps, _ := filepath.Glob(filepath.Join(dir, "*.tmp"))
	for _, tmp := range tmps {
		os.Remove(tmp) // a checkpoint that never finished
	}
	ckptVer, err := s.loadCheckpoint(dir)
	if err != nil {
		return st, err
	}
	st.CheckpointVersion = ckptVer
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
		if torn {
			if !last {
				return st, fmt.Errorf("fdbqueue: log segment %s is corrupt at offset %d, and later segments exist", name, good)
			}
			info, err := os.Stat(name)
			if err != nil {
				return st, err
			}
			st.TornBytes = info.Size() - good
			if err := os.Truncate(name, good); err != nil {
				return st, fmt.Errorf("fdbqueue: cutting the torn end of %s: %w", name, err)
			}
		}
	}
	// Nobody reads yet: prune every old version now.
	s.gcLocked(now, int(^uint(0)>>1))
	st.LastVersion = s.nextVer
	return st, nil
}

// Checkpoint writes a checkpoint now and waits for it: reopening then
// replays only the log written after it. File databases checkpoint on their
// own every FileConfig.CheckpointBytes of log.
func (db *DB) Checkpoint() error {
	if db.s.log == nil {
		return nil
	}
	return db.s.log.checkpoint()
}

// Recovery returns what opening the database found.
func (db *DB) Recovery() RecoveryStats { return db.s.recovery }
