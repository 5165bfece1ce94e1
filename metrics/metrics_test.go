package metrics_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	_ "github.com/fdbqueue/fdbqueue/driver"
	"github.com/fdbqueue/fdbqueue/metrics"
)

var bg = context.Background()

// open opens a private database, and runs statements on it, reading the
// rows of each.
func open(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("fdbqueue", "memory:")
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// run runs statements on db, reading every row of each.
func run(t *testing.T, db *sql.DB, statements ...string) {
	t.Helper()
	for _, q := range statements {
		rows, err := db.Query(q)
		require.NoError(t, err, q)
		for rows.Next() {
		}
		require.NoError(t, rows.Close(), q)
	}
}

// workload opens a database with two tables in known states: jobs (4
// rows: 1 visible, 1 delayed, 2 leased, of which 1 acked since; a dead
// letter) and log (1 visible row).
func workload(t *testing.T) *sql.DB {
	t.Helper()
	db := open(t)
	run(t, db,
		"CREATE TABLE jobs (priority INT NOT NULL, v TEXT) MAX_ATTEMPTS=1",
		"CREATE TABLE log (v TEXT)",
		"INSERT INTO jobs (id, priority, v, _attempts) VALUES (1, 9, 'doomed', 1)",
		"INSERT INTO jobs VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')",
		"INSERT INTO jobs (priority, v, _visible_at) VALUES (1, 'later', NOW() + INTERVAL 1 HOUR)",
		"INSERT INTO log VALUES ('x')")
	var id, lease int64
	var v string
	// The first lease finds the doomed row, which dies, and leases d.
	require.NoError(t, db.QueryRow("SELECT id, _lease FROM jobs ORDER BY priority DESC LIMIT 1 FOR LEASE 3600").Scan(&id, &lease))
	_, err := db.Exec("DELETE FROM jobs WHERE id = ? AND _lease = ?", id, lease)
	require.NoError(t, err)
	require.NoError(t, db.QueryRow("SELECT id FROM jobs ORDER BY priority DESC LIMIT 2 FOR LEASE 3600").Scan(&id))
	require.NoError(t, db.QueryRow("SELECT v FROM jobs ORDER BY priority LIMIT 1 FOR POP").Scan(&v))
	return db
}

// TestCollector: a scrape exports the system table's rows.
func TestCollector(t *testing.T) {
	t.Parallel()
	db := workload(t)
	c := metrics.NewCollector(db)
	require.NoError(t, c.Err())
	ages := func() map[string]float64 {
		qs, err := metrics.Read(bg, db)
		require.NoError(t, err)
		out := map[string]float64{}
		for _, q := range qs {
			out[q.Name] = q.OldestVisibleAge.Seconds()
		}
		return out
	}
	before := ages()
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(`
# HELP fdbqueue_rows Rows of a table by state at the scrape: visible, delayed or leased.
# TYPE fdbqueue_rows gauge
fdbqueue_rows{state="delayed",table="jobs"} 1
fdbqueue_rows{state="delayed",table="jobs_dead"} 0
fdbqueue_rows{state="delayed",table="log"} 0
fdbqueue_rows{state="leased",table="jobs"} 2
fdbqueue_rows{state="leased",table="jobs_dead"} 0
fdbqueue_rows{state="leased",table="log"} 0
fdbqueue_rows{state="visible",table="jobs"} 0
fdbqueue_rows{state="visible",table="jobs_dead"} 1
fdbqueue_rows{state="visible",table="log"} 1
# HELP fdbqueue_dead_rows Rows of a table's dead-letter table (tables with MAX_ATTEMPTS).
# TYPE fdbqueue_dead_rows gauge
fdbqueue_dead_rows{table="jobs"} 1
# HELP fdbqueue_leased_total Leases taken (FOR LEASE), one a row.
# TYPE fdbqueue_leased_total counter
fdbqueue_leased_total{table="jobs"} 3
fdbqueue_leased_total{table="jobs_dead"} 0
fdbqueue_leased_total{table="log"} 0
# HELP fdbqueue_pushed_total Rows pushed (INSERT).
# TYPE fdbqueue_pushed_total counter
fdbqueue_pushed_total{table="jobs"} 6
fdbqueue_pushed_total{table="jobs_dead"} 1
fdbqueue_pushed_total{table="log"} 1
# HELP fdbqueue_acked_total Rows removed by their lease's holder (DELETE ... AND _lease = v).
# TYPE fdbqueue_acked_total counter
fdbqueue_acked_total{table="jobs"} 1
fdbqueue_acked_total{table="jobs_dead"} 0
fdbqueue_acked_total{table="log"} 0
# HELP fdbqueue_dead_lettered_total Rows moved to the dead letters (MAX_ATTEMPTS).
# TYPE fdbqueue_dead_lettered_total counter
fdbqueue_dead_lettered_total{table="jobs"} 1
fdbqueue_dead_lettered_total{table="jobs_dead"} 0
fdbqueue_dead_lettered_total{table="log"} 0
# HELP fdbqueue_popped_total Rows popped (FOR POP).
# TYPE fdbqueue_popped_total counter
fdbqueue_popped_total{table="jobs"} 1
fdbqueue_popped_total{table="jobs_dead"} 0
fdbqueue_popped_total{table="log"} 0
# HELP fdbqueue_stats_up Whether the last scrape read fdbqueue_queues (1) or failed (0).
# TYPE fdbqueue_stats_up gauge
fdbqueue_stats_up 1
`), "fdbqueue_rows", "fdbqueue_dead_rows", "fdbqueue_leased_total", "fdbqueue_pushed_total", "fdbqueue_acked_total",
		"fdbqueue_dead_lettered_total", "fdbqueue_popped_total", "fdbqueue_stats_up"))

	// The age grows with the clock: the scrape's lies between two reads.
	var got map[string]float64
	got = map[string]float64{}
	for _, m := range gather(t, c)["fdbqueue_oldest_visible_age_seconds"] {
		got[label(m, "table")] = m.GetGauge().GetValue()
	}
	after := ages()
	for _, table := range []string{"jobs", "jobs_dead", "log"} {
		require.GreaterOrEqual(t, got[table], before[table], table)
		require.LessOrEqual(t, got[table], after[table], table)
	}
	// Every metric has a help and a name promlint accepts.
	problems, err := testutil.CollectAndLint(c)
	require.NoError(t, err)
	require.Empty(t, problems)
}

