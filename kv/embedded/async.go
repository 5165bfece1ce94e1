// Futures (kv.GetAsync, kv.GetRangeAsync): the embedded engine answers a
// read when it is issued, by the synchronous read's own path, so its result
// and its read conflict are that read's by construction.

package embedded

import "github.com/fdbqueue/fdbqueue/kv"

var (
	_ kv.FutureValue = (*valueFuture)(nil)
	_ kv.FutureRange = (*rangeFuture)(nil)
)

// valueFuture is a point read, answered when it was issued.
type valueFuture struct {
	t       *txn
	attempt uint64 // t.attempt when issued
	v       []byte
	err     error // the read's
}

// rangeFuture is a range read, answered when it was issued.
type rangeFuture struct {
	t       *txn
	attempt uint64
	rows    []kv.KeyValue
	err     error
	// one holds the row of a read of one row, which then needs no slice
	// of its own.
	one [1]kv.KeyValue
}

// GetAsync is kv.GetAsync: Get, now.
func (t *txn) GetAsync(key []byte) kv.FutureValue { return t.getAsync(key, false) }

// GetRangeAsync is kv.GetRangeAsync: GetRange, read to its end now.
func (t *txn) GetRangeAsync(r kv.Range, opts kv.RangeOptions) kv.FutureRange {
	return t.getRangeAsync(r, opts, false)
}

func (t *txn) getAsync(key []byte, snapshot bool) kv.FutureValue {
	f := carve(&t.vfutures, &t.issued)
	f.t, f.attempt = t, t.attempt
	f.v, f.err = t.get(key, snapshot)
	return f
}

func (t *txn) getRangeAsync(r kv.Range, opts kv.RangeOptions, snapshot bool) kv.FutureRange {
	f := carve(&t.rfutures, &t.issued)
	f.t, f.attempt = t, t.attempt
	if opts.Limit == 1 {
		// A queue's head: First's path, without an iterator when it can.
		e, ok, err := t.first(r, opts.Reverse, snapshot)
		if ok {
			f.one[0] = e
			f.rows = f.one[:]
		}
		f.err = err
		return f
	}
	it := newRangeIter(t, r, opts, snapshot)
	for it.Next() {
		f.rows = append(f.rows, it.KeyValue())
	}
	if f.err = it.Err(); f.err != nil {
		f.rows = nil
	}
	return f
}

// futureBlock is the most futures one allocation holds.
const futureBlock = 32

// carve returns a new future from what is left of block, allocating a block
// when none is: a read issued as a future then costs no more allocations
// than the synchronous read (BenchmarkReads). Blocks grow with the futures
// a transaction issued, and are never reused: a future keeps its block
// alive after the transaction is reset.
func carve[F any](block *[]F, issued *int) *F {
	if len(*block) == 0 {
		*block = make([]F, min(max(*issued, 2), futureBlock))
	}
	*issued++
	f := &(*block)[0]
	*block = (*block)[1:]
	return f
}

// Get is kv.Future's: the read's error, or its value while the attempt
// that issued it lasts.
func (f *valueFuture) Get() ([]byte, error) {
	if f.err != nil {
		return nil, f.err
	}
	if err := f.t.live(f.attempt); err != nil {
		return nil, err
	}
	return f.v, nil
}

// Get is kv.Future's: the read's error, or its rows while the attempt that
// issued it lasts.
func (f *rangeFuture) Get() ([]kv.KeyValue, error) {
	if f.err != nil {
		return nil, f.err
	}
	if err := f.t.live(f.attempt); err != nil {
		return nil, err
	}
	return f.rows, nil
}

// live returns the error of a future of attempt once that attempt is over:
// the transaction ended, its context is done, or OnError reset it.
func (t *txn) live(attempt uint64) error {
	if err := t.ended(); err != nil {
		return err
	}
	if attempt != t.attempt {
		return kv.Errorf(kv.CodeTransactionCancelled, "the future's attempt of the transaction was reset (OnError)")
	}
	return nil
}
