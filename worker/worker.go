// Package worker runs the lease loop of a task table for you: Concurrency
// goroutines lease tasks with FOR LEASE ... WAIT, hand each to a handler
// while renewing its lease (a heartbeat), ack it when the handler returns
// nil (DELETE ... AND _lease = ?), and release it for a retry when the
// handler fails (UPDATE ... SET _visible_at = NULL, _error = ?: the
// table's BACKOFF applies, and MAX_ATTEMPTS moves a task that keeps failing
// to the dead letters).
//
//	w := worker.New(db, worker.Config{Table: "jobs", Columns: []string{"payload"},
//		Lease: 30 * time.Second, Concurrency: 4})
//	err := w.Run(ctx, func(ctx context.Context, j *worker.Job) error {
//		var payload string
//		if err := j.Scan(&payload); err != nil {
//			return err
//		}
//		return process(ctx, payload)
//	})
//
// It works over any *sql.DB of the fdbqueue driver (memory:, file: or
// fdb:), with the SQL of docs/sql.md, "Leases and retries".
//
// # Guarantees
//
//   - At-least-once delivery to the handler: a task is handed to a handler
//     again if its lease ends before the ack (the process died, a heartbeat
//     could not reach the database for a whole lease, the handler failed).
//     While one handler holds a task, no other gets it: the heartbeat keeps
//     the lease, and when it finds the lease lost (another worker has the
//     task, or the row was deleted) it cancels the handler's context with
//     ErrLeaseLost.
//   - A task's ack applies exactly once: the DELETE names the lease, so
//     only its holder removes the task, and the driver makes an autocommit
//     DELETE exactly-once through commit_unknown_result (its receipts).
//     OnSuccess runs only when the ack removed the task; an ack that found
//     the lease lost reports ErrLeaseLost to OnFailure instead.
//   - Graceful shutdown: when Run's context ends, no new task is leased;
//     handlers running get Config.ShutdownTimeout to finish (and are acked
//     or released as usual), then their context is cancelled with
//     ErrShutdown and their tasks released to be visible at once, without
//     the backoff. Run returns when every handler has returned: a handler
//     must return when its context ends.
//
// Each handler running holds no connection, but each goroutine waiting in
// a lease holds one, and heartbeats, acks and releases need others: a
// db.SetMaxOpenConns, if set, should leave room beyond Concurrency.
//
// The worker's own statements that fail with driver.IsRetryable or
// driver.IsMaybeCommitted errors (the driver retries those itself first)
// are run again with a backoff; other errors of a lease end Run, and
// those of a heartbeat, ack or release go to Hooks.OnError (the task
// comes back when its lease ends).
package worker

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/fdbqueue/fdbqueue/driver"
)

// Config says which tasks a Worker takes and how.
type Config struct {
	// Table is the task table (required). Columns are the columns the
	// handler reads with Job.Scan, besides id, _lease and _attempts
	// (which Job has). Names are quoted in backticks; a name holding a
	// backtick or a NUL is refused.
	Table   string
	Columns []string
	// Where and OrderBy, optional, are SQL text put after WHERE and ORDER
	// BY in the lease (SELECT ... FROM t WHERE <Where> ORDER BY <OrderBy>
	// LIMIT 1 FOR LEASE ...), with Args for Where's placeholders: "cpu <= ?
	// AND mem <= ?", "priority DESC". They are trusted: never build them
	// from input.
	Where   string
	Args    []any
	OrderBy string
	// Lease is how long a task is hidden from other workers without a
	// heartbeat (default 30 s); Heartbeat how often a running task's
	// lease is renewed for another Lease (default Lease/3; less than
	// Lease). Wait is how long a lease waits for a task before asking
	// again (default 20 s, at most 300 s, WAIT's bound).
	Lease, Heartbeat, Wait time.Duration
	// Concurrency is how many handlers run at once (default 1).
	Concurrency int
	// ShutdownTimeout is how long handlers running when Run's context
	// ends may go on before their context is cancelled and their tasks
	// released (0: at once).
	ShutdownTimeout time.Duration
	// Hooks are called around each task, for metrics and logs.
	Hooks Hooks
}

