package queues_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/queues"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// TestPushAllDirectoriesOfSuccessivePushes: pushes of several items one
// after the other, in two queues in turn, each into cells and shapes the
// pushes before did not fill, list every cell and shape of theirs in the
// directories: a push's set of directory keys (reused from push to push)
// starts empty.
func TestPushAllDirectoriesOfSuccessivePushes(t *testing.T) {
	t.Parallel()
	db, q := setup(t, queues.Priority, "cpu", "mem")
	name2 := t.Name() + "/2"
	q2 := queues.New(tuple.Tuple{"q", name2}.Pack(), queues.Priority, "cpu", "mem")
	var want []tuple.Tuple
	for cpu := range int64(4) {
		for _, qq := range []*queues.Queue{q, q2} {
			var items []queues.Item
			for mem := range int64(12) {
				items = append(items, queues.Item{ID: queues.NewID(), Priority: mem % 3, Resources: []int64{1 + cpu, 1 + mem}})
			}
			require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
				_, err := qq.PushAll(tr, queues.Token{}, items)
				return err
			}))
		}
		for mem := range int64(12) {
			want = append(want, tuple.Tuple{int64(4), 1 + cpu, 1 + mem})
		}
	}
	for _, c := range []struct {
		q      *queues.Queue
		prefix []byte
	}{{q, tuple.Tuple{"q", t.Name()}.Pack()}, {q2, tuple.Tuple{"q", name2}.Pack()}} {
		require.Equal(t, want, keysUnder(t, db, c.q, c.prefix, 4))
		require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error { return c.q.Check(tr) }))
	}
}

// TestPushAllRemakesADirectoryThePushBeforeListed: a push of several
// items makes sure of its cells' directory keys whatever the push before
// it (in the same goroutine, which reuses its set) found: here the push
// before listed a cell whose directory key is then cleared, and the next
// push into that cell writes it again.
func TestPushAllRemakesADirectoryThePushBeforeListed(t *testing.T) {
	t.Parallel()
	db, q := setup(t, queues.Priority, "cpu", "mem")
	prefix := tuple.Tuple{"q", t.Name()}.Pack()
	push := func(cells ...[]int64) {
		var items []queues.Item
		for _, c := range cells {
			items = append(items, queues.Item{ID: queues.NewID(), Resources: c})
		}
		require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
			_, err := q.PushAll(tr, queues.Token{}, items)
			return err
		}))
	}
	for round := range int64(8) {
		cpu := 1 + round
		b := []int64{cpu, 20 + round}
		push([]int64{cpu, 1}, []int64{cpu, 2}, []int64{cpu, 3}, []int64{cpu, 4}, b)
		// The directory keys of b's cell and shape (the exact cells of the
		// others have no shape) go, as if b's item was popped and a fit
		// pop found them empty.
		var bDirs []tuple.Tuple
		for _, tag := range []int64{4, 6} {
			for _, k := range keysUnder(t, db, q, prefix, tag) {
				if k[1] == cpu && k[2].(int64) > 4 {
					bDirs = append(bDirs, k)
				}
			}
		}
		require.Len(t, bDirs, 2, "round %d: b's cell and shape are listed", round)
		require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
			for _, k := range bDirs {
				tr.Clear(append(append([]byte(nil), prefix...), k.Pack()...))
			}
			return nil
		}))
		push(b, b, b, b, b)
		var again []tuple.Tuple
		for _, tag := range []int64{4, 6} {
			for _, k := range keysUnder(t, db, q, prefix, tag) {
				if k[1] == cpu && k[2].(int64) > 4 {
					again = append(again, k)
				}
			}
		}
		require.Equal(t, bDirs, again, "round %d: the push into b's cell lists it again", round)
		require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error { return q.Check(tr) }))
	}
}
