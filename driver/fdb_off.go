//go:build !fdb

package driver

import (
	"database/sql/driver"
	"fmt"
)

// openFDB explains how to get the FoundationDB engine: it needs cgo and the
// FoundationDB client library, so it is only in builds with -tags fdb.
func openFDB(cfg *Config) (driver.Connector, error) {
	return nil, fmt.Errorf("%w: %s needs the FoundationDB engine; install the FoundationDB client (libfdb_c and its headers) and build with -tags fdb", ErrEngine, cfg)
}
