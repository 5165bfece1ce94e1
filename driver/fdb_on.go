//go:build fdb

package driver

import (
	"database/sql/driver"
	"fmt"
	"strconv"
	"time"

	"github.com/fdbqueue/fdbqueue/exec"
	"github.com/fdbqueue/fdbqueue/kv/fdb"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// openFDB opens the FoundationDB engine: fdb:[CLUSTER_FILE][?root=...&
// tenant=...&timeout=...&retry_limit=...]. retry_limit=0 is refused: in
// FoundationDB's terms it would mean "no retries", in the engine's Config
// "the default".
func openFDB(cfg *Config) (driver.Connector, error) {
	fc := fdb.Config{ClusterFile: cfg.Path, Tenant: cfg.Params["tenant"]}
	if r, ok := cfg.Params["root"]; ok {
		if r == "" {
			return nil, fmt.Errorf("%w: root is empty; give the key prefix of fdbqueue's data, as in root=myapp", ErrDSN)
		}
		fc.Root = tuple.Tuple{r}.Pack()
	}
	if v, ok := cfg.Params["timeout"]; ok {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%w: timeout=%s; a duration such as 5s", ErrDSN, v)
		}
		fc.Timeout = d
	}
	if v, ok := cfg.Params["retry_limit"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < -1 || n == 0 {
			return nil, fmt.Errorf("%w: retry_limit=%s; a count of at least 1, or -1 for no limit (default %d)", ErrDSN, v, fdb.DefaultRetryLimit)
		}
		fc.RetryLimit = n
	}
	db, err := fdb.Open(fc)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEngine, err)
	}
	return &connector{cfg: cfg.Clone(), exec: exec.New(db, root)}, nil
}
