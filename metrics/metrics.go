// Package metrics exports fdbqueue's queues to monitoring: a Prometheus
// collector and OpenTelemetry instruments, each registered in two lines.
//
//	db, err := sql.Open("fdbqueue", dsn)
//	prometheus.MustRegister(metrics.NewCollector(db))
//
//	db, err := sql.Open("fdbqueue", dsn)
//	stop, err := metrics.RegisterOTel(db, meterProvider)
//
// Both read the system table fdbqueue_queues (docs/sql.md) when scraped or
// collected, with a timeout: every table's rows by state (visible,
// delayed, leased, dead), the age of its oldest visible row, and its
// counters, as gauges and counters labelled by table. Those are the
// database's, whoever changed it: every process that registers them
// reports the same numbers (take one, or the max, across instances).
// Both also record, through driver.Observe, how long this process's
// statements take, by kind and table: a histogram of the process's own
// statements (reads of fdbqueue_queues left out), with no wrapper around
// the driver.
//
// Read returns the same rows as Go values, for a program (or a
// dashboard) of its own.
package metrics

import (
	"context"
	"database/sql"
	"time"
)

// Queue is one table's row of fdbqueue_queues: docs/sql.md defines each
// value.
type Queue struct {
	// Name is the table's.
	Name string
	// Rows is how many rows the table holds.
	Rows int64
	// Exact reports whether Visible, Delayed, Leased and
	// OldestVisibleAge are known: not for a table from before
	// statistics until its migration (see docs/sql.md).
	Exact bool
	// Visible, Delayed and Leased split the rows at AsOf.
	Visible, Delayed, Leased int64
	// HasDead reports whether the table has dead letters (MAX_ATTEMPTS),
	// and Dead how many rows its dead-letter table holds.
	HasDead bool
	Dead    int64
	// OldestVisibleAge is how long the visible row that has waited
	// longest has been visible, to the second; 0 when none is.
	OldestVisibleAge time.Duration
	// The counters: rows pushed, popped, leased (leases taken), acked,
	// released, expired, dead-lettered, deleted and returned (put back).
	Pushed, Popped, LeasedTotal, Acked, Released, Expired, DeadLettered, Deleted, Returned int64
	// StatsSince is when the table's statistics became exact (the zero
	// time while they are not); AsOf the time the rows were classified
	// at.
	StatsSince, AsOf time.Time
}

// Read reads fdbqueue_queues: every table's row, by name.
func Read(ctx context.Context, db *sql.DB) ([]Queue, error) {
	rows, err := db.QueryContext(ctx, `SELECT name, rows, visible, delayed, leased, dead, oldest_visible_age_s,
		pushed, popped, leased_total, acked, released, expired, dead_lettered, deleted, returned, stats_since, as_of
		FROM fdbqueue_queues`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Queue
	for rows.Next() {
		var q Queue
		var visible, delayed, leased, dead, age sql.NullInt64
		var since sql.NullTime
		if err := rows.Scan(&q.Name, &q.Rows, &visible, &delayed, &leased, &dead, &age,
			&q.Pushed, &q.Popped, &q.LeasedTotal, &q.Acked, &q.Released, &q.Expired, &q.DeadLettered, &q.Deleted, &q.Returned,
			&since, &q.AsOf); err != nil {
			return nil, err
		}
		q.Exact = visible.Valid
		q.Visible, q.Delayed, q.Leased = visible.Int64, delayed.Int64, leased.Int64
		q.HasDead, q.Dead = dead.Valid, dead.Int64
		q.OldestVisibleAge = time.Duration(age.Int64) * time.Second
		q.StatsSince = since.Time
		out = append(out, q)
	}
	return out, rows.Err()
}

// DefaultTimeout bounds a scrape's or a collection's read of
// fdbqueue_queues when no WithTimeout is given.
const DefaultTimeout = 5 * time.Second

// Option configures NewCollector and RegisterOTel.
type Option func(*options)

type options struct {
	timeout time.Duration
}

// WithTimeout bounds each read of fdbqueue_queues (DefaultTimeout
// otherwise).
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

func newOptions(opts []Option) options {
	o := options{timeout: DefaultTimeout}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// observeTimeout bounds getting a connection to attach the statement
// observer (driver.Observe).
const observeTimeout = 5 * time.Second

// counters lists the counters in the order of the docs, with their
// names (Prometheus adds _total; OpenTelemetry names them
// fdbqueue.queue.<name>).
var counters = []struct {
	name, help string
	value      func(*Queue) int64
}{
	{"pushed", "Rows pushed (INSERT).", func(q *Queue) int64 { return q.Pushed }},
	{"popped", "Rows popped (FOR POP).", func(q *Queue) int64 { return q.Popped }},
	{"leased", "Leases taken (FOR LEASE), one a row.", func(q *Queue) int64 { return q.LeasedTotal }},
	{"acked", "Rows removed by their lease's holder (DELETE ... AND _lease = v).", func(q *Queue) int64 { return q.Acked }},
	{"released", "Leases ended by an UPDATE of _visible_at.", func(q *Queue) int64 { return q.Released }},
	{"expired", "Leases that ended unacked, counted when a pop or lease took their row back.", func(q *Queue) int64 { return q.Expired }},
	{"dead_lettered", "Rows moved to the dead letters (MAX_ATTEMPTS).", func(q *Queue) int64 { return q.DeadLettered }},
	{"deleted", "Rows removed by other DELETEs.", func(q *Queue) int64 { return q.Deleted }},
	{"returned", "Rows an autocommit pop took and put back, unread.", func(q *Queue) int64 { return q.Returned }},
}

// states lists the row states of the gauges.
var states = []struct {
	name  string
	value func(*Queue) int64
}{
	{"visible", func(q *Queue) int64 { return q.Visible }},
	{"delayed", func(q *Queue) int64 { return q.Delayed }},
	{"leased", func(q *Queue) int64 { return q.Leased }},
}