// Hooks are optional callbacks; they run on the worker's goroutines, so
// they must be quick and safe for concurrent use.
type Hooks struct {
	// OnStart runs before the handler, with the handler's context.
	OnStart func(ctx context.Context, j *Job)
	// OnSuccess runs after the ack removed the task; d is how long the
	// handler ran.
	OnSuccess func(ctx context.Context, j *Job, d time.Duration)
	// OnFailure runs after a failed task was released (or, for Drop,
	// acked): err is the handler's error (a *PanicError for a panic), or
	// wraps ErrLeaseLost when the lease was lost, or ErrShutdown.
	OnFailure func(ctx context.Context, j *Job, err error, d time.Duration)
	// OnError runs for an error of the worker's own statements (a
	// heartbeat, ack or release that failed; retryable ones before they
	// are retried).
	OnError func(err error)
}

var (
	// ErrLeaseLost is the cause of a handler's context cancelled because
	// its task's lease was lost (a heartbeat, or the ack, affected no row:
	// the lease ended and another worker leased the task, or the row was
	// deleted).
	ErrLeaseLost = errors.New("worker: lease lost")
	// ErrShutdown is the cause of a handler's context cancelled because
	// Run's context ended and ShutdownTimeout passed; its task is released
	// to be visible at once.
	ErrShutdown = errors.New("worker: shut down")
	// ErrConfig is returned by Run for a Config it cannot use.
	ErrConfig = errors.New("worker: bad config")
)

// MaxErrorSize is the most bytes of an error the release records in
// _error (the dialect's limit): longer messages are cut at a UTF-8
// boundary.
const MaxErrorSize = 1000

// Handler does a task. It returns nil to ack it, an error to release it
// for a retry (after the table's BACKOFF, or the delay of RetryAfter), or
// Drop(err) to remove it without a retry. It must return when ctx ends.
type Handler func(ctx context.Context, j *Job) error

// Job is a leased task.
type Job struct {
	ID       int64 // the row's id
	Lease    int64 // the lease's token (_lease)
	Attempts int64 // how many times it was leased, this lease included (_attempts)
	values   []any
}

// Scan copies the task's Config.Columns, in order, into dest, converting
// them as sql.Rows.Scan does.
func (j *Job) Scan(dest ...any) error {
	return scanValues(j.values, dest)
}

// RetryAfter makes a handler's error release the task to be retried
// after d (from now, on this host's clock) instead of the table's
// BACKOFF; d <= 0 retries at once. err may be nil.
func RetryAfter(d time.Duration, err error) error {
	return &retryAfter{d: d, err: err}
}

type retryAfter struct {
	d   time.Duration
	err error
}

func (r *retryAfter) Error() string {
	if r.err == nil {
		return fmt.Sprintf("worker: retry after %v", r.d)
	}
	return r.err.Error()
}
func (r *retryAfter) Unwrap() error { return r.err }

// Drop makes a handler's error remove the task (as an ack does) instead
// of releasing it for a retry: for a task that can never succeed. The
// error goes to Hooks.OnFailure; nothing records it in the database
// (return the error itself to let MAX_ATTEMPTS move the task to the dead
// letters with its _error instead). err may be nil.
func Drop(err error) error { return &drop{err: err} }

type drop struct{ err error }

func (d *drop) Error() string {
	if d.err == nil {
		return "worker: dropped"
	}
	return d.err.Error()
}
func (d *drop) Unwrap() error { return d.err }

// PanicError is a handler's panic, recovered and treated as its error:
// _error records Error() (the value, without the stack); Stack is for
// OnFailure's logs.
type PanicError struct {
	Value any
	Stack []byte
}

func (p *PanicError) Error() string { return fmt.Sprintf("worker: handler panicked: %v", p.Value) }

// Worker runs a Handler over a task table. Make one with New.
type Worker struct {
	db  *sql.DB
	cfg Config
}

// New returns a Worker over db (a database of the fdbqueue driver). The
// Config is checked by Run.
func New(db *sql.DB, cfg Config) *Worker {
	return &Worker{db: db, cfg: cfg}
}

