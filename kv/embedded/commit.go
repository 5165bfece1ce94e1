// Commit: size limits, preparing the batch, and waiting for the commitGroups
// (groups.go) to check it and apply it (memory) or hand it to the log (file).

package embedded

import (
	"github.com/fdbqueue/fdbqueue/kv"
)

func (t *txn) hasWrites() bool {
	return len(t.pending) > 0 || (t.writes != nil && t.writes.Len() > 0) || t.clears.len() > 0 || len(t.wconf) > 0
}

// batch returns the transaction's mutations as a batch (record.go), its
// writes sorted once here if no read needed them sorted before. Its
// records are not built yet (prebuild): the size limit is checked first.
// The batch is the buffers' (txnBufs), no one's once the transaction
// ends.
func (t *txn) batch() *batch {
	b := &t.buffers().batch
	*b = batch{clears: t.clears.ranges(), writes: t.sortedWrites(), bump: t.bumped}
	return b
}

// Commit implements kv.Transaction.
func (t *txn) Commit() error {
	err := t.commit()
	t.settleWatches(err)
	return err
}

func (t *txn) commit() error {
	now, err := t.checkNow()
	if err != nil {
		return err
	}
	if t.err != nil {
		return t.err
	}
	if !t.hasWrites() {
		// A read-only transaction commits trivially, as on FoundationDB;
		// its buffers (its read conflicts', GetMany's) go back to the pool.
		t.finish(kv.TxnCommitted)
		t.release()
		return nil
	}
	if t.readOnly {
		return ErrReadOnly
	}
	// The batch first: sorting the writes folds the writes to one key
	// into one, which the size counts once.
	b := t.batch()
	if t.size > kv.MaxTransactionSize {
		return kv.Errorf(kv.CodeTransactionTooLarge, "transaction of %d bytes (limit %d)", t.size, kv.MaxTransactionSize)
	}
	s := t.s
	reportUnknown := false
	if s.faults != nil {
		var err error
		if reportUnknown, err = s.faults.before(t.ctx); err != nil {
			return err
		}
		now = s.cfg.Clock() // after the injected latency
	}
	// Its records written ahead only once it is known to fit: a refused
	// transaction of any size copies nothing into slabs.
	if len(b.writes) > 0 {
		b.pre = s.prebuild(b, t.buffers())
	}
	// Everything that does not need the store's lock is done here, so
	// that the lock is held only to check and install.
	// The clock as check read it, without faults: the batch reads
	// none, and a clock reading is 80 ns on a virtual machine.
	t.creq = commitReq{t: t, b: b, writes: t.record(b), now: now}
	r := &t.creq
	if len(t.reads) > 0 && s.version.Load() > t.rv {
		// Commits landed since the read version: the check will need
		// the merged read spans.
		r.reads = mergeSpans(t.reads)
	}
	s.settle(r)
	if r.err != nil {
		// Refused before it went into the history (settleLocked): its
		// record is no one's.
		r.writes.release()
		s.discard(b.pre)
		return r.err
	}
	if r.wait != nil {
		if t.queued != nil {
			t.queued()
		}
		// File: write the log here if no one else is (wal.lead).
		s.log.lead()
		if err := <-r.wait; err != nil {
			return err
		}
	}
	t.finish(kv.TxnCommitted)
	t.cver = r.writes.ver // release forgets creq
	if len(b.clears) > 0 {
		s.awaitTombs(s.version.Load())
	}
	if !reportUnknown {
		// Applied (and, on file, written): the buffers are no one's.
		// A commit reported unknown stays as it was, for OnError.
		t.release()
	}
	return t.injectedUnknown(reportUnknown)
}

// injectedUnknown reports commit_unknown_result for a commit that was
// applied, when a fault says so. The transaction is reset, as after any
// failed commit, so that OnError can retry it.
func (t *txn) injectedUnknown(report bool) error {
	if !report {
		return nil
	}
	t.state = kv.TxnActive
	return kv.Errorf(kv.CodeCommitUnknownResult, "injected: applied")
}

// CommittedAlone reports, once the transaction committed writes, the
// version of its commit, and whether it was the only commit since the
// transaction's read version: commits take consecutive versions, so the
// database at that version is what the transaction read with its own
// writes applied. queues' attempts of several pops hand what they read on
// to the next attempt on that condition (queues/firsts.go).
func (t *txn) CommittedAlone() (int64, bool) {
	if t.state != kv.TxnCommitted || t.cver == 0 {
		return 0, false
	}
	v := t.cver
	return int64(v), v == t.rv+1
}
