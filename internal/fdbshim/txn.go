//go:build fdb

// A transaction's life as the real client runs it (ReadYourWrites.actor.cpp,
// NativeAPI.actor.cpp, ThreadSafeTransaction.cpp): options and the ones that
// persist across retries, the timeout measured from creation, the retry
// limit and on_error's backoff, cancellation, and the "reset promise" that
// fails every outstanding and later operation of an attempt.

package fdbshim

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
)

// Transaction option codes (fdb.options).
const (
	trTimeout       = 500
	trRetryLimit    = 501
	trMaxRetryDelay = 502
)

// The client's knobs (ClientKnobs.cpp).
const (
	defaultBackoff                = 10 * time.Millisecond // DEFAULT_BACKOFF
	defaultMaxBackoff             = time.Second           // DEFAULT_MAX_BACKOFF
	resourceConstrainedMaxBackoff = 30 * time.Second      // RESOURCE_CONSTRAINED_MAX_BACKOFF
	futureVersionRetryDelay       = 10 * time.Millisecond // FUTURE_VERSION_RETRY_DELAY
)

// txnOptions are a transaction's options that change what the test double
// does; the others are accepted and ignored, or refused (optionClass).
type txnOptions struct {
	timeout    time.Duration // 0: none
	maxRetries int           // -1: no limit (FoundationDB's default)
	maxBackoff time.Duration
}

func defaultTxnOptions() txnOptions {
	return txnOptions{maxRetries: -1, maxBackoff: defaultMaxBackoff}
}

type optionClass int

const (
	optUnknown     optionClass = iota
	optIgnored                 // accepted; no observable effect to reproduce
	optPersistent              // timeout, retry_limit, max_retry_delay
	optUnsupported             // semantics the test double lacks: a deferred 2108
)

func txnOptionClass(code int) optionClass {
	switch code {
	case trTimeout, trRetryLimit, trMaxRetryDelay:
		return optPersistent
	case 10, 20, 21, 23, 40, 50, 52, 110, 120, 130, 200, 201, 300, 304, 400, 401, 402, 403, 404, 405, 406,
		507, 508, 509, 510, 511, 600, 700, 702, 710, 711, 800, 801, 900, 1000, 1100, 1101, 1102, 2000:
		// Causality and durability hints, priorities, tags, tracing,
		// logging, caches, lock awareness, authorization: nothing to do
		// without servers. snapshot_ryw_enable (600) is the default.
		return optIgnored
	case 30, 51, 301, 302, 303, 503, 504, 505, 601, 701, 712, 713, 714:
		// next_write_no_write_conflict_range, read_your_writes_disable,
		// system keys and raw access, size_limit, idempotency ids,
		// snapshot_ryw_disable, used_during_commit_protection_disable,
		// conflicting keys and the special key space.
		return optUnsupported
	}
	return optUnknown
}

// validTxnOption checks a persistent option's value as the real client does.
func validTxnOption(code int, value []byte) (int64, bool) {
	switch code {
	case trTimeout, trMaxRetryDelay:
		return intOption(value, 0, math.MaxInt32)
	case trRetryLimit:
		return intOption(value, -1, math.MaxInt32)
	}
	return 0, false
}

// txn is an FDBTransaction.
type txn struct {
	space keyspace

	// mu guards the fields below, and the current attempt's fields that
	// say "guarded by t.mu". Lock order: t.mu, then the database's mu.
	mu         sync.Mutex
	created    time.Time     // the timeout counts from here; only reset() moves it
	retries    int           // on_error calls since creation or reset()
	backoff    time.Duration // the next backoff's ceiling; only reset() restores it
	persistent []option      // options re-applied to every attempt
	opts       txnOptions
	a          *attempt
	toFail     []failure // for unlock
}

func newTxn(space keyspace) *txn {
	defaults, _ := space.db.snapshot()
	t := &txn{space: space, created: time.Now(), backoff: defaultBackoff, persistent: defaults}
	t.mu.Lock()
	t.a = t.newAttemptLocked()
	t.unlock()
	return t
}

