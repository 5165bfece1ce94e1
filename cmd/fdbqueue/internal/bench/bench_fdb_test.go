//go:build fdb

package bench

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/internal/fdbmodel"
	"github.com/fdbqueue/fdbqueue/internal/fdbshim"
)

// TestBenchFDBWaits: fdbqueue bench on fdb:, over the FoundationDB test
// double, reports the waits its statements made through kv/fdb and the
// official bindings, as the test double counts them (one client's runs
// only): an INSERT of one row waits 3 times, as on the modeled cluster.
// Not parallel: it sets the bench's counter (fdbWaits).
func TestBenchFDBWaits(t *testing.T) {
	fdbshim.SkipUnlessAvailable(t)
	c := fdbshim.NewCluster(t, fdbshim.Config{})
	total := c.Waits
	fdbWaits.Store(&total)
	t.Cleanup(func() { fdbWaits.Store((*func() fdbmodel.Counts)(nil)) })
	lines := benchJSON(t, "--bench", "push,pop,lease", "--clients", "1,2", "--batch", "1", "--limit-ops", "60",
		"--consumers", "1,2", "--consumer-resources", "random", "--prefill", "300", "--limit-s", "60", "fdb:"+c.ClusterFile())
	for kind, key := range map[string]string{"push": "waits", "pop": "waits", "lease": "lease_waits"} {
		require.NotEmpty(t, lines[kind], kind)
		for _, v := range lines[kind] {
			clients := v["clients"]
			if kind != "push" {
				clients = v["consumers"]
			}
			w, ok := v[key].(map[string]any)
			if clients != 1.0 {
				require.False(t, ok, "several clients' statements overlap: no waits: %s: %v", kind, v)
				continue
			}
			require.True(t, ok, "%s: %v", kind, v)
			if kind == "lease" {
				require.Positive(t, w["samples"], w)
			} else {
				require.Equal(t, v["samples"], w["samples"], "every statement timed is counted: %s: %v", kind, w)
			}
			require.LessOrEqual(t, w["p50"], w["p99"], w)
			require.LessOrEqual(t, w["p99"], w["max"], w)
			require.Positive(t, w["requests_per_stmt"], w)
			if kind == "push" {
				require.EqualValues(t, 3, w["p50"], "an INSERT waits for the read version, one read and the commit")
			}
		}
	}
}
