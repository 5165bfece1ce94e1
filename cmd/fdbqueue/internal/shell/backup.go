package shell

import (
	"slices"
	"strings"

	fdbqueue "github.com/fdbqueue/fdbqueue/driver"
)

// A backup: \copy TO writes, besides a table's columns, the pseudo-columns
// that \copy FROM needs to put each row back as it was (INSERT takes
// them): id first, so that a restore keeps the ids workers and logs know
// rows by; _visible_at, so that a delayed row stays delayed and a leased
// one hidden until its lease would have ended; _attempts, so that
// MAX_ATTEMPTS counts on; _error, so that a row's last error survives
// (and moves with it to the dead letters). Rows are written in queue order, and a restore
// pushes them in that order, which is what orders rows (not their ids).
// _lease is not written: a lease's token belongs to the worker holding
// it, and a restored row has none (0).

// restorable are the pseudo-columns a backup holds, as columns.
var restorable = []fdbqueue.ColumnInfo{
	{Name: "id", Type: "INT", NotNull: true},
	{Name: "_visible_at", Type: "TIMESTAMP", NotNull: true},
	{Name: "_attempts", Type: "INT", NotNull: true},
	{Name: "_error", Type: "TEXT"},
}

// backupColumns returns the columns \copy TO writes of t: id, t's
// columns, _visible_at, _attempts and _error.
func backupColumns(t fdbqueue.TableInfo) []fdbqueue.ColumnInfo {
	cols := make([]fdbqueue.ColumnInfo, 0, len(t.Columns)+len(restorable))
	cols = append(cols, restorable[0])
	cols = append(cols, t.Columns...)
	return append(cols, restorable[1:]...)
}

// loadColumn finds the column name of a \copy FROM header in t: one of its
// columns, or a pseudo-column a backup holds.
func loadColumn(t fdbqueue.TableInfo, name string) (fdbqueue.ColumnInfo, bool) {
	for _, cols := range [][]fdbqueue.ColumnInfo{t.Columns, restorable} {
		if i := slices.IndexFunc(cols, func(c fdbqueue.ColumnInfo) bool { return strings.EqualFold(c.Name, name) }); i >= 0 {
			return cols[i], true
		}
	}
	return fdbqueue.ColumnInfo{}, false
}

// loadColumns lists what a \copy FROM header may name, for its errors.
func loadColumns(t fdbqueue.TableInfo) string {
	return columnNames(t.Columns) + ", and the pseudo-columns " + columnNames(restorable)
}

func columnNames(cols []fdbqueue.ColumnInfo) string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}