// TestCollectorDurations: the histogram counts this process's statements
// by kind and table.
func TestCollectorDurations(t *testing.T) {
	t.Parallel()
	db := open(t)
	c := metrics.NewCollector(db)
	run(t, db, "CREATE TABLE t (v TEXT)", "INSERT INTO t VALUES ('a')", "INSERT INTO t VALUES ('b')", "SELECT v FROM t LIMIT 1 FOR POP")
	counts := map[string]uint64{}
	for _, m := range gather(t, c)["fdbqueue_statement_duration_seconds"] {
		counts[label(m, "kind")+" "+label(m, "table")] = m.GetHistogram().GetSampleCount()
	}
	require.Equal(t, map[string]uint64{"create t": 1, "insert t": 2, "pop t": 1}, counts)
}

// TestCollectorFailures: a scrape that cannot read the system table in
// time, or a database whose statements cannot be observed (closed, or
// another driver's: see driver.Observe), reports fdbqueue_stats_up 0.
func TestCollectorFailures(t *testing.T) {
	t.Parallel()
	db := workload(t)
	up := func(c prometheus.Collector) float64 {
		return gather(t, c)["fdbqueue_stats_up"][0].GetGauge().GetValue()
	}
	require.Equal(t, 0.0, up(metrics.NewCollector(db, metrics.WithTimeout(time.Nanosecond))))

	closed := open(t)
	require.NoError(t, closed.Close())
	c := metrics.NewCollector(closed)
	require.ErrorContains(t, c.Err(), "database is closed")
	require.Equal(t, 0.0, up(c))
}

