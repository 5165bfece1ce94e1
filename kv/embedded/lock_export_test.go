package embedded

// CheckLock runs db's holder check (lockcheck.go) at once, on its
// goroutine, and waits for it; nothing when the check does not run (a
// read-only database, or one whose check failed already).
func CheckLock(db *DB) { db.s.lock.checkNow() }