// attempt is one try of a transaction: what RYW's resetRyow starts afresh
// (writes, read cache, conflict ranges, outstanding operations), backed by
// one transaction of the embedded engine.
type attempt struct {
	t    *txn
	exec executor

	// Guarded by t.mu.
	resetErr      int           // FoundationDB's resetPromise: once set, the attempt is over
	done          chan struct{} // closed when resetErr is set
	deferred      int           // the first error of an operation that returns none
	commitStarted bool
	wrote         bool
	size          int64
	outstanding   map[*future]struct{}
	timer         *time.Timer
	watches       []*watch

	// Used only by the executor's goroutine (but clock's C side).
	clock         *clock // nil for an unreachable cluster
	etx           kv.Transaction
	cache         readCache
	readConflicts []kv.Range // explicit ones and the cache's, for the commit
	// bumped is set once the attempt bumped the metadata version, and
	// readErr is the error of a read that fails the commit too
	// (metadata.go).
	bumped  bool
	readErr int
}

func (t *txn) newAttemptLocked() *attempt {
	a := &attempt{t: t, done: make(chan struct{}), outstanding: map[*future]struct{}{}, clock: newClock(t.space.db.cl)}
	a.cache.init()
	t.opts = defaultTxnOptions()
	// As applyPersistentOptions: the last timeout set wins, applied last.
	var timeout *option
	for i := range t.persistent {
		o := &t.persistent[i]
		if o.code == trTimeout {
			timeout = o
			continue
		}
		t.applyOptionLocked(a, o.code, o.value)
	}
	if timeout != nil {
		t.applyOptionLocked(a, timeout.code, timeout.value)
	}
	return a
}

// applyOptionLocked applies a persistent option to attempt a; an invalid
// value becomes a's deferred error.
func (t *txn) applyOptionLocked(a *attempt, code int, value []byte) bool {
	n, ok := validTxnOption(code, value)
	if !ok {
		if a.deferred == 0 {
			a.deferred = errInvalidOptionValue
		}
		return false
	}
	switch code {
	case trTimeout:
		t.opts.timeout = time.Duration(n) * time.Millisecond
		t.armTimeoutLocked(a)
	case trRetryLimit:
		t.opts.maxRetries = int(n)
	case trMaxRetryDelay:
		t.opts.maxBackoff = time.Duration(n) * time.Millisecond
	}
	return true
}

// armTimeoutLocked sets a's time bomb: the timeout counts from the
// transaction's creation, not from now, and not from the last on_error.
func (t *txn) armTimeoutLocked(a *attempt) {
	if a.timer != nil {
		a.timer.Stop()
		a.timer = nil
	}
	if t.opts.timeout <= 0 {
		return
	}
	d := time.Until(t.created.Add(t.opts.timeout))
	if d <= 0 {
		// Already past: the time bomb goes off at once, before the
		// operations issued after the option.
		t.killLocked(a, errTransactionTimedOut)
		return
	}
	a.timer = time.AfterFunc(d, func() { t.kill(a, errTransactionTimedOut) })
}

// setOption is fdb_transaction_set_option: an unknown option fails at once,
// anything else is applied in order with the transaction's operations, its
// errors deferred.
func (t *txn) setOption(code int, value []byte) int {
	class := txnOptionClass(code)
	if class == optUnknown {
		return errInvalidOption
	}
	t.mu.Lock()
	defer t.unlock()
	a := t.a
	if a.deferred != 0 {
		return 0 // the real client skips operations after a deferred error
	}
	switch class {
	case optUnsupported:
		a.deferred = errUnsupportedOperation
	case optPersistent:
		if t.applyOptionLocked(a, code, value) {
			t.persistent = append(t.persistent, option{code: code, value: append([]byte(nil), value...)})
		}
	}
	return 0
}

// kill ends attempt a with code (FoundationDB's resetPromise.sendError):
// every outstanding future fails with code now, and so does every later
// operation until the transaction is reset (on_error or reset).
func (t *txn) kill(a *attempt, code int) {
	t.mu.Lock()
	t.killLocked(a, code)
	t.unlock()
}

// killLocked ends a; the futures it fails are failed by unlock.
func (t *txn) killLocked(a *attempt, code int) {
	if a.resetErr != 0 {
		return
	}
	a.resetErr = code
	close(a.done)
	if a.timer != nil {
		a.timer.Stop()
	}
	for f := range a.outstanding {
		f.ref()
		t.toFail = append(t.toFail, failure{f: f, code: code})
	}
	clear(a.outstanding)
	for _, w := range a.watches {
		// Never to be committed: drop the producer's reference.
		t.space.db.uncountWatch()
		t.toFail = append(t.toFail, failure{f: w.f})
	}
	a.watches = nil
}

