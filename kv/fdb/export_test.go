//go:build fdb

package fdb

import "github.com/apple/foundationdb/bindings/go/src/fdb"

// WithBindings runs f on the process's handle on a cluster, for tests that
// manage a cluster through the bindings (tenants), without racing the
// bindings' unlocked map of handles.
func WithBindings(clusterFile string, f func(fdb.Database) error) error {
	db, err := acquire(clusterFile)
	if err != nil {
		return err
	}
	defer releaseHandle(clusterFile)
	return f(db)
}
