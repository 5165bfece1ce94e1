package embedded

// SetTombMinKeys makes db's range clears of more than n keys tombstones
// (tombs.go), so that tests reach them with few keys, and the commits that
// make them never wait for older readers to end. Call it before db
// commits anything.
func SetTombMinKeys(db *DB, n int) { db.s.tombMin, db.s.tombWait = n, 0 }

// Tombs returns how many tombstones db holds.
func Tombs(db *DB) int {
	db.s.mu.RLock()
	defer db.s.mu.RUnlock()
	return len(db.s.tombs)
}

// HoldFsync makes the log's next fsync wait until free is called. staged
// reports that a commit waits in it with every queued commit staged in
// the tree (wal.commitGroup), not yet readable.
func HoldFsync(db *DB) (staged func() bool, free func()) {
	syncing, free := holdFirstFsync(db)
	return func() bool {
		select {
		case <-syncing:
		default:
			return false
		}
		s := db.s
		s.mu.RLock()
		defer s.mu.RUnlock()
		return s.log.unstaged == 0 && s.nextVer > s.version.Load()
	}, free
}

// ArmedWatches returns how many watches db holds armed.
func ArmedWatches(db *DB) int { return int(db.s.registered.Load()) }
