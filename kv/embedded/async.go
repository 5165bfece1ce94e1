// Futures (kv.GetAsync, kv.GetRangeAsync): the embedded engine answers a
// read when it is issued, by the synchronous read's own path, so its result
// and its read conflict are that read's by construction.

package embedded

import (
	"slices"

	"github.com/fdbqueue/fdbqueue/kv"
)

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
	rows, err := t.collect(t.rows[:0], r, opts, snapshot)
	switch {
	case err != nil:
		f.err = err
	case len(rows) == 1:
		f.one[0] = rows[0]
		f.rows = f.one[:]
	case len(rows) > 1:
		f.rows = slices.Clone(rows)
	}
	clear(rows) // no slab memory kept alive by the scratch
	t.rows = rows[:0]
	return f
}

// collect is Collect of GetRange, appended to rows (the transaction's
// scratch, t.rows), which it returns with the read's error. When the
// transaction wrote nothing in r, there is nothing to merge: it reads the
// store's batches as the iterator would, checks what it checks, and
// records the same read conflict, without an iterator.
func (t *txn) collect(rows []kv.KeyValue, r kv.Range, opts kv.RangeOptions, snapshot bool) ([]kv.KeyValue, error) {
	if t.wroteIn(r) {
		it := newRangeIter(t, r, opts, snapshot)
		for it.Next() {
			rows = append(rows, it.KeyValue())
		}
		return rows, it.Err()
	}
	size, err := t.startRange(r, opts)
	if err != nil {
		return rows, err
	}
	begin, beginEx, end := r.Begin, false, r.End
	full := false // the limit stopped the read
	for {
		n := len(rows)
		var done bool
		rows, done = t.s.fetch(t.rv, begin, beginEx, end, opts.Reverse, n+size, rows, &t.eprobe)
		for i := n; i < len(rows); i++ {
			rows[i].Value = presence(rows[i].Value, true)
		}
		if opts.Limit > 0 && len(rows) >= opts.Limit {
			clear(rows[opts.Limit:])
			rows, full = rows[:opts.Limit], true
			break
		}
		if done || len(rows) == n {
			break
		}
		if last := rows[len(rows)-1].Key; opts.Reverse {
			end = last
		} else {
			begin, beginEx = last, true
		}
		size = min(2*size, maxBatch)
		// The next batch is checked as the iterator checks it; what was
		// read so far stays in the conflicts, as the iterator's span.
		if err := t.check(); err != nil {
			if !snapshot {
				t.reads = append(t.reads, readSpan(r, opts.Reverse, rows[len(rows)-1].Key))
			}
			return rows, err
		}
	}
	if !snapshot {
		// As the iterator records it: up to the last row when the limit
		// stopped the read, the whole range otherwise.
		if full {
			t.addRead(readSpan(r, opts.Reverse, rows[len(rows)-1].Key))
		} else {
			t.addRead(twoKeys(r.Begin, r.End))
		}
	}
	return rows, nil
}

// readSpan is the read conflict of a range read of r that returned last
// as its last row: from r's begin up to it, or from it to r's end in
// reverse.
func readSpan(r kv.Range, reverse bool, last []byte) span {
	if reverse {
		return span{begin: last, end: slices.Clone(r.End)}
	}
	return twoKeys(r.Begin, last, 0)
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
