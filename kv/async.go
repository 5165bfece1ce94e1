package kv

// Reads in flight together: futures, and the functions that issue them. The
// package doc ("Reads in flight together") states their contract;
// kvtest's Async tests pin it on every engine.

// Future is a read that was issued and may not be answered yet (GetAsync,
// GetRangeAsync). Get waits for the answer if it is not in yet and returns
// it, or the read's error; called again, it returns the same, unless the
// transaction ended meanwhile. A future belongs to the transaction attempt
// that issued it, like an iterator: it is not safe for concurrent use, and
// must not outlive the transaction function.
type Future[T any] interface {
	// Get returns the read's result, waiting for it if need be.
	Get() (T, error)
}

// FutureValue is a point read's future: the key's value, nil if the key is
// absent, as Get returns it.
type FutureValue = Future[[]byte]

// FutureRange is a range read's future: every key-value the read returns,
// in its order, honouring RangeOptions.Limit and Reverse, as Collect of
// GetRange returns them.
type FutureRange = Future[[]KeyValue]

// getAsyncer is implemented by transactions (and their snapshot views)
// that issue a point read without waiting for it. It must behave exactly as
// the package doc's "Reads in flight together" says.
type getAsyncer interface {
	GetAsync(key []byte) FutureValue
}

// getRangeAsyncer is getAsyncer for range reads.
type getRangeAsyncer interface {
	GetRangeAsync(r Range, opts RangeOptions) FutureRange
}

// answersAtIssue is implemented by transactions (and their snapshot views,
// and the wrappers that read through them) that answer every read when it
// is issued, as the embedded engine does.
type answersAtIssue interface {
	AnswersAtIssue() bool
}

// AnswersAtIssue reports whether tr answers a read when it is issued: its
// futures wait for nothing, and reads issued together save nothing. A
// caller that keeps a read's answer itself may then make the synchronous
// read where it would issue a future, and spare the future: it is the
// same read (see the package doc, "Reads in flight together"), with the
// same result and read conflict, but the answer it keeps stays after the
// transaction ends, where a future's Get would fail.
func AnswersAtIssue(tr ReadTransaction) bool {
	a, ok := tr.(answersAtIssue)
	return ok && a.AnswersAtIssue()
}

// WriteConflictRangeSupport says whether a transaction takes a write
// conflict range of its own (AddWriteConflictRange), and whether anything
// that writes its database does.
type WriteConflictRangeSupport uint8

const (
	// WriteConflictRangesUnknown: the transaction takes none, and other
	// writers of its database may (a wrapper that does not say, a
	// kv/remote server whose engine takes none).
	WriteConflictRangesUnknown WriteConflictRangeSupport = iota
	// WriteConflictRangesTaken: the transaction takes them (the
	// embedded engine's, and kv/remote's of a server of one), and a
	// snapshot view says what its transaction does.
	WriteConflictRangesTaken
	// WriteConflictRangesNever: neither the transaction nor any writer of
	// its database takes them, so nothing written with one is there:
	// FoundationDB's adapter, whose databases only it writes.
	WriteConflictRangesNever
)

// writeConflictRanges is implemented by the transactions, and their
// snapshot views, that say what WriteConflictRangeSupport they have, and
// by the wrappers that read or write through one (their transaction's).
type writeConflictRanges interface {
	WriteConflictRanges() WriteConflictRangeSupport
}

// writeConflictRanger is implemented by the transactions that may take a
// write conflict range.
type writeConflictRanger interface {
	writeConflictRanges
	AddWriteConflictRange(r Range) error
}

// WriteConflictRangesOf returns tr's WriteConflictRangeSupport:
// WriteConflictRangesUnknown if tr does not say.
func WriteConflictRangesOf(tr ReadTransaction) WriteConflictRangeSupport {
	if w, ok := tr.(writeConflictRanges); ok {
		return w.WriteConflictRanges()
	}
	return WriteConflictRangesUnknown
}

// CanAddWriteConflictRange reports whether AddWriteConflictRange works
// on tr (if tr is a Transaction; else on the transaction it is a view
// of): WriteConflictRangesTaken.
func CanAddWriteConflictRange(tr ReadTransaction) bool {
	return WriteConflictRangesOf(tr) == WriteConflictRangesTaken
}

// AddWriteConflictRange makes the transactions that read in r conflict
// with tr, as if tr had written every key in r, on a transaction for
// which CanAddWriteConflictRange reports true; elsewhere it adds nothing
// and fails with client_invalid_operation.
func AddWriteConflictRange(tr Transaction, r Range) error {
	w, ok := tr.(writeConflictRanger)
	if !ok || w.WriteConflictRanges() != WriteConflictRangesTaken {
		return Errorf(CodeClientInvalidOperation, "this engine takes no write conflict range")
	}
	return w.AddWriteConflictRange(r)
}

// GetAsync issues a read of key's value now and returns its future (see the
// package doc, "Reads in flight together"). On a transaction that cannot
// issue reads without waiting, the read is made now, and the future is
// already answered.
func GetAsync(tr ReadTransaction, key []byte) FutureValue {
	if g, ok := tr.(getAsyncer); ok {
		return g.GetAsync(key)
	}
	v, err := tr.Get(key)
	return answered(v, err)
}

// GetRangeAsync issues a range read now and returns the future of its whole
// result (see the package doc, "Reads in flight together"). On a
// transaction that cannot issue reads without waiting, the read is made
// now, and the future is already answered.
func GetRangeAsync(tr ReadTransaction, r Range, opts RangeOptions) FutureRange {
	if g, ok := tr.(getRangeAsyncer); ok {
		return g.GetRangeAsync(r, opts)
	}
	kvs, err := Collect(tr.GetRange(r, opts))
	return answered(kvs, err)
}

// ready is a future answered when it was made.
type ready[T any] struct {
	v   T
	err error
}

func (r *ready[T]) Get() (T, error) { return r.v, r.err }

// answered returns a future answered with v, or with err and the zero T.
func answered[T any](v T, err error) Future[T] {
	if err != nil {
		var zero T
		return &ready[T]{v: zero, err: err}
	}
	return &ready[T]{v: v}
}
