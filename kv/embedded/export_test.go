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
