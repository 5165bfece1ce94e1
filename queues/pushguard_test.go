package queues_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/internal/fdbmodel"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/queues"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// guardEngines opens a fresh database on each engine a directory key's
// guard must work on: memory, file: and the FoundationDB model.
func guardEngines() map[string]func(t *testing.T) kv.Database {
	cfg := embedded.Config{RetryLimit: -1}
	return map[string]func(t *testing.T) kv.Database{
		"memory": func(t *testing.T) kv.Database {
			db := embedded.Open("", cfg)
			t.Cleanup(func() { _ = db.Close() })
			return db
		},
		"file": func(t *testing.T) kv.Database {
			db, err := embedded.OpenFile(t.TempDir(), embedded.FileConfig{Config: cfg})
			require.NoError(t, err)
			t.Cleanup(func() { _ = db.Close() })
			return db
		},
		"fdbmodel": func(t *testing.T) kv.Database {
			db := fdbmodel.Wrap(embedded.Open("", cfg), fdbmodel.Config{})
			t.Cleanup(func() { _ = db.Close() })
			return db
		},
	}
}

// guardQueue opens a database with open, and a queue in it whose fit
// index's cells are exact below below; it returns them with the queue's
// prefix.
func guardQueue(t *testing.T, open func(t *testing.T) kv.Database, below int64) (kv.Database, *queues.Queue, []byte) {
	t.Helper()
	db := open(t)
	prefix := tuple.Tuple{"q", t.Name()}.Pack()
	q, err := queues.New(prefix, queues.Priority, "cpu", "mem").WithExactCells(below)
	require.NoError(t, err)
	return db, q, prefix
}

// listEmptyCell leaves res's cell listed and empty: it pushes an item
// there and removes it by id, which leaves the directory keys.
func listEmptyCell(t *testing.T, db kv.Database, q *queues.Queue, res []int64) {
	t.Helper()
	id := queues.NewID()
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		return q.Push(tr, queues.Item{ID: id, Resources: res})
	}))
	require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
		_, ok, err := q.Remove(tr, id)
		require.True(t, ok)
		return err
	}))
}

// TestClearOfAnAbsentKeyConflicts: a key no transaction ever wrote, read
// with an explicit read conflict, conflicts with a concurrent clear of it
// (a point clear, a range clear over it, a clear after a read of it
// absent, a clear beside an unchanged set): a guard works only if no
// engine leaves a clear of an absent key out of its conflict record.
func TestClearOfAnAbsentKeyConflicts(t *testing.T) {
	t.Parallel()
	guard := tuple.Tuple{"g", int64(19), int64(4), int64(1)}.Pack()
	dir := tuple.Tuple{"g", int64(4), int64(1)}.Pack()
	clears := map[string]func(tr kv.Transaction) error{
		"point": func(tr kv.Transaction) error { tr.Clear(guard); return nil },
		"range": func(tr kv.Transaction) error {
			tr.ClearRange(kv.PrefixRange(tuple.Tuple{"g", int64(19)}.Pack()))
			return nil
		},
		"read absent, then clear": func(tr kv.Transaction) error {
			v, err := tr.Get(guard)
			if err != nil {
				return err
			}
			require.Nil(t, v)
			tr.Clear(guard)
			return nil
		},
		"with an unchanged set": func(tr kv.Transaction) error {
			tr.Set(dir, nil) // the key holds "" already
			tr.Clear(guard)
			return nil
		},
		"with the key, as clearDir": func(tr kv.Transaction) error {
			tr.Clear(dir)
			tr.Clear(guard)
			return nil
		},
	}
	for engine, open := range guardEngines() {
		for name, clear := range clears {
			t.Run(engine+"/"+name, func(t *testing.T) {
				t.Parallel()
				db := open(t)
				require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
					tr.Set(dir, nil)
					return nil
				}))
				reader, err := db.CreateTransaction(bg)
				require.NoError(t, err)
				v, err := reader.Snapshot().Get(dir) // the read version
				require.NoError(t, err)
				require.NotNil(t, v)
				require.NoError(t, reader.AddReadConflictKey(guard))
				reader.Set(tuple.Tuple{"g", int64(3), int64(1)}.Pack(), nil)

				require.NoError(t, db.Transact(bg, clear))
				err = reader.Commit()
				require.ErrorIs(t, err, kv.ErrNotCommitted, "a read conflict on an absent key a commit since cleared")

				// Without the clear, no conflict: the guard alone decides.
				reader, err = db.CreateTransaction(bg)
				require.NoError(t, err)
				_, err = reader.Snapshot().Get(dir)
				require.NoError(t, err)
				require.NoError(t, reader.AddReadConflictKey(guard))
				reader.Set(tuple.Tuple{"g", int64(3), int64(2)}.Pack(), nil)
				require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
					tr.Set(dir, nil)
					return nil
				}))
				require.NoError(t, reader.Commit())
			})
		}
	}
}

