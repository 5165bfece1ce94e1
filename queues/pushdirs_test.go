package queues_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
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
		b := []int64{cpu, 40 + round}
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

// TestPushesIntoANewCellDoNotConflict: pushes that began before a cell
// was listed find its directory keys absent and write them, and neither
// they nor the pushes that found the keys there conflict over them (8
// clients' 100-row INSERTs into a new table conflicted in a quarter of
// their statements); a clear of the keys, as a pop that finds the cell
// empty makes, still makes a push that found them there retry.
func TestPushesIntoANewCellDoNotConflict(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{"memory", "file"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			cfg := embedded.Config{RetryLimit: -1}
			var db kv.Database = embedded.Open("", cfg)
			if engine == "file" {
				fdb, err := embedded.OpenFile(t.TempDir(), embedded.FileConfig{Config: cfg})
				require.NoError(t, err)
				db = fdb
			}
			prefix := tuple.Tuple{"q", t.Name()}.Pack()
			q := queues.New(prefix, queues.Priority, "cpu", "mem")
			t.Cleanup(func() { require.NoError(t, db.Close()) })
			begin := func() kv.Transaction { // and read: its read version is now's
				tr, err := db.CreateTransaction(bg)
				require.NoError(t, err)
				_, err = tr.Snapshot().Get(prefix)
				require.NoError(t, err)
				return tr
			}
			res := []int64{3, 40} // a cell of several shapes: a cell and a shape key
			push := func(tr kv.Transaction) {
				_, err := q.PushAll(tr, queues.Token{}, []queues.Item{{ID: queues.NewID(), Resources: res}})
				require.NoError(t, err)
			}
			dirKeys := func() [][]byte {
				var keys [][]byte
				for _, tag := range []int64{4, 6} {
					for _, k := range keysUnder(t, db, q, prefix, tag) {
						keys = append(keys, append(append([]byte(nil), prefix...), k.Pack()...))
					}
				}
				return keys
			}
			clearDirs := func() { // as a pop that finds the cell empty does
				require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
					for _, tag := range []int64{4, 6} {
						for _, k := range keysUnder(t, db, q, prefix, tag) {
							tr.Clear(append(append([]byte(nil), prefix...), k.Pack()...))
							// and its guard, P (19, tag, coords...)
							tr.Clear(append(append([]byte(nil), prefix...), append(tuple.Tuple{int64(19)}, k...).Pack()...))
						}
					}
					return nil
				}))
			}

			a, b := begin(), begin() // before the cell is listed
			push(a)
			require.NoError(t, a.Commit())
			require.Len(t, dirKeys(), 2)
			c := begin() // finds the keys there
			push(c)
			push(b) // finds them absent, and writes them again
			require.NoError(t, b.Commit(), "a push that wrote a key another wrote meanwhile")
			require.NoError(t, c.Commit(), "a push that read a key written again, unchanged")

			d := begin()
			push(d)
			clearDirs()
			require.ErrorIs(t, d.Commit(), kv.ErrNotCommitted, "a push into a cell whose keys went")
			e := begin()
			push(e) // writes them again
			require.NoError(t, e.Commit())
			require.Len(t, dirKeys(), 2)

			// A release makes sure of the keys too (ensureDir): a leased
			// item has no entries, and its cell may go unlisted meanwhile.
			var leased []queues.Item
			require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
				var err error
				leased, err = q.Lease(tr, queues.LeaseRequest{Order: queues.Max, N: 4, For: time.Hour})
				return err
			}))
			require.Len(t, leased, 4)
			clearDirs()
			f, g := begin(), begin()
			released, err := q.Release(f, leased[0].ID, leased[0].Lease, 0)
			require.NoError(t, err)
			require.True(t, released)
			push(g)
			require.NoError(t, g.Commit())
			require.NoError(t, f.Commit(), "a release that wrote a key a push wrote meanwhile")
			h := begin()
			released, err = q.Release(h, leased[1].ID, leased[1].Lease, 0)
			require.NoError(t, err)
			require.True(t, released)
			clearDirs()
			require.ErrorIs(t, h.Commit(), kv.ErrNotCommitted, "a release into a cell whose keys went")
			require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
				_, err := q.Release(tr, leased[1].ID, leased[1].Lease, 0)
				return err
			}))
			require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
				n, err := q.Count(tr)
				if err != nil {
					return err
				}
				require.Equal(t, int64(5), n)
				return q.Check(tr)
			}))
		})
	}
}

// guardLog records the read conflicts a transaction adds.
type guardLog struct {
	kv.Transaction
	read [][]byte
}

func (g *guardLog) AddReadConflictKey(k []byte) error {
	g.read = append(g.read, append([]byte(nil), k...))
	return g.Transaction.AddReadConflictKey(k)
}

// TestPushReadsADirectoryKeysGuard: a push into a listed cell depends on
// its directory keys, through their guards, P (19, tag, coords...), which
// only the pops that clear the keys write: a push that wrote a key again,
// having found it absent, is then no conflict for it (FoundationDB checks
// writes by key, whatever they write; on file: a write is checked before
// it is installed). A queue with the cells of versions before 2026-11-27,
// which those versions may pop, clearing the keys alone, reads the keys
// themselves.
func TestPushReadsADirectoryKeysGuard(t *testing.T) {
	t.Parallel()
	for _, below := range []int64{queues.ExactCellsBelow, queues.LegacyExactCellsBelow} {
		db, q := setupCells(t, below, queues.Priority, "cpu", "mem")
		prefix := tuple.Tuple{"q", t.Name()}.Pack()
		key := func(vs ...int64) string {
			tup := make(tuple.Tuple, len(vs))
			for i, v := range vs {
				tup[i] = v
			}
			return string(append(append([]byte(nil), prefix...), tup.Pack()...))
		}
		pushVia := func(push func(tr kv.Transaction) error) []string {
			var read []string
			require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
				g := &guardLog{Transaction: tr}
				if err := push(g); err != nil {
					return err
				}
				read = read[:0]
				for _, k := range g.read {
					read = append(read, string(k))
				}
				return nil
			}))
			return read
		}
		res := []int64{3, below + 8} // a cell of several shapes: a cell and a shape key
		pushAll := func(tr kv.Transaction) error {
			_, err := q.PushAll(tr, queues.Token{}, []queues.Item{{ID: queues.NewID(), Resources: res}})
			return err
		}
		push := func(tr kv.Transaction) error {
			return q.Push(tr, queues.Item{ID: queues.NewID(), Resources: res})
		}
		cell, shape := key(4, 3, below+8), key(6, 3, below+8)
		cellGuard, shapeGuard := key(19, 4, 3, below+8), key(19, 6, 3, below+8)
		first := pushVia(pushAll)
		require.NotContains(t, first, cell, "below=%d: the keys were absent: no conflict", below)
		require.NotContains(t, first, cellGuard)
		for name, read := range map[string][]string{"PushAll": pushVia(pushAll), "Push": pushVia(push)} {
			if below == queues.LegacyExactCellsBelow {
				require.Subset(t, read, []string{cell, shape}, "%s, below=%d", name, below)
				require.NotContains(t, read, cellGuard, name)
				continue
			}
			require.Subset(t, read, []string{cellGuard, shapeGuard}, "%s, below=%d", name, below)
			require.NotContains(t, read, cell, name)
			require.NotContains(t, read, shape, name)
		}
	}
}