// TestRegisterOTel: a collection of the manual reader has the system
// table's gauges and counters, and the messaging conventions' client
// instruments record this process's statements.
func TestRegisterOTel(t *testing.T) {
	t.Parallel()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(bg) }()
	db := open(t)
	unregister, err := metrics.RegisterOTel(db, mp)
	require.NoError(t, err)
	run(t, db,
		"CREATE TABLE jobs (priority INT NOT NULL, v TEXT)",
		"INSERT INTO jobs VALUES (1, 'a'), (2, 'b'), (3, 'c')",
		"INSERT INTO jobs (priority, v, _visible_at) VALUES (1, 'later', NOW() + INTERVAL 1 HOUR)",
		"SELECT v FROM jobs LIMIT 2 FOR LEASE 60",
		"SELECT v FROM jobs LIMIT 1 FOR POP")
	_, err = db.Exec("INSERT INTO nope VALUES (1)")
	require.Error(t, err)

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(bg, &rm))
	require.Len(t, rm.ScopeMetrics, 1)
	require.Equal(t, "github.com/fdbqueue/fdbqueue/metrics", rm.ScopeMetrics[0].Scope.Name)
	got := map[string]string{}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch d := m.Data.(type) {
		case metricdata.Gauge[int64]:
			for _, p := range d.DataPoints {
				got[m.Name+attrs(p.Attributes)] = fmt.Sprint(p.Value)
			}
		case metricdata.Gauge[float64]:
			for range d.DataPoints {
				got[m.Name] = m.Unit
			}
		case metricdata.Sum[int64]:
			for _, p := range d.DataPoints {
				got[m.Name+attrs(p.Attributes)] = fmt.Sprint(p.Value, " monotonic=", d.IsMonotonic)
			}
		case metricdata.Histogram[float64]:
			for _, p := range d.DataPoints {
				got[m.Name+attrs(p.Attributes)] = fmt.Sprint(p.Count, " ", m.Unit)
			}
		}
	}
	for k, v := range map[string]string{
		"fdbqueue.queue.rows{jobs,visible}":                                                      "0",
		"fdbqueue.queue.rows{jobs,delayed}":                                                      "1",
		"fdbqueue.queue.rows{jobs,leased}":                                                       "2",
		"fdbqueue.queue.oldest_visible_age":                                                      "s",
		"fdbqueue.queue.pushed{jobs}":                                                            "4 monotonic=true",
		"fdbqueue.queue.leased{jobs}":                                                            "2 monotonic=true",
		"fdbqueue.queue.popped{jobs}":                                                            "1 monotonic=true",
		"messaging.client.sent.messages{jobs,insert,send,fdbqueue}":                              "4 monotonic=true",
		"messaging.client.consumed.messages{jobs,lease,receive,fdbqueue}":                        "2 monotonic=true",
		"messaging.client.consumed.messages{jobs,pop,receive,fdbqueue}":                          "1 monotonic=true",
		"messaging.client.operation.duration{jobs,insert,send,fdbqueue}":                         "2 s",
		"messaging.client.operation.duration{jobs,create,fdbqueue}":                              "1 s",
		"messaging.client.operation.duration{nope,insert,send,fdbqueue,fdbqueue: no such table}": "1 s",
	} {
		require.Equal(t, v, got[k], "%s in %v", k, got)
	}
	require.NotContains(t, got, "fdbqueue.queue.dead_rows{jobs}", "no MAX_ATTEMPTS")
	require.NotContains(t, got, "messaging.client.operation.duration{fdbqueue_queues,stats,fdbqueue}", "its own reads")

	// Unregistered: collections read nothing more, statements record
	// nothing.
	require.NoError(t, unregister())
	_, err = db.Exec("INSERT INTO jobs VALUES (1, 'e')")
	require.NoError(t, err)
	require.NoError(t, reader.Collect(bg, &rm))
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "messaging.client.sent.messages" {
				require.Equal(t, int64(4), h.DataPoints[0].Value)
			}
			require.NotEqual(t, "fdbqueue.queue.rows", m.Name)
		}
	}
}

// attrs renders an attribute set's values in a fixed order: destination,
// state or operation name, operation type, system, error type.
func attrs(s attribute.Set) string {
	var vals []string
	for _, k := range []attribute.Key{"messaging.destination.name", "fdbqueue.row.state", "messaging.operation.name", "messaging.operation.type", "messaging.system", "error.type"} {
		if v, ok := s.Value(k); ok {
			vals = append(vals, v.AsString())
		}
	}
	if len(vals) == 0 {
		return ""
	}
	return "{" + strings.Join(vals, ",") + "}"
}

// gather collects c's metrics by name.
func gather(t *testing.T, c prometheus.Collector) map[string][]*dto.Metric {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string][]*dto.Metric{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf.GetMetric()
	}
	return out
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
