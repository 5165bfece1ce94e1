package exec

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/parser"
	"github.com/fdbqueue/fdbqueue/queues"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// TestCellsSchemaRoundTrip: a table with a fit index stores its cells
// (queues.ExactCellsBelow) as the schema's 11th element, whatever its
// other options, and reads them back; a table without a fit index, or
// with the cells of versions before 2026-11-27, keeps the schema those
// versions read (7 elements without options); another bound is refused.
func TestCellsSchemaRoundTrip(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		sql      string
		elements int // of the schema with New's cells
		legacy   int // of the schema the versions before wrote
	}{
		{"CREATE TABLE t (cpu INT NOT NULL, mem INT NOT NULL, INDEX fit (cpu, mem))", 11, 7},
		{"CREATE TABLE t (cpu INT NOT NULL, mem INT NOT NULL, INDEX fit (cpu, mem)) MAX_ATTEMPTS=3", 11, 8},
		{"CREATE TABLE t (cpu INT NOT NULL, mem INT NOT NULL, INDEX fit (cpu, mem)) BACKOFF=CONSTANT(5 SECOND)", 11, 10},
		{"CREATE TABLE t (cpu INT NOT NULL, mem INT NOT NULL, k TEXT UNIQUE, INDEX fit (cpu, mem))", 11, 9},
		{"CREATE TABLE t (v TEXT)", 7, 7},
		{"CREATE TABLE t (v TEXT) MAX_ATTEMPTS=3", 8, 8},
	} {
		db := embedded.Open("", embedded.Config{})
		e := New(db, []byte("r"))
		p, err := parser.Parse(c.sql)
		require.NoError(t, err)
		_, err = e.Auto(context.Background(), p, Args{})
		require.NoError(t, err, c.sql)
		tables, err := e.Tables(context.Background())
		require.NoError(t, err)
		tb := tables[0]
		fit := len(tb.Resources) > 0

		raw := tb.encode()
		tup, err := tuple.Unpack(raw)
		require.NoError(t, err)
		require.Len(t, tup, c.elements, c.sql)
		got, err := decodeTable([]byte("r"), queues.Options{}, raw)
		require.NoError(t, err, c.sql)
		require.Equal(t, int64(queues.ExactCellsBelow), got.Queue.ExactCells(), c.sql)
		require.Equal(t, tb.MaxAttempts, got.MaxAttempts, c.sql)
		require.Equal(t, tb.Backoff, got.Backoff, c.sql)
		require.Equal(t, tb.Unique, got.Unique, c.sql)

		if fit {
			// The schema a version before 2026-11-27 wrote, and read it.
			legacy := *tb
			legacy.Queue, err = tb.Queue.WithExactCells(queues.LegacyExactCellsBelow)
			require.NoError(t, err)
			// The same elements as New's, without the padding and cells.
			require.Equal(t, tup[:c.legacy].Pack(), legacy.encode(), c.sql)
			got, err = decodeTable([]byte("r"), queues.Options{}, legacy.encode())
			require.NoError(t, err, c.sql)
			require.Equal(t, int64(queues.LegacyExactCellsBelow), got.Queue.ExactCells(), c.sql)
			require.Equal(t, tb.MaxAttempts, got.MaxAttempts, c.sql)
			require.Equal(t, tb.Backoff, got.Backoff, c.sql)

			// Cells no version files under.
			bad := append(tuple.Tuple{}, tup...)
			bad[10] = int64(24)
			_, err = decodeTable([]byte("r"), queues.Options{}, bad.Pack())
			require.ErrorIs(t, err, ErrCatalog)
			require.ErrorContains(t, err, "exact cells below 24 (accepted: 32, or 16")
			if tb.Backoff == nil {
				// A nil BACKOFF only before the cells.
				_, err = decodeTable([]byte("r"), queues.Options{}, tup[:10].Pack())
				require.ErrorIs(t, err, ErrCatalog, c.sql)
			}
		} else {
			// Cells without a fit index.
			padded := append(tuple.Tuple{}, tup...)
			for len(padded) < 10 {
				padded = append(padded, []any{int64(0), tuple.Tuple{}, nil}[len(padded)-7])
			}
			_, err = decodeTable([]byte("r"), queues.Options{}, append(padded, int64(queues.ExactCellsBelow)).Pack())
			require.ErrorIs(t, err, ErrCatalog, c.sql)
			require.ErrorContains(t, err, "cells for a table without a fit index")
		}
		require.NoError(t, db.Close())
	}
}