// quote backtick-quotes a table or column name, refusing one that cannot
// be quoted.
func quote(what, name string) (string, error) {
	if name == "" || strings.ContainsAny(name, "`\x00") || !utf8.ValidString(name) {
		return "", fmt.Errorf("%w: %s %q: a name, without backticks or NUL", ErrConfig, what, name)
	}
	return "`" + name + "`", nil
}

// statements are a Worker's SQL, built once from its Config.
type statements struct {
	lease, extend, ack, release, releaseAt, exists string
}

func (w *Worker) prepare() (*Config, *statements, error) {
	c := w.cfg
	if w.db == nil {
		return nil, nil, fmt.Errorf("%w: no *sql.DB", ErrConfig)
	}
	if c.Lease == 0 {
		c.Lease = 30 * time.Second
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = c.Lease / 3
	}
	if c.Wait == 0 {
		c.Wait = 20 * time.Second
	}
	if c.Concurrency == 0 {
		c.Concurrency = 1
	}
	switch {
	case c.Lease < time.Millisecond:
		return nil, nil, fmt.Errorf("%w: Lease %v; at least 1ms (0: 30s)", ErrConfig, c.Lease)
	case c.Heartbeat <= 0 || c.Heartbeat >= c.Lease:
		return nil, nil, fmt.Errorf("%w: Heartbeat %v; more than 0 and less than Lease %v (0: Lease/3)", ErrConfig, c.Heartbeat, c.Lease)
	case c.Wait < 0 || c.Wait > 300*time.Second:
		return nil, nil, fmt.Errorf("%w: Wait %v; from 0 to 300s (0: 20s)", ErrConfig, c.Wait)
	case c.Concurrency < 0:
		return nil, nil, fmt.Errorf("%w: Concurrency %d; 1 or more (0: 1)", ErrConfig, c.Concurrency)
	case c.ShutdownTimeout < 0:
		return nil, nil, fmt.Errorf("%w: ShutdownTimeout %v; 0 or more", ErrConfig, c.ShutdownTimeout)
	}
	t, err := quote("Table", c.Table)
	if err != nil {
		return nil, nil, err
	}
	cols := []string{"id", "_lease", "_attempts"}
	for _, col := range c.Columns {
		q, err := quote("column", col)
		if err != nil {
			return nil, nil, err
		}
		cols = append(cols, q)
	}
	lease := "SELECT " + strings.Join(cols, ", ") + " FROM " + t
	if c.Where != "" {
		lease += " WHERE " + c.Where
	}
	if c.OrderBy != "" {
		lease += " ORDER BY " + c.OrderBy
	}
	lease += " LIMIT 1 FOR LEASE ? WAIT ?"
	return &c, &statements{
		lease:     lease,
		extend:    "UPDATE " + t + " SET _visible_at = ? WHERE id = ? AND _lease = ?",
		ack:       "DELETE FROM " + t + " WHERE id = ? AND _lease = ?",
		release:   "UPDATE " + t + " SET _visible_at = NULL, _error = ? WHERE id = ? AND _lease = ?",
		releaseAt: "UPDATE " + t + " SET _visible_at = ?, _error = ? WHERE id = ? AND _lease = ?",
		exists:    "SELECT COUNT(*) FROM " + t + " WHERE id = ?",
	}, nil
}

// run is one Run: its config, statements and shutdown state.
type run struct {
	db    *sql.DB
	cfg   *Config
	sql   *statements
	h     Handler
	base  context.Context // Run's context without its cancellation: the worker's own statements
	hard  context.Context // cancelled (ErrShutdown) ShutdownTimeout after Run's context ends
	errMu sync.Mutex
	err   error // the first lease error that ended Run
	stop  context.CancelFunc
}

