package metrics

import (
	"context"
	"database/sql"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fdbqueue/fdbqueue/driver"
)

// Collector is a prometheus.Collector of fdbqueue's queues: register it
// with prometheus.MustRegister(metrics.NewCollector(db)). Each scrape
// reads fdbqueue_queues once and exports, labelled by table:
//
//	fdbqueue_rows{table, state}                     gauge: visible, delayed and leased rows
//	fdbqueue_dead_rows{table}                       gauge: rows of its dead-letter table (MAX_ATTEMPTS)
//	fdbqueue_oldest_visible_age_seconds{table}      gauge: 0 when no row is visible
//	fdbqueue_<counter>_total{table}                 counters: pushed, popped, leased, acked,
//	                                                released, expired, dead_lettered, deleted, returned
//	fdbqueue_stats_up                               1 if the scrape read fdbqueue_queues, 0 if not
//
// and, from this process's statements (driver.Observe):
//
//	fdbqueue_statement_duration_seconds{kind, table} histogram
//
// A table whose gauges are not known yet (from before statistics) has no
// fdbqueue_rows or age series until they are.
type Collector struct {
	db   *sql.DB
	opts options

	up, rows, dead, age *prometheus.Desc
	counters            []*prometheus.Desc
	durations           *prometheus.HistogramVec

	observeMu sync.Mutex
	observe   error // why statements are not observed, if they are not
}

// NewCollector returns a Collector of db's queues. It starts observing
// db's statements at once (driver.Observe): should that fail (db is not
// fdbqueue's), the scrapes report fdbqueue_stats_up 0.
func NewCollector(db *sql.DB, opts ...Option) *Collector {
	c := &Collector{
		db:   db,
		opts: newOptions(opts),
		up:   prometheus.NewDesc("fdbqueue_stats_up", "Whether the last scrape read fdbqueue_queues (1) or failed (0).", nil, nil),
		rows: prometheus.NewDesc("fdbqueue_rows", "Rows of a table by state at the scrape: visible, delayed or leased.", []string{"table", "state"}, nil),
		dead: prometheus.NewDesc("fdbqueue_dead_rows", "Rows of a table's dead-letter table (tables with MAX_ATTEMPTS).", []string{"table"}, nil),
		age:  prometheus.NewDesc("fdbqueue_oldest_visible_age_seconds", "How long the visible row that has waited longest has been visible, to the second; 0 when none is.", []string{"table"}, nil),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "fdbqueue_statement_duration_seconds",
			Help:    "How long this process's statements took, by kind (insert, pop, lease, ack, delete, update, select, count, create, drop, stats, ping) and table; an autocommit statement's commit included.",
			Buckets: prometheus.ExponentialBuckets(0.00005, 4, 10), // 50 µs to 13 s
		}, []string{"kind", "table"}),
	}
	for _, ct := range counters {
		c.counters = append(c.counters, prometheus.NewDesc("fdbqueue_"+ct.name+"_total", ct.help, []string{"table"}, nil))
	}
	c.startObserving()
	return c
}

// startObserving attaches the statement observer.
func (c *Collector) startObserving() {
	ctx, cancel := context.WithTimeout(context.Background(), observeTimeout)
	defer cancel()
	_, err := driver.Observe(ctx, c.db, func(s driver.Statement) {
		if s.Kind == "stats" {
			return // monitoring's own reads
		}
		c.durations.WithLabelValues(s.Kind, s.Table).Observe(s.Duration.Seconds())
	})
	c.observeMu.Lock()
	c.observe = err
	c.observeMu.Unlock()
}

// Describe sends the descriptors of every metric the Collector exports.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.up
	ch <- c.rows
	ch <- c.dead
	ch <- c.age
	for _, d := range c.counters {
		ch <- d
	}
	c.durations.Describe(ch)
}

// Collect reads fdbqueue_queues, within the Collector's timeout, and
// sends its metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.durations.Collect(ch)
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.timeout)
	defer cancel()
	queues, err := Read(ctx, c.db)
	c.observeMu.Lock()
	if err == nil {
		err = c.observe
	}
	c.observeMu.Unlock()
	up := 1.0
	if err != nil {
		up = 0
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up)
	for i := range queues {
		q := &queues[i]
		if q.Exact {
			for _, s := range states {
				ch <- prometheus.MustNewConstMetric(c.rows, prometheus.GaugeValue, float64(s.value(q)), q.Name, s.name)
			}
			ch <- prometheus.MustNewConstMetric(c.age, prometheus.GaugeValue, q.OldestVisibleAge.Seconds(), q.Name)
		}
		if q.HasDead {
			ch <- prometheus.MustNewConstMetric(c.dead, prometheus.GaugeValue, float64(q.Dead), q.Name)
		}
		for j, ct := range counters {
			ch <- prometheus.MustNewConstMetric(c.counters[j], prometheus.CounterValue, float64(ct.value(q)), q.Name)
		}
	}
}

// Err returns why the Collector does not observe db's statements (nil
// if it does).
func (c *Collector) Err() error {
	c.observeMu.Lock()
	defer c.observeMu.Unlock()
	return c.observe
}

var _ prometheus.Collector = (*Collector)(nil)
