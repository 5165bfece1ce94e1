// Package lint holds tests that keep the code base's shape: imports flow one
// way (driver -> exec -> {parser, queues} -> kv, tuple), engines never import
// upward, and only parser sees sqlparser; and tests that keep the documents
// true to the code (docs_test.go): the paths, Go names, # Files lists, links
// and key tables they show.
package lint

import (
	"errors"
	"go/build"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/fdbqueue/fdbqueue/"

// allowed lists, for each package, the module's packages it may import.
var allowed = map[string][]string{
	"tuple":       {},
	"kv":          {},
	"kv/kvtest":   {"kv"},
	"kv/embedded": {"kv", "internal/btree"},
	"kv/fdb":      {"kv"},
	// The transport passes the embedded engine's own errors on as
	// themselves (errors.Is works across the socket).
	"kv/remote":   {"kv", "kv/embedded"},
	"kv/shared":   {"kv", "kv/embedded", "kv/remote"},
	"queues":      {"kv", "tuple"},
	"parser":      {},
	"exec":        {"kv", "parser", "queues", "tuple"},
	"driver":      {"exec", "kv", "kv/embedded", "kv/fdb", "kv/shared", "parser", "tuple"},
	"conformance": {"driver"},
	// The worker loop is a client of the driver: SQL and its errors only.
	"worker": {"driver"},
	// The modeled cluster wraps any engine, as an engine would.
	"internal/fdbmodel": {"kv"},
	// The command is a thin main over one package a program. The shell
	// is a program of the driver's public API; the bench also opens
	// engines itself: the modeled cluster (--model) and the file:
	// database's server (--processes, to see who serves it).
	"cmd/fdbqueue":                {"cmd/fdbqueue/internal/bench", "cmd/fdbqueue/internal/shell", "cmd/fdbqueue/internal/uicmd"},
	"cmd/fdbqueue/internal/shell": {"driver"},
	"cmd/fdbqueue/internal/uicmd": {"driver", "ui"},
	// The dashboard is a program of the driver's public API, and reads
	// the queues' state as package metrics does.
	"ui":                          {"driver", "metrics"},
	"metrics":                     {"driver"},
	"cmd/fdbqueue/internal/bench": {"driver", "internal/cputime", "internal/fdbmodel", "kv/embedded", "kv/shared"},
	// Benchmarks' CPU clocks: the standard library only.
	"internal/cputime": {},
}

func root(t *testing.T) string {
	_, file, _, ok := runtime.Caller(0)
	require.True(t, ok)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func TestImportsFlowOneWay(t *testing.T) {
	t.Parallel()
	dir := root(t)
	for pkg, ok := range allowed {
		for _, tags := range [][]string{nil, {"fdb"}} {
			ctx := build.Default
			ctx.BuildTags = tags
			p, err := ctx.ImportDir(filepath.Join(dir, pkg), 0)
			var noGo *build.NoGoError
			if errors.As(err, &noGo) {
				continue // a package that exists only with -tags fdb
			}
			require.NoError(t, err, pkg)
			for _, imp := range p.Imports {
				if strings.Contains(imp, "xwb1989/sqlparser") {
					require.Equal(t, "parser", pkg, "only parser imports sqlparser; %s does", pkg)
				}
				if !strings.HasPrefix(imp, module) {
					continue
				}
				dep := strings.TrimPrefix(imp, module)
				require.Contains(t, ok, dep, "%s may not import %s (allowed: %v)", pkg, dep, ok)
			}
		}
	}
}