// Run leases and handles tasks until ctx ends (it then returns nil, after
// the shutdown described in the package's doc) or a lease fails with an
// error that is not retryable (a missing table, bad Where SQL: it then
// shuts down the same way and returns that error). A bad Config is
// returned at once, wrapping ErrConfig.
func (w *Worker) Run(ctx context.Context, h Handler) error {
	cfg, stmts, err := w.prepare()
	if err != nil {
		return err
	}
	if h == nil {
		return fmt.Errorf("%w: no handler", ErrConfig)
	}
	leaseCtx, stop := context.WithCancel(ctx)
	defer stop()
	base := context.WithoutCancel(ctx)
	hard, kill := context.WithCancelCause(base)
	defer kill(ErrShutdown)
	r := &run{db: w.db, cfg: cfg, sql: stmts, h: h, base: base, hard: hard, stop: stop}
	go func() {
		<-leaseCtx.Done()
		if cfg.ShutdownTimeout > 0 {
			t := time.NewTimer(cfg.ShutdownTimeout)
			defer t.Stop()
			select {
			case <-t.C:
			case <-hard.Done(): // Run returned
			}
		}
		kill(ErrShutdown)
	}()
	var wg sync.WaitGroup
	for range cfg.Concurrency {
		wg.Go(func() { r.loop(leaseCtx) })
	}
	wg.Wait()
	return r.err
}

// loop leases and handles tasks until ctx ends.
func (r *run) loop(ctx context.Context) {
	for b := (backoff{}); ctx.Err() == nil; {
		j, err := r.lease(ctx)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			continue
		case ctx.Err() != nil:
			return // the lease ended with ctx: it took nothing
		case err != nil && retryable(err):
			r.report(err)
			b.sleep(ctx)
			continue
		case err != nil:
			r.errMu.Lock()
			if r.err == nil {
				r.err = fmt.Errorf("worker: lease from %s: %w", r.cfg.Table, err)
			}
			r.errMu.Unlock()
			r.stop()
			return
		}
		b = backoff{}
		r.handle(j)
	}
}

func (r *run) lease(ctx context.Context) (*Job, error) {
	j := &Job{values: make([]any, len(r.cfg.Columns))}
	dest := []any{&j.ID, &j.Lease, &j.Attempts}
	for i := range j.values {
		dest = append(dest, &j.values[i])
	}
	args := append(append([]any{}, r.cfg.Args...), r.cfg.Lease, r.cfg.Wait)
	if err := r.db.QueryRowContext(ctx, r.sql.lease, args...).Scan(dest...); err != nil {
		return nil, err
	}
	return j, nil
}

// handle runs the handler on j with a heartbeat, then acks or releases j.
func (r *run) handle(j *Job) {
	ctx, cancel := context.WithCancelCause(r.hard)
	defer cancel(nil)
	beat := make(chan struct{})
	beating := make(chan struct{})
	go func() {
		defer close(beating)
		r.heartbeat(j, beat, cancel)
	}()
	hooks := r.cfg.Hooks
	if hooks.OnStart != nil {
		hooks.OnStart(ctx, j)
	}
	start := time.Now()
	err := r.call(ctx, j)
	d := time.Since(start)
	close(beat)
	<-beating // no heartbeat may land after the release below
	cause := context.Cause(ctx)
	var (
		dr *drop
		ra *retryAfter
	)
	switch {
	case errors.Is(cause, ErrLeaseLost):
		r.failed(ctx, j, fmt.Errorf("task %d: %w", j.ID, ErrLeaseLost), d)
	case err == nil:
		switch acked, aerr := r.ack(j); {
		case aerr != nil:
			r.report(aerr)
		case acked:
			if hooks.OnSuccess != nil {
				hooks.OnSuccess(ctx, j, d)
			}
		default:
			r.failed(ctx, j, fmt.Errorf("task %d: ack: %w", j.ID, ErrLeaseLost), d)
		}
	case errors.As(err, &dr):
		if _, aerr := r.ack(j); aerr != nil {
			r.report(aerr)
		}
		r.failed(ctx, j, err, d)
	case errors.Is(cause, ErrShutdown):
		// Back at once: the task did not fail, the worker stopped.
		err = fmt.Errorf("%w: %w", ErrShutdown, err)
		r.exec(r.sql.releaseAt, time.Now(), errorText(err), j.ID, j.Lease)
		r.failed(ctx, j, err, d)
	case errors.As(err, &ra):
		r.exec(r.sql.releaseAt, time.Now().Add(max(ra.d, 0)), errorText(err), j.ID, j.Lease)
		r.failed(ctx, j, err, d)
	default:
		r.exec(r.sql.release, errorText(err), j.ID, j.Lease)
		r.failed(ctx, j, err, d)
	}
}

