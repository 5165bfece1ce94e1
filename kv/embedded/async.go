// Futures (kv.GetAsync, kv.GetRangeAsync): the embedded engine answers a
// read when it is issued (kv.AnswersAtIssue). A point read and a one-row
// range read take the synchronous read's own path, so their result and
// read conflict are that read's by construction; a longer range read
// takes the iterator's, or, when the transaction wrote nothing in its
// range, reads the store's batches as the iterator does, with its checks
// and its read conflict (collect; TestRangeFutureIsIteratorRead compares
// them).

package embedded

import (
	"slices"
	"sync"

	"github.com/fdbqueue/fdbqueue/kv"
)

var (
	_ kv.FutureValue = (*valueFuture)(nil)
	_ kv.FutureRange = (*rangeFuture)(nil)
	_ kv.FutureValue = (*failedFuture[[]byte])(nil)
	_ kv.FutureRange = (*failedFuture[[]kv.KeyValue])(nil)
)

// valueFuture is a point read, answered when it was issued.
type valueFuture struct {
	t       *txn
	attempt uint64 // t.attempt when issued
	v       []byte
}

// rangeFuture is a range read, answered when it was issued.
type rangeFuture struct {
	t       *txn
	attempt uint64
	rows    []kv.KeyValue
	// one holds the row of a read of one row, which then needs no slice
	// of its own.
	one [1]kv.KeyValue
}

// failedFuture is a read that failed when it was issued: its Get returns
// the read's error, whatever became of the transaction since. Reads rarely
// fail, and the futures of those that do not carry no error.
type failedFuture[T any] struct {
	err error
}

// AnswersAtIssue is kv.AnswersAtIssue's: a read is answered when issued.
func (t *txn) AnswersAtIssue() bool { return true }

// AnswersAtIssue is kv.AnswersAtIssue's, as the transaction's.
func (s *snapshot) AnswersAtIssue() bool { return true }

// GetAsync is kv.GetAsync: Get, now.
func (t *txn) GetAsync(key []byte) kv.FutureValue { return t.getAsync(key, false) }

// GetRangeAsync is kv.GetRangeAsync: GetRange, read to its end now.
func (t *txn) GetRangeAsync(r kv.Range, opts kv.RangeOptions) kv.FutureRange {
	return t.getRangeAsync(r, opts, false)
}

func (t *txn) getAsync(key []byte, snapshot bool) kv.FutureValue {
	v, err := t.get(key, snapshot)
	if err != nil {
		return &failedFuture[[]byte]{err}
	}
	f := carve(&t.vfutures, &t.issued)
	f.t, f.attempt, f.v = t, t.attempt, v
	return f
}

func (t *txn) getRangeAsync(r kv.Range, opts kv.RangeOptions, snapshot bool) kv.FutureRange {
	if opts.Limit == 1 {
		// A queue's head: First's path, without an iterator when it can.
		e, ok, err := t.first(r, opts.Reverse, snapshot)
		if err != nil {
			return &failedFuture[[]kv.KeyValue]{err}
		}
		f := t.rangeFuture()
		if ok {
			f.one[0] = e
			f.rows = f.one[:]
		}
		return f
	}
	scratch := rowScratch.Get().(*[]kv.KeyValue)
	rows, err := t.collect((*scratch)[:0], r, opts, snapshot)
	var fu kv.FutureRange
	if err != nil {
		fu = &failedFuture[[]kv.KeyValue]{err}
	} else {
		f := t.rangeFuture()
		switch len(rows) {
		case 0:
		case 1:
			f.one[0] = rows[0]
			f.rows = f.one[:]
		default:
			f.rows = slices.Clone(rows)
		}
		fu = f
	}
	if cap(rows) <= maxScratchRows {
		clear(rows) // no slab memory kept alive by the scratch
		*scratch = rows[:0]
		rowScratch.Put(scratch)
	}
	return fu
}

// rangeFuture returns a new range future of the current attempt, with no
// rows yet.
func (t *txn) rangeFuture() *rangeFuture {
	f := carve(&t.rfutures, &t.issued)
	f.t, f.attempt = t, t.attempt
	return f
}

// rowScratch holds the memory range futures collect their rows into
// before they copy them: it grows to the largest reads, once, not in
// every transaction.
var rowScratch = sync.Pool{New: func() any { return new([]kv.KeyValue) }}

// maxScratchRows is the most rows of a scratch kept for the next read.
const maxScratchRows = 4096

// collect is Collect of GetRange, appended to rows (a scratch from
// rowScratch), which it returns with the read's error. When the
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
		if err := t.expired(); err != nil {
			return rows[:n], err
		}
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

// Get is kv.Future's: its value while the attempt that issued it lasts.
func (f *valueFuture) Get() ([]byte, error) {
	if err := f.t.live(f.attempt); err != nil {
		return nil, err
	}
	return f.v, nil
}

// Get is kv.Future's: its rows while the attempt that issued it lasts.
func (f *rangeFuture) Get() ([]kv.KeyValue, error) {
	if err := f.t.live(f.attempt); err != nil {
		return nil, err
	}
	return f.rows, nil
}

// Get is kv.Future's: the read's error.
func (f *failedFuture[T]) Get() (T, error) {
	var zero T
	return zero, f.err
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
