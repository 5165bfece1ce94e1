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

// SetChunkHook makes f run between two chunks of every chunked install
// (mvcc.go), without the store's lock held. Call it before db commits.
func SetChunkHook(db *DB, f func()) { db.s.chunkHook = f }

// Collect runs the collector as far as the read versions in use allow.
func Collect(db *DB) {
	s := db.s
	s.wlock()
	s.collectQueuedLocked(s.cfg.Clock())
	s.mu.Unlock()
}

// InstallChunk is how many keys a chunked install takes a hold at a time.
const InstallChunk = installChunk

// CollectTombs removes the keys under the tombstones no reader is older
// than, a slice per hold of the lock, as the tombstone worker and the
// commits that made them do (tombSlice), until none is left to remove now.
func CollectTombs(db *DB) {
	for {
		if _, collected := db.s.tombSlice(^uint64(0), false); !collected {
			return
		}
	}
}

// ArmedWatches returns how many watches db holds armed.
func ArmedWatches(db *DB) int64 { return db.s.registered.Load() }