func (r *run) failed(ctx context.Context, j *Job, err error, d time.Duration) {
	if r.cfg.Hooks.OnFailure != nil {
		r.cfg.Hooks.OnFailure(ctx, j, err, d)
	}
}

func (r *run) report(err error) {
	if r.cfg.Hooks.OnError != nil {
		r.cfg.Hooks.OnError(err)
	}
}

// call runs the handler, turning a panic into a *PanicError.
func (r *run) call(ctx context.Context, j *Job) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return r.h(ctx, j)
}

// heartbeat renews j's lease every Heartbeat until beat is closed, and
// cancels the handler with ErrLeaseLost when the lease is lost.
func (r *run) heartbeat(j *Job, beat <-chan struct{}, cancel context.CancelCauseFunc) {
	t := time.NewTicker(r.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-beat:
			return
		case <-t.C:
		}
		n, err := r.exec(r.sql.extend, time.Now().Add(r.cfg.Lease), j.ID, j.Lease)
		if err == nil && n == 0 {
			cancel(ErrLeaseLost)
			return
		}
	}
}

// ack deletes j under its lease; acked is false when the lease was lost.
func (r *run) ack(j *Job) (acked bool, err error) {
	unsure := false
	ctx, cancel := context.WithTimeout(r.base, r.opTimeout())
	defer cancel()
	for b := (backoff{}); ; {
		res, err := r.db.ExecContext(ctx, r.sql.ack, j.ID, j.Lease)
		if err == nil {
			n, err := res.RowsAffected()
			if err != nil || n == 1 || !unsure {
				return n == 1, err
			}
			// A DELETE before this one may have removed the row: it did if
			// the row is gone (a new row's id is drawn at random, so not
			// this one), not if it is still there under another lease.
			var left int64
			if err := r.db.QueryRowContext(ctx, r.sql.exists, j.ID).Scan(&left); err != nil {
				return false, err
			}
			return left == 0, nil
		}
		if !retryable(err) || ctx.Err() != nil {
			return false, fmt.Errorf("worker: ack of task %d: %w", j.ID, err)
		}
		unsure = unsure || driver.IsMaybeCommitted(err)
		r.report(err)
		b.sleep(ctx)
	}
}

// exec runs one of the worker's UPDATEs (extend, release), again after a
// retryable error: running either twice under the same lease does what
// running it once does.
func (r *run) exec(query string, args ...any) (int64, error) {
	ctx, cancel := context.WithTimeout(r.base, r.opTimeout())
	defer cancel()
	for b := (backoff{}); ; {
		res, err := r.db.ExecContext(ctx, query, args...)
		if err == nil {
			return res.RowsAffected()
		}
		if !retryable(err) || ctx.Err() != nil {
			err = fmt.Errorf("worker: %s: %w", strings.Fields(query)[0], err)
			r.report(err)
			return 0, err
		}
		r.report(err)
		b.sleep(ctx)
	}
}

// opTimeout bounds a statement of the worker with its retries: past a
// lease, the lease it names is likely gone anyway.
func (r *run) opTimeout() time.Duration { return max(r.cfg.Lease, 5*time.Second) }

func retryable(err error) bool {
	return driver.IsRetryable(err) || driver.IsMaybeCommitted(err)
}

// backoff sleeps 10 ms, 20 ms, ... up to 1 s between retries.
type backoff struct{ d time.Duration }

func (b *backoff) sleep(ctx context.Context) {
	b.d = min(max(2*b.d, 10*time.Millisecond), time.Second)
	t := time.NewTimer(b.d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// errorText is err's message for _error: valid UTF-8, cut to
// MaxErrorSize bytes at a character boundary.
func errorText(err error) string {
	s := strings.ToValidUTF8(err.Error(), "\uFFFD")
	if len(s) <= MaxErrorSize {
		return s
	}
	i := MaxErrorSize
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}
