//go:build fdb

package driver

import (
	"database/sql/driver"
	"fmt"
)

// openFDB will open the FoundationDB engine (kv/fdb); until that engine
// lands, a build with -tags fdb says so instead of pretending.
func openFDB(cfg *Config) (driver.Connector, error) {
	return nil, fmt.Errorf("%w: %s: the FoundationDB engine (kv/fdb) is not in this version yet; use memory: or memory:NAME", ErrEngine, cfg)
}
