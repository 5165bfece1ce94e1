package metrics

import (
	"context"
	"database/sql"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/fdbqueue/fdbqueue/driver"
)

// meterName is the instrumentation scope of the instruments.
const meterName = "github.com/fdbqueue/fdbqueue/metrics"

// Attribute keys. The messaging semantic conventions' where they fit.
const (
	attrSystem      = attribute.Key("messaging.system")           // "fdbqueue"
	attrDestination = attribute.Key("messaging.destination.name") // the table
	attrOperation   = attribute.Key("messaging.operation.name")   // the statement's kind
	attrOpType      = attribute.Key("messaging.operation.type")   // send, receive, settle
	attrErrorType   = attribute.Key("error.type")
	attrState       = attribute.Key("fdbqueue.row.state") // visible, delayed, leased
)

// operationTypes maps the statements of the messaging conventions to
// their operation types (others have none).
var operationTypes = map[string]string{
	"insert": "send", "pop": "receive", "lease": "receive",
	"ack": "settle", "update": "settle", "delete": "settle",
}

// durationBuckets are the messaging conventions' advice for
// messaging.client.operation.duration, in seconds.
var durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

// RegisterOTel registers OpenTelemetry instruments of db's queues with
// mp's meter (named github.com/fdbqueue/fdbqueue/metrics), and returns
// what unregisters them. Each collection reads fdbqueue_queues once,
// within the timeout (WithTimeout), for, with messaging.destination.name
// the table:
//
//	fdbqueue.queue.rows              gauge {row}, by fdbqueue.row.state: visible, delayed, leased
//	fdbqueue.queue.dead_rows         gauge {row}: rows of the dead-letter table (MAX_ATTEMPTS)
//	fdbqueue.queue.oldest_visible_age gauge s: 0 when no row is visible
//	fdbqueue.queue.<counter>         counters {row}: pushed, popped, leased, acked, released,
//	                                 expired, dead_lettered, deleted, returned
//
// and this process's statements are recorded as they run (driver.Observe),
// with the messaging semantic conventions' instruments, attributes
// messaging.system "fdbqueue", messaging.operation.name (the statement's
// kind), messaging.operation.type (send, receive, settle) where one fits,
// and error.type on failure:
//
//	messaging.client.operation.duration   histogram s: every statement
//	messaging.client.sent.messages        counter {message}: rows INSERTed
//	messaging.client.consumed.messages    counter {message}: rows popped or leased
func RegisterOTel(db *sql.DB, mp metric.MeterProvider, opts ...Option) (unregister func() error, err error) {
	o := newOptions(opts)
	m := mp.Meter(meterName)
	rows, err := m.Int64ObservableGauge("fdbqueue.queue.rows", metric.WithUnit("{row}"),
		metric.WithDescription("Rows of a table by state at the collection: visible, delayed or leased."))
	if err != nil {
		return nil, err
	}
	dead, err := m.Int64ObservableGauge("fdbqueue.queue.dead_rows", metric.WithUnit("{row}"),
		metric.WithDescription("Rows of a table's dead-letter table (tables with MAX_ATTEMPTS)."))
	if err != nil {
		return nil, err
	}
	age, err := m.Float64ObservableGauge("fdbqueue.queue.oldest_visible_age", metric.WithUnit("s"),
		metric.WithDescription("How long the visible row that has waited longest has been visible, to the second; 0 when none is."))
	if err != nil {
		return nil, err
	}
	observables := []metric.Observable{rows, dead, age}
	cs := make([]metric.Int64ObservableCounter, len(counters))
	for i, ct := range counters {
		if cs[i], err = m.Int64ObservableCounter("fdbqueue.queue."+ct.name, metric.WithUnit("{row}"), metric.WithDescription(ct.help)); err != nil {
			return nil, err
		}
		observables = append(observables, cs[i])
	}
	duration, err := m.Float64Histogram("messaging.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of messaging operation initiated by a producer or consumer client."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	if err != nil {
		return nil, err
	}
	sent, err := m.Int64Counter("messaging.client.sent.messages", metric.WithUnit("{message}"),
		metric.WithDescription("Number of messages producer attempted to send to the broker."))
	if err != nil {
		return nil, err
	}
	consumed, err := m.Int64Counter("messaging.client.consumed.messages", metric.WithUnit("{message}"),
		metric.WithDescription("Number of messages that were delivered to the application."))
	if err != nil {
		return nil, err
	}

	reg, err := m.RegisterCallback(func(ctx context.Context, obs metric.Observer) error {
		ctx, cancel := context.WithTimeout(ctx, o.timeout)
		defer cancel()
		queues, err := Read(ctx, db)
		if err != nil {
			return err
		}
		for i := range queues {
			q := &queues[i]
			table := attrDestination.String(q.Name)
			if q.Exact {
				for _, s := range states {
					obs.ObserveInt64(rows, s.value(q), metric.WithAttributes(table, attrState.String(s.name)))
				}
				obs.ObserveFloat64(age, q.OldestVisibleAge.Seconds(), metric.WithAttributes(table))
			}
			if q.HasDead {
				obs.ObserveInt64(dead, q.Dead, metric.WithAttributes(table))
			}
			for j, ct := range counters {
				obs.ObserveInt64(cs[j], ct.value(q), metric.WithAttributes(table))
			}
		}
		return nil
	}, observables...)
	if err != nil {
		return nil, err
	}

	ctx, cancel := context.WithTimeout(context.Background(), observeTimeout)
	defer cancel()
	system := attrSystem.String("fdbqueue")
	stop, err := driver.Observe(ctx, db, func(s driver.Statement) {
		if s.Kind == "stats" {
			return // monitoring's own reads
		}
		attrs := []attribute.KeyValue{system, attrOperation.String(s.Kind)}
		if s.Table != "" {
			attrs = append(attrs, attrDestination.String(s.Table))
		}
		if t, ok := operationTypes[s.Kind]; ok {
			attrs = append(attrs, attrOpType.String(t))
		}
		if s.Err != nil {
			duration.Record(context.Background(), s.Duration.Seconds(), metric.WithAttributes(append(attrs, attrErrorType.String(errorType(s.Err)))...))
			return
		}
		set := metric.WithAttributes(attrs...)
		duration.Record(context.Background(), s.Duration.Seconds(), set)
		switch s.Kind {
		case "insert":
			sent.Add(context.Background(), s.Rows, set)
		case "pop", "lease":
			consumed.Add(context.Background(), s.Rows, set)
		}
	})
	if err != nil {
		return nil, errors.Join(err, reg.Unregister())
	}
	return func() error {
		stop()
		return reg.Unregister()
	}, nil
}

// errorType is the error.type of a statement's error: the driver's error
// it wraps (driver.ErrNoTable's text, say), or "_OTHER".
func errorType(err error) string {
	for _, e := range []error{driver.ErrNoTable, driver.ErrValue, driver.ErrUnsupported, driver.ErrTransactionTooLarge, context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	if driver.IsRetryable(err) {
		return "retryable"
	}
	return "_OTHER"
}
