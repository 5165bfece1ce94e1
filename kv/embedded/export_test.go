package embedded

// SetTombMinKeys makes db's range clears of more than n keys tombstones
// (tombs.go), so that tests reach them with few keys. Call it before db
// commits anything.
func SetTombMinKeys(db *DB, n int) { db.s.tombMin = n }

// Tombs returns how many tombstones db holds.
func Tombs(db *DB) int {
	db.s.mu.RLock()
	defer db.s.mu.RUnlock()
	return len(db.s.tombs)
}