// TestFitPopClearingAListedEmptyCellFailsAPushThatFoundItListed: end to
// end, with no key cleared by hand: a cell is listed and empty (its item
// was removed by id, which leaves the directory keys); a push begins,
// finds the cell's keys there and files an entry; a real fit pop then
// finds the cell empty and clears its keys, and commits first. The push
// must fail to commit: had it committed, its item would be in a cell no
// directory lists, which fit pops never see (Check says so). On every
// engine, for a queue of new cells (the guard) and of legacy ones (the
// key itself).
func TestFitPopClearingAListedEmptyCellFailsAPushThatFoundItListed(t *testing.T) {
	t.Parallel()
	for engine, open := range guardEngines() {
		for _, below := range []int64{queues.ExactCellsBelow, queues.LegacyExactCellsBelow} {
			// A cell of several shapes (a cell and a shape key), and an
			// exact cell (a cell key only).
			for _, res := range [][]int64{{3, below + 8}, {3, 5}} {
				t.Run(fmt.Sprintf("%s/below=%d/res=%v", engine, below, res), func(t *testing.T) {
					t.Parallel()
					db, q, prefix := guardQueue(t, open, below)
					check := func() error {
						return db.ReadTransact(bg, func(tr kv.ReadTransaction) error { return q.Check(tr) })
					}
					// Rows that do not fit, more than a fit pop's first step
					// reads, so that it searches the index.
					var big []queues.Item
					for range 140 {
						big = append(big, queues.Item{ID: queues.NewID(), Resources: []int64{90, 90}})
					}
					require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
						_, err := q.PushAll(tr, queues.Token{}, big)
						return err
					}))
					cellKeys := func() []tuple.Tuple {
						var ks []tuple.Tuple
						for _, k := range keysUnder(t, db, q, prefix, 4) {
							if k[1] == int64(3) {
								ks = append(ks, k)
							}
						}
						return ks
					}
					listEmptyCell(t, db, q, res)
					require.NotEmpty(t, cellKeys(), "the empty cell stays listed")

					p, err := db.CreateTransaction(bg)
					require.NoError(t, err)
					id := queues.NewID()
					require.NoError(t, q.Push(p, queues.Item{ID: id, Resources: res, Value: []byte("p")}))

					require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
						_, ok, err := q.PopFit(tr, queues.Max, []int64{50, 50})
						require.False(t, ok)
						return err
					}))
					require.Empty(t, cellKeys(), "the pop cleared the empty cell's key")

					err = p.Commit()
					require.NoError(t, check(), "an entry in an unlisted cell")
					require.ErrorIs(t, err, kv.ErrNotCommitted, "the push relied on a key the pop cleared")

					// Retried, it lists the cell again, and a fit pop takes it.
					require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
						return q.Push(tr, queues.Item{ID: id, Resources: res, Value: []byte("p")})
					}))
					v, ok := popFit(t, db, q, queues.Max, 50, 50)
					require.True(t, ok)
					require.Equal(t, "p", v)
					require.NoError(t, check())
				})
			}
		}
	}
}

// TestClearItemsFailsAPushThatFoundItsCellListed: a push that found its
// cell listed, and a ClearItems (DELETE FROM t) that commits first: the
// push fails to commit (its id key's read conflict meets the clear of
// the items and ids, and its guard's the clear of the guards), so no
// entry is left in a cell no directory lists.
func TestClearItemsFailsAPushThatFoundItsCellListed(t *testing.T) {
	t.Parallel()
	for engine, open := range guardEngines() {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			db, q, _ := guardQueue(t, open, queues.ExactCellsBelow)
			res := []int64{3, 40}
			require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
				return q.Push(tr, queues.Item{ID: queues.NewID(), Resources: res})
			}))
			p, err := db.CreateTransaction(bg)
			require.NoError(t, err)
			_, err = q.PushAll(p, queues.Token{}, []queues.Item{{ID: queues.NewID(), Resources: res}})
			require.NoError(t, err)
			require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error {
				q.ClearItems(tr)
				return nil
			}))
			require.ErrorIs(t, p.Commit(), kv.ErrNotCommitted)
			require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error { return q.Check(tr) }))
		})
	}
}

// TestLegacyCellsPushConflictsWithAnOldPopClearingTheKeyAlone: in a
// queue of the cells of versions before 2026-11-27, which those versions
// may pop, clearing a cell's directory key alone (no guard), a push that
// found the key there still fails to commit after such a clear.
func TestLegacyCellsPushConflictsWithAnOldPopClearingTheKeyAlone(t *testing.T) {
	t.Parallel()
	for engine, open := range guardEngines() {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			db, q, prefix := guardQueue(t, open, queues.LegacyExactCellsBelow)
			res := []int64{3, 40}
			listEmptyCell(t, db, q, res)
			p, err := db.CreateTransaction(bg)
			require.NoError(t, err)
			require.NoError(t, q.Push(p, queues.Item{ID: queues.NewID(), Resources: res}))
			require.NoError(t, db.Transact(bg, func(tr kv.Transaction) error { // an old version's pop
				for _, tag := range []int64{4, 6} {
					for _, k := range keysUnder(t, db, q, prefix, tag) {
						tr.Clear(append(append([]byte(nil), prefix...), k.Pack()...))
					}
				}
				return nil
			}))
			require.ErrorIs(t, p.Commit(), kv.ErrNotCommitted)
			require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error { return q.Check(tr) }))
		})
	}
}