// failure is a future to fail (or, with code 0, only to release) once t.mu
// is unlocked: completing a future runs callbacks.
type failure struct {
	f    *future
	code int
}

// unlock unlocks t.mu, then fails the futures the attempts ended meanwhile.
func (t *txn) unlock() {
	fs := t.toFail
	t.toFail = nil
	t.mu.Unlock()
	for _, x := range fs {
		if x.code != 0 {
			x.f.fail(x.code)
		}
		x.f.done()
	}
}

// checkLocked returns the error an operation issued now fails with, in the
// real client's order: a deferred error, used_during_commit (which also
// ends the attempt: killCommit), the attempt's reset error.
func (t *txn) checkLocked(a *attempt) (code int, killCommit bool) {
	if d := t.space.db.deferredErr(); d != 0 {
		return d, false
	}
	if a.deferred != 0 {
		return a.deferred, false
	}
	if a.commitStarted {
		return errUsedDuringCommit, a.resetErr == 0
	}
	return a.resetErr, false
}

// issue starts an operation that returns future f: if the checks pass, op
// runs on the attempt's executor, in issue order, and must end with
// a.finish(f, ...).
func (t *txn) issue(f *future, op func(a *attempt)) {
	t.mu.Lock()
	a := t.a
	code, killCommit := t.checkLocked(a)
	if code == 0 {
		a.outstanding[f] = struct{}{}
		f.issued = a.clock.now()
		a.exec.run(func() { op(a) })
	}
	t.unlock()
	if killCommit {
		t.kill(a, errUsedDuringCommit)
	}
	if code != 0 {
		f.fail(code)
		f.done()
	}
}

// mutate starts an operation that returns nothing: code, computed from the
// arguments, becomes the deferred error; otherwise op (if any) runs on the
// executor. size is the operation's share of the transaction's size.
func (t *txn) mutate(code int, size int64, op func(a *attempt)) {
	t.mutateAs(code, size, op, true)
}

// mutateAs is mutate; write says whether the operation makes the commit go
// to the cluster (a read conflict range does not: a commit without
// mutations or write conflicts is read-only).
func (t *txn) mutateAs(code int, size int64, op func(a *attempt), write bool) {
	t.mu.Lock()
	a := t.a
	killCommit := false
	switch {
	case a.deferred != 0:
		// Skipped, as the real client skips it.
	case a.commitStarted:
		a.deferred = errUsedDuringCommit
		killCommit = a.resetErr == 0
	case code != 0:
		a.deferred = code
	case a.resetErr != 0 || op == nil:
		// Cancelled or timed out (nothing will commit), or nothing to do.
	default:
		a.wrote = a.wrote || write
		a.size += size
		a.exec.run(func() { op(a) })
	}
	t.unlock()
	if killCommit {
		t.kill(a, errUsedDuringCommit)
	}
}

// finish completes an operation's future, unless the attempt's end already
// failed it, and drops the producer's reference.
func (a *attempt) finish(f *future, complete func()) {
	a.t.mu.Lock()
	_, mine := a.outstanding[f]
	delete(a.outstanding, f)
	a.t.unlock()
	if mine && complete != nil {
		complete()
	}
	f.done()
}

// finishErr completes f with code, or with ok() when code is 0.
func (a *attempt) finishErr(f *future, code int, ok func()) {
	if code != 0 {
		a.finish(f, func() { f.fail(code) })
		return
	}
	a.finish(f, ok)
}

func (a *attempt) dead() bool {
	select {
	case <-a.done:
		return true
	default:
		return false
	}
}

// tx returns the attempt's transaction in the embedded engine, created on
// first use, or the code the operation fails with (a missing tenant). On an
// unreachable cluster it waits for the attempt's end, as every request to
// such a cluster waits until the transaction is cancelled or times out.
func (a *attempt) tx() (kv.Transaction, int) {
	if a.etx != nil {
		return a.etx, 0
	}
	db, code := a.t.space.store()
	if code != 0 {
		return nil, code
	}
	if db == nil {
		<-a.done
		return nil, errTransactionCancelled // the future already failed
	}
	etx, err := db.CreateTransaction(bgContext)
	if err != nil {
		return nil, codeOf(err)
	}
	a.etx = etx
	return etx, 0
}

// cancel is fdb_transaction_cancel.
func (t *txn) cancel() {
	t.mu.Lock()
	a := t.a
	t.unlock()
	t.kill(a, errTransactionCancelled)
}

