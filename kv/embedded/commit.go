// Commit: size limits, the conflict check, and applying the batch (memory)
// or handing it to the log (file).

package embedded

import (
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
)

func (t *txn) hasWrites() bool {
	return (t.writes != nil && t.writes.Len() > 0) || t.clears.len() > 0 || len(t.wconf) > 0
}

// Commit implements kv.Transaction.
func (t *txn) Commit() error {
	err := t.commit()
	t.settleWatches(err)
	return err
}

func (t *txn) commit() error {
	if err := t.check(); err != nil {
		return err
	}
	if t.err != nil {
		return t.err
	}
	if !t.hasWrites() {
		// A read-only transaction commits trivially, as on FoundationDB.
		t.finish(txnCommitted)
		return nil
	}
	if t.readOnly {
		return ErrReadOnly
	}
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
	}
	b := t.batch()
	writes := t.writeSpans(b)
	now := s.cfg.Clock()

	s.mu.Lock()
	if now.Sub(t.grvTime) > kv.MaxTransactionAge {
		s.mu.Unlock()
		return kv.Errorf(kv.CodeTransactionTooOld, "read version is %v old at commit", now.Sub(t.grvTime).Round(time.Millisecond))
	}
	// A failed log comes first: the history holds the versions of the
	// group whose write failed, never installed, and a conflict with one of
	// them would pass an I/O error off as a retryable conflict.
	if s.log != nil {
		if err := s.log.failure(); err != nil {
			s.mu.Unlock()
			return err
		}
	}
	if len(s.history) > 0 && s.history[len(s.history)-1].ver > t.rv && len(t.reads) > 0 {
		if s.conflictsLocked(t.rv, mergeSpans(t.reads)) {
			s.mu.Unlock()
			return kv.ErrNotCommitted
		}
	}
	s.nextVer++
	ver := s.nextVer
	s.history = append(s.history, commitRecord{ver: ver, writes: writes})
	if s.log == nil {
		// Memory: apply now.
		s.installLocked(now, ver, b)
		s.mu.Unlock()
		t.finish(txnCommitted)
		return t.injectedUnknown(reportUnknown)
	}
	// File: the log writer makes the batch durable with others (group
	// commit), then applies them in version order; readers never see a
	// version before it is durable.
	wait := s.log.enqueue(ver, b)
	s.mu.Unlock()
	err := <-wait
	if err != nil {
		return err
	}
	t.finish(txnCommitted)
	return t.injectedUnknown(reportUnknown)
}

// injectedUnknown reports commit_unknown_result for a commit that was
// applied, when a fault says so. The transaction is reset, as after any
// failed commit, so that OnError can retry it.
func (t *txn) injectedUnknown(report bool) error {
	if !report {
		return nil
	}
	t.state = txnActive
	return kv.Errorf(kv.CodeCommitUnknownResult, "injected: applied")
}
