package fdbmodel

import (
	"context"

	"github.com/fdbqueue/fdbqueue/kv"
)

// txn is a transaction on the modeled cluster: the wrapped engine's
// transaction (in) does the work; the attempt counts what it costs.
type txn struct {
	db   *DB
	in   kv.Transaction
	ctx  context.Context
	col  *Collector // nil: nobody collects
	snap *snapshot

	a        *attempt
	reported bool // a's counts went to col
	state    kv.TxnState
	// spans are the read-conflict ranges of the attempt's serializable
	// range reads, as far as they were consumed, added at Commit: range
	// reads go through the engine's snapshot view, so that the batches
	// read ahead conflict no more than the FoundationDB engine's reads do
	// (it does the same, see kv/fdb's iter.go).
	spans []*readSpan
	// pending are the attempt's range futures that may not be resolved
	// yet (async.go).
	pending []*rangeFuture
}

var _ kv.Transaction = (*txn)(nil)

// readSpan is a serializable range read's read-conflict range so far.
type readSpan struct{ begin, end []byte }

func (t *txn) newAttempt() {
	t.a = newAttempt(t.db)
	t.reported = false
	t.spans, t.pending = nil, nil
	if t.db.sleepFn != nil {
		// The engine takes its read version when the modeled one
		// arrives, so that timed runs conflict as the cluster would.
		in := t.in
		t.a.pin = func() { _, _ = in.GetReadVersion() }
	}
}

// report hands the attempt's counts to the collector, once, if it did
// anything.
func (t *txn) report() {
	if t.reported || !t.a.used {
		return
	}
	t.reported = true
	if t.col != nil {
		t.col.add(t.a.ended())
	}
}

// check returns the error that stops an iterator's Next (which reads
// ahead, so the engine below may not see it): the FoundationDB engine's.
func (t *txn) check() error {
	return t.state.Err(t.ctx)
}

// view is the engine's transaction, or its snapshot view.
func (t *txn) view(snapshot bool) kv.ReadTransaction {
	if snapshot {
		return t.in.Snapshot()
	}
	return t.in
}

func (t *txn) Context() context.Context     { return t.ctx }
func (t *txn) Snapshot() kv.ReadTransaction { return t.snap }

// Get costs a read wait unless the cache knows key.
func (t *txn) Get(key []byte) ([]byte, error) { return t.get(key, false) }

func (t *txn) get(key []byte, snapshot bool) ([]byte, error) {
	return t.getAsync(key, snapshot).Get()
}

// GetMany is kv.GetMany: the keys the cache does not know are read
// together, one wait, as the FoundationDB engine issues every read before
// it waits for one.
func (t *txn) GetMany(keys [][]byte) ([][]byte, error) { return t.getMany(keys, false) }

func (t *txn) getMany(keys [][]byte, snapshot bool) ([][]byte, error) {
	a := t.a
	a.used = true
	a.settle()
	ready, sent := a.now, false
	for _, k := range keys {
		if a.known.has(string(k)) {
			a.c.Cached++
			continue
		}
		if !sent {
			sent, ready = true, a.issue()
			a.c.GetManys++
		}
		a.c.GetManyKeys++
		a.fills = append(a.fills, fill{span{string(k), keyAfter(string(k))}, ready})
	}
	a.wait(ready, sent)
	return kv.GetMany(t.view(snapshot), keys)
}

func (t *txn) GetRange(r kv.Range, opts kv.RangeOptions) kv.Iterator {
	return t.getRange(r, opts, false)
}

// GetReadVersion waits for the read version, if no request did yet.
func (t *txn) GetReadVersion() (int64, error) {
	a := t.a
	a.used = true
	a.askGRV()
	a.await(a.grvReady, waitGRV)
	return t.in.GetReadVersion()
}

// The writes make their keys known (not the atomic operations: reading
// such a key needs its value from the cluster) and the commit a real one.
// Each first waits for the range futures in flight over its keys, as
// kv/fdb's do (settle).

func (t *txn) Set(key, value []byte) {
	t.settle(key, nil)
	t.a.write(string(key), keyAfter(string(key)))
	t.in.Set(key, value)
}

