package driver

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"time"

	"github.com/fdbqueue/fdbqueue/exec"
	"github.com/fdbqueue/fdbqueue/parser"
)

// Statement is what an observer (Observe) learns of each statement a
// connection ran: its kind and table, how long it took, and its outcome.
// It is how package metrics records statement latencies by kind without
// wrapping the driver.
type Statement struct {
	// Kind is what the statement does: insert, pop, lease, ack (a DELETE
	// whose WHERE has _lease = v), delete, update, select, count,
	// create, drop, stats (a SELECT of fdbqueue_queues) or ping (SELECT 1).
	Kind string
	// Table is the table the statement names ("" for ping).
	Table string
	// Rows is how many rows a query returned, or a write affected.
	Rows int64
	// Duration is how long the statement took, from its call to its
	// result: for an autocommit statement its commit (and retries)
	// included, for a FOR POP or FOR LEASE with WAIT its wait too; not
	// the time the program then takes to read a query's rows.
	Duration time.Duration
	// Wait reports a FOR POP or FOR LEASE with WAIT.
	Wait bool
	// InTx reports a statement of an explicit transaction, whose commit
	// comes later (and is not observed).
	InTx bool
	// Err is the statement's error, nil if it succeeded.
	Err error
}

// observers are the functions a connector calls after each statement its
// connections run (Observe).
type observers struct {
	mu   sync.RWMutex
	next int
	fns  map[int]func(Statement)
}

// active reports whether any observer is set: statements are timed only
// then.
func (o *observers) active() bool {
	o.mu.RLock()
	defer o.mu.RUnlock()
	return len(o.fns) > 0
}

func (o *observers) add(fn func(Statement)) (stop func()) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.fns == nil {
		o.fns = map[int]func(Statement){}
	}
	id := o.next
	o.next++
	o.fns[id] = fn
	return func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		delete(o.fns, id)
	}
}

func (o *observers) notify(s Statement) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	for _, fn := range o.fns {
		fn(s)
	}
}

// Observe calls fn after every statement that the connections of db run
// (they share its connector, so one call covers them all), until stop is
// called: fn learns each statement's kind, table, duration and outcome
// (Statement). fn runs on the statement's goroutine before the statement
// returns, and concurrently for concurrent statements: it must be quick
// and safe for concurrent use. BEGIN, COMMIT and ROLLBACK are not
// observed. db may be opened through a wrapping driver (otelsql), as for
// Tables; another driver's gets ErrNotFdbqueue.
func Observe(ctx context.Context, db *sql.DB, fn func(Statement)) (stop func(), err error) {
	c, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	err = c.Raw(func(dc any) error {
		cn, err := unwrapConn(dc, "Observe")
		if err == nil {
			stop = cn.obs.add(fn)
		}
		return err
	})
	return stop, err
}

// observed runs run, and tells the connector's observers about it if it
// has any.
func (c *conn) observed(p *parser.Parsed, run func() (*exec.Result, error)) (*exec.Result, error) {
	if c.obs == nil || !c.obs.active() {
		return run()
	}
	start := time.Now()
	res, err := run()
	s := Statement{Duration: time.Since(start), InTx: c.tx != nil, Err: err}
	s.Kind, s.Table, s.Wait = describe(p.Stmt)
	if res != nil {
		s.Rows = res.RowsAffected
		if res.HasRows {
			s.Rows = int64(len(res.Rows))
		}
	}
	c.obs.notify(s)
	return res, err
}

// describe returns a statement's kind and table (Statement), and whether
// it waits.
func describe(st parser.Statement) (kind, table string, wait bool) {
	switch s := st.(type) {
	case *parser.Insert:
		return "insert", s.Table, false
	case *parser.Select:
		switch {
		case strings.EqualFold(s.Table, exec.SystemQueues):
			kind = "stats"
		case s.ForPop:
			kind = "pop"
		case s.Lease != nil:
			kind = "lease"
		case s.Count:
			kind = "count"
		default:
			kind = "select"
		}
		return kind, s.Table, s.Wait != nil
	case *parser.Delete:
		for _, c := range s.Where {
			if strings.EqualFold(c.Column, parser.ColLease) && c.Op == parser.OpEq {
				return "ack", s.Table, false
			}
		}
		return "delete", s.Table, false
	case *parser.Update:
		return "update", s.Table, false
	case *parser.CreateTable:
		return "create", s.Name, false
	case *parser.DropTable:
		return "drop", s.Name, false
	case *parser.SelectValue:
		return "ping", "", false
	}
	return "other", "", false
}