// TestTableOfLegacyCells: a table whose schema a version before
// 2026-11-27 wrote (no cells element) is read and written with that
// version's cells, where mem 16..31 share cells by twos and are filed
// under their shapes too: fit pops through the index (behind rows that
// do not fit) take what fits, in order, passing over a row of a cell
// that straddles the limit, and the queue checks with those cells (and
// would not with New's).
func TestTableOfLegacyCells(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	root := []byte("r")
	sqlOn := func(e *Executor, sql string, args ...any) *Result {
		t.Helper()
		p, err := parser.Parse(sql)
		require.NoError(t, err, sql)
		res, err := e.Auto(ctx, p, Args{Positional: args})
		require.NoError(t, err, sql)
		return res
	}
	sqlOn(New(db, root), "CREATE TABLE t (priority INT NOT NULL, cpu INT NOT NULL, mem INT NOT NULL, name TEXT, INDEX fit (cpu, mem))")
	// Rewrite the schema as those versions wrote it.
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		e := New(db, root)
		tb, err := e.cat.table(tr, "t")
		if err != nil {
			return err
		}
		legacy := *tb
		if legacy.Queue, err = tb.Queue.WithExactCells(queues.LegacyExactCellsBelow); err != nil {
			return err
		}
		tr.Set(catalogKey(root, "t"), legacy.encode())
		return e.cat.changed(tr)
	}))

	e := New(db, root)
	tables, err := e.Tables(ctx)
	require.NoError(t, err)
	q := tables[0].Queue
	require.Equal(t, int64(queues.LegacyExactCellsBelow), q.ExactCells())
	// mem 17 and 16 share the cell 16..17; 18 is in the next.
	sqlOn(e, "INSERT INTO t (priority, cpu, mem, name) VALUES (9, 1, 17, 'a'), (5, 1, 16, 'b'), (7, 1, 18, 'c'), (1, 1, 15, 'd')")
	var shapes int
	require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		kvs, err := kv.Collect(tr.GetRange(kv.PrefixRange(append(tableKey(root, tables[0].ID), tuple.Tuple{int64(6)}.Pack()...)), kv.RangeOptions{}))
		shapes = len(kvs)
		return err
	}))
	require.Equal(t, 3, shapes, "the shapes of mem 16, 17 and 18 are listed")
	check := func(q *queues.Queue) error {
		return db.ReadTransact(ctx, func(tr kv.ReadTransaction) error { return q.Check(tr) })
	}
	require.NoError(t, check(q))
	newCells, err := q.WithExactCells(queues.ExactCellsBelow)
	require.NoError(t, err)
	require.Error(t, check(newCells), "the rows are filed under the cells of the earlier versions")

	// More rows than a fit pop reads in queue order before its index,
	// none of which fits, first in Max order.
	sediment := "INSERT INTO t (priority, cpu, mem, name) VALUES " + strings.TrimSuffix(strings.Repeat("(100, 1, 1048576, 'sediment'), ", 200), ", ")
	sqlOn(e, sediment)

	for _, c := range []struct {
		mem  int64
		want string
	}{{16, "b"}, {16, "d"}, {16, ""}, {17, "a"}, {18, "c"}} {
		res := sqlOn(e, "SELECT name FROM t WHERE cpu <= ? AND mem <= ? ORDER BY priority DESC LIMIT 1 FOR POP", int64(8), c.mem)
		if c.want == "" {
			require.Empty(t, res.Rows, "mem <= %d", c.mem)
			continue
		}
		require.Equal(t, [][]any{{c.want}}, res.Rows, "mem <= %d", c.mem)
	}
	require.NoError(t, check(q))
}