func (t *txn) Clear(key []byte) {
	t.settle(key, nil)
	t.a.write(string(key), keyAfter(string(key)))
	t.in.Clear(key)
}

func (t *txn) ClearRange(r kv.Range) {
	t.settle(r.Begin, r.End)
	t.a.write(string(r.Begin), string(r.End))
	t.in.ClearRange(r)
}

func (t *txn) Add(key []byte, delta int64) {
	t.settle(key, nil)
	t.a.write("", "")
	t.in.Add(key, delta)
}

func (t *txn) BitAnd(key, param []byte) {
	t.settle(key, nil)
	t.a.write("", "")
	t.in.BitAnd(key, param)
}

func (t *txn) CompareAndClear(key, value []byte) {
	t.settle(key, nil)
	t.a.write("", "")
	t.in.CompareAndClear(key, value)
}

func (t *txn) AddReadConflictKey(key []byte) error {
	t.a.used = true
	return t.in.AddReadConflictKey(key)
}

func (t *txn) AddReadConflictRange(r kv.Range) error {
	t.a.used = true
	return t.in.AddReadConflictRange(r)
}

// AddWriteConflictKey makes the commit a real one, as a write does.
func (t *txn) AddWriteConflictKey(key []byte) error {
	t.a.write("", "")
	return t.in.AddWriteConflictKey(key)
}

// Watch reads key, unless the cache knows it: the commit waits for that
// read.
func (t *txn) Watch(key []byte) kv.Watch {
	if _, sent := t.a.fetch(string(key), keyAfter(string(key))); sent {
		t.a.c.Gets++
	}
	return t.in.Watch(key)
}

// Commit resolves the serializable range futures not waited for (their
// conflicts are their results'), waits for the reads in flight, then costs
// a commit wait if the attempt wrote (and a GRV wait if it read nothing); a
// read-only commit is free.
func (t *txn) Commit() error {
	if t.state != kv.TxnActive {
		return t.in.Commit() // the engine's error
	}
	a := t.a
	if t.check() == nil {
		// As kv/fdb, which fails at once when the context is done.
		t.resolvePending()
	}
	send := a.beforeCommit()
	for _, s := range t.spans {
		if string(s.begin) < string(s.end) {
			if err := t.in.AddReadConflictRange(kv.Range{Begin: s.begin, End: s.end}); err != nil {
				t.report()
				return err
			}
		}
	}
	t.spans = nil
	var err error
	if send {
		err = a.commit(t.in.Commit)
	} else {
		err = t.in.Commit()
	}
	if err == nil {
		t.state = kv.TxnCommitted
	}
	t.report()
	return err
}

func (t *txn) Cancel() {
	t.report()
	if t.state == kv.TxnActive {
		t.state = kv.TxnCancelled
	}
	t.pending = nil
	t.in.Cancel()
}

// OnError ends the attempt; a retry starts a new one, with nothing known
// and a new read version.
func (t *txn) OnError(err error) error {
	t.report()
	if e := t.in.OnError(err); e != nil {
		return e
	}
	t.newAttempt()
	return nil
}

// snapshot is the transaction's snapshot view: reads cost the same, and
// share the cache.
type snapshot struct{ t *txn }

func (s *snapshot) Get(key []byte) ([]byte, error)          { return s.t.get(key, true) }
func (s *snapshot) GetMany(keys [][]byte) ([][]byte, error) { return s.t.getMany(keys, true) }

func (s *snapshot) GetRange(r kv.Range, opts kv.RangeOptions) kv.Iterator {
	return s.t.getRange(r, opts, true)
}

func (s *snapshot) GetReadVersion() (int64, error) { return s.t.GetReadVersion() }
func (s *snapshot) Snapshot() kv.ReadTransaction   { return s }
func (s *snapshot) Context() context.Context       { return s.t.ctx }

// WriteConflictRanges implements kv.WriteConflictRangesOf as
// FoundationDB's adapter does: never.
func (t *txn) WriteConflictRanges() kv.WriteConflictRangeSupport {
	return kv.WriteConflictRangesNever
}

func (s *snapshot) WriteConflictRanges() kv.WriteConflictRangeSupport {
	return kv.WriteConflictRangesNever
}