// restartLocked is resetRyow: a new attempt with the persistent options;
// the old one ends with transaction_cancelled (the caller kills it after
// unlocking) and its engine transaction is cancelled once its queue drains.
func (t *txn) restartLocked() *attempt {
	old := t.a
	t.a = t.newAttemptLocked()
	old.exec.run(func() {
		if old.etx != nil {
			old.etx.Cancel()
		}
	})
	return old
}

// reset is fdb_transaction_reset: as new, with the database's defaults.
func (t *txn) reset() {
	defaults, _ := t.space.db.snapshot()
	t.mu.Lock()
	t.created = time.Now()
	t.retries = 0
	t.backoff = defaultBackoff
	t.persistent = defaults
	old := t.restartLocked()
	t.unlock()
	t.kill(old, errTransactionCancelled)
}

// destroy is fdb_transaction_destroy: outstanding operations fail with
// transaction_cancelled, as in the real client's destructor.
func (t *txn) destroy() {
	t.mu.Lock()
	a := t.a
	a.exec.run(func() {
		if a.etx != nil {
			a.etx.Cancel()
		}
	})
	t.unlock()
	t.kill(a, errTransactionCancelled)
}

// onError is fdb_transaction_on_error: RYW's onError around NativeAPI's.
func (t *txn) onError(code int) *future {
	f := newFuture(kindVoid)
	t.mu.Lock()
	a := t.a
	if reset := a.resetErr; reset != 0 {
		// Cancelled, timed out, used during commit: that error, not code.
		t.unlock()
		f.fail(reset)
		f.done()
		return f
	}
	limitHit := t.opts.maxRetries != -1 && t.retries >= t.opts.maxRetries
	if t.retries < math.MaxInt32 {
		t.retries++
	}
	var delay time.Duration
	retry := false
	if !limitHit {
		switch classify(code) {
		case retryBackoff:
			delay, retry = t.nextBackoffLocked(code), true
		case retryShort:
			delay, retry = min(futureVersionRetryDelay, t.opts.maxBackoff), true
		}
	}
	if !retry {
		// The error comes back, and the transaction is cancelled until
		// it is reset (API version 610 and later).
		t.unlock()
		t.kill(a, errTransactionCancelled)
		if code == 0 {
			code = errClientInvalidOperation
		}
		f.fail(code)
		f.done()
		return f
	}
	a.outstanding[f] = struct{}{}
	t.unlock()
	go func() {
		timer := time.NewTimer(delay)
		select {
		case <-timer.C:
		case <-a.done:
			// Cancelled or timed out during the backoff: f failed with it.
			timer.Stop()
			f.done()
			return
		}
		t.mu.Lock()
		if _, mine := a.outstanding[f]; !mine {
			t.unlock()
			f.done()
			return
		}
		delete(a.outstanding, f)
		old := t.restartLocked()
		t.unlock()
		t.kill(old, errTransactionCancelled)
		f.succeed()
		f.done()
	}()
	return f
}

// nextBackoffLocked is Transaction::getBackoff: a random wait up to the
// current backoff, which then doubles up to the maximum (30 s for the
// proxies' memory limits).
func (t *txn) nextBackoffLocked(code int) time.Duration {
	wait := time.Duration(rand.Float64() * float64(t.backoff))
	ceiling := t.opts.maxBackoff
	if code == errCommitProxyMemoryLimit || code == errGRVProxyMemoryLimit {
		ceiling = resourceConstrainedMaxBackoff
	}
	t.backoff = min(2*t.backoff, ceiling)
	return wait
}

// executor runs an attempt's operations one at a time, in the order they
// were issued, on a goroutine of its own: the real client runs a
// transaction's operations in order on its network thread. The goroutine
// exists while there is work.
type executor struct {
	mu      sync.Mutex // guards queue and running
	queue   []func()
	running bool
}

func (e *executor) run(f func()) {
	e.mu.Lock()
	e.queue = append(e.queue, f)
	start := !e.running
	e.running = true
	e.mu.Unlock()
	if start {
		go e.drain()
	}
}

func (e *executor) drain() {
	for {
		e.mu.Lock()
		if len(e.queue) == 0 {
			e.running = false
			e.mu.Unlock()
			return
		}
		f := e.queue[0]
		e.queue[0] = nil
		e.queue = e.queue[1:]
		e.mu.Unlock()
		f()
	}
}
