package driver

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/fdbqueue/fdbqueue/exec"
)

// ColumnInfo describes a column, for tools such as the shell.
type ColumnInfo struct {
	Name    string
	Type    string
	NotNull bool
	Length  int // VARCHAR(n), VARBINARY(n); 0 otherwise
}

// TableInfo describes a table, for tools such as the shell.
type TableInfo struct {
	Name string
	// Kind is "priority" (a table with a priority column) or "fifo".
	Kind    string
	Columns []ColumnInfo
	// Index lists the resource columns of the fit index (INDEX name
	// (cols)), empty without one.
	IndexName string
	Index     []string
}

// Tables lists the tables of the database behind c, by name; inside a
// transaction open on c, as that transaction sees them.
func Tables(ctx context.Context, c *sql.Conn) ([]TableInfo, error) {
	var out []TableInfo
	err := c.Raw(func(dc any) error {
		cn, ok := dc.(*conn)
		if !ok {
			return fmt.Errorf("fdbqueue: Tables needs a connection of the fdbqueue driver, not %T", dc)
		}
		// Inside a transaction, the tables as that transaction sees them.
		var tables []*exec.Table
		var err error
		if cn.tx != nil {
			tables, err = cn.exec.TablesIn(cn.tx)
		} else {
			tables, err = cn.exec.Tables(ctx)
		}
		if err != nil {
			return err
		}
		for _, t := range tables {
			ti := TableInfo{Name: t.Name, Kind: t.Kind().String(), IndexName: t.IndexName}
			for _, col := range t.Columns {
				ti.Columns = append(ti.Columns, ColumnInfo{Name: col.Name, Type: col.Type.String(), NotNull: col.NotNull, Length: col.Length})
			}
			for _, i := range t.Resources {
				ti.Index = append(ti.Index, t.Columns[i].Name)
			}
			out = append(out, ti)
		}
		return nil
	})
	return out, err
}
