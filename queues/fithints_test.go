package queues_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/queues"
)

// countingTx counts the key-values its range reads return, read ahead
// or not.
type countingTx struct {
	kv.Transaction
	n *int
}

func (c countingTx) GetRange(r kv.Range, opts kv.RangeOptions) kv.Iterator {
	return counting{c.Transaction, c.n}.GetRange(r, opts)
}

// GetRangeAsync counts the rows of the reads a pop issues ahead.
func (c countingTx) GetRangeAsync(r kv.Range, opts kv.RangeOptions) kv.FutureRange {
	return counting{c.Transaction, c.n}.GetRangeAsync(r, opts)
}

// Snapshot counts too: a pop reads ahead through it.
func (c countingTx) Snapshot() kv.ReadTransaction {
	return counting{c.Transaction.Snapshot(), c.n}
}

// counting is countingTx's reads, and its snapshot's.
type counting struct {
	kv.ReadTransaction
	n *int
}

func (c counting) GetRange(r kv.Range, opts kv.RangeOptions) kv.Iterator {
	return countingIter{c.ReadTransaction.GetRange(r, opts), c.n}
}

func (c counting) GetRangeAsync(r kv.Range, opts kv.RangeOptions) kv.FutureRange {
	rows, err := kv.GetRangeAsync(c.ReadTransaction, r, opts).Get()
	*c.n += len(rows)
	return answered{rows, err}
}

type answered struct {
	rows []kv.KeyValue
	err  error
}

func (a answered) Get() ([]kv.KeyValue, error) { return a.rows, a.err }

type countingIter struct {
	kv.Iterator
	n *int
}

func (c countingIter) Next() bool {
	ok := c.Iterator.Next()
	if ok {
		*c.n++
	}
	return ok
}

// TestFitPopSkipsSedimentAfterAMiss: when the head of the queue holds
// only tasks too large for a consumer (sediment), its first fit pop reads
// scanBudget items before it turns to the index; the next pop with the
// same limits reads only a few, and both find the right task.
func TestFitPopSkipsSedimentAfterAMiss(t *testing.T) {
	t.Parallel()
	db, q, pushAll := sedimentQueue(t)
	pushAll(queues.Item{ID: 1001, Priority: 9, Resources: []int64{1}, Value: []byte("small")})
	first := popSmall(t, db, q)
	require.GreaterOrEqual(t, first, 128, "the first pop reads the sediment")
	pushAll(queues.Item{ID: 1002, Priority: 9, Resources: []int64{1}, Value: []byte("small")})
	second := popSmall(t, db, q)
	require.Less(t, second, 40, "the next pop with the same limits reads little of it")

	// A consumer whose limits fit the head still takes it at once.
	requireHeadTaken(t, db, q)
}

// TestFitPopSkipsStepOneAfterMissesInARow: when step 1 keeps missing (the
// head of the queue holds only tasks too large for a consumer), single
// pops with the same limits skip it more and more often, and go straight
// to the index: of 20 pops only the 1st, 2nd, 4th, 8th and 16th read the
// sediment. Each takes the right task all the same; a hit in step 1
// (here: by a consumer whose limits fit the head) is not held back.
func TestFitPopSkipsStepOneAfterMissesInARow(t *testing.T) {
	t.Parallel()
	db, q, pushAll := sedimentQueue(t)
	var reads []int
	for i := range 20 {
		pushAll(queues.Item{ID: int64(1001 + i), Priority: 9, Resources: []int64{1}, Value: []byte("small")})
		reads = append(reads, popSmall(t, db, q))
	}
	var scanned []int
	for i, n := range reads {
		if n >= sedimentRead {
			scanned = append(scanned, i+1)
		}
	}
	require.Equal(t, []int{1, 2, 4, 8, 16}, scanned, "rows read by each pop: %v", reads)

	// A consumer whose limits fit the head still takes it at once.
	requireHeadTaken(t, db, q)
}

// sedimentRead is the rows a fit pop reads at least when it reads step 1
// after a miss (sedimentBudget).
const sedimentRead = 16

// sedimentQueue returns a queue of one resource, cpu, holding 300 tasks of
// cpu 8 at priority 0, and a function that pushes more.
func sedimentQueue(t *testing.T) (kv.Database, *queues.Queue, func(...queues.Item)) {
	db, q := setup(t, queues.Priority, "cpu")
	items := make([]queues.Item, 0, 300)
	for i := range 300 {
		items = append(items, queues.Item{ID: int64(i + 1), Priority: 0, Resources: []int64{8}, Value: []byte("big")})
	}
	pushAll := func(its ...queues.Item) {
		require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
			_, err := q.PushAll(tr, queues.Token{}, its)
			return err
		}))
	}
	pushAll(items...)
	return db, q, pushAll
}

// popSmall pops the task of cpu 1 that sedimentQueue's caller pushed last,
// and returns the rows the pop read.
func popSmall(t *testing.T, db kv.Database, q *queues.Queue) int {
	n := 0
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		n = 0
		it, ok, err := q.PopFit(countingTx{tr, &n}, queues.Min, []int64{1})
		require.True(t, ok)
		require.Equal(t, "small", string(it.Value))
		return err
	}))
	return n
}

// requireHeadTaken: a fit pop whose limits fit the sediment takes it.
func requireHeadTaken(t *testing.T, db kv.Database, q *queues.Queue) {
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		it, ok, err := q.PopFit(tr, queues.Min, []int64{8})
		require.True(t, ok)
		require.Equal(t, "big", string(it.Value))
		return err
	}))
}

// TestFitMultiRowPopsAndLeasesDoNotSkipStepOne: while single fit pops with
// some limits skip step 1 (after misses in a row), a multi-row pop and a
// lease with the same limits, of one row too, still read the head of the
// queue in order (step 1's whole budget: they keep no streak of misses), and all take the right task.
func TestFitMultiRowPopsAndLeasesDoNotSkipStepOne(t *testing.T) {
	t.Parallel()
	db, q, pushAll := sedimentQueue(t)
	for i := range 4 { // misses in a row (pops 1, 2 and 4 read step 1): the next single pops skip it
		pushAll(queues.Item{ID: int64(1001 + i), Priority: 9, Resources: []int64{1}, Value: []byte("small")})
		popSmall(t, db, q)
	}
	takes := map[string]func(kv.Transaction) ([]queues.Item, error){
		"popN 1": func(tr kv.Transaction) ([]queues.Item, error) { return q.PopFitN(tr, queues.Min, []int64{1}, 1) },
		"popN 2": func(tr kv.Transaction) ([]queues.Item, error) { return q.PopFitN(tr, queues.Min, []int64{1}, 2) },
		"lease 1": func(tr kv.Transaction) ([]queues.Item, error) {
			return q.Lease(tr, queues.LeaseRequest{Order: queues.Min, Limits: []int64{1}, N: 1, For: time.Hour})
		},
	}
	for _, name := range []string{"popN 1", "popN 2", "lease 1"} {
		pushAll(queues.Item{ID: queues.NewID(), Priority: 9, Resources: []int64{1}, Value: []byte("small")})
		n := 0
		require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
			n = 0
			got, err := takes[name](countingTx{tr, &n})
			require.Equal(t, []string{"small"}, values(got), name)
			return err
		}))
		require.GreaterOrEqual(t, n, 128, "%s reads step 1 with its whole budget", name)
	}
	// The single pops' hints went on skipping: the next one reads little.
	pushAll(queues.Item{ID: 1100, Priority: 9, Resources: []int64{1}, Value: []byte("small")})
	require.Less(t, popSmall(t, db, q), sedimentRead)
}
