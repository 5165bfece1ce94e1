package driver

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"
	"time"

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
	// Options are the table options as CREATE TABLE takes them, in the
	// order it prints them (MAX_ATTEMPTS=5 BACKOFF=EXPONENTIAL(1 SECOND, 1
	// HOUR)), "" for a table without any.
	Options string
	// Unique lists the unique keys, in the order they were declared.
	Unique []UniqueInfo
}

// UniqueInfo describes a unique key, for tools such as the shell.
type UniqueInfo struct {
	Name    string
	Columns []string
	// Window is how long the key stays taken after its row is removed
	// (FOR n unit); 0 without one.
	Window time.Duration
}

// Tables lists the tables of the database behind c, by name; inside a
// transaction open on c, as that transaction sees them. c may come from a
// wrapping driver (otelsql, say) that exposes the connection it wraps with
// a method Raw() driver.Conn or Unwrap() driver.Conn; any other connection
// gets ErrNotFdbqueue.
func Tables(ctx context.Context, c *sql.Conn) ([]TableInfo, error) {
	var out []TableInfo
	err := c.Raw(func(dc any) error {
		cn, err := unwrapConn(dc, "Tables")
		if err != nil {
			return err
		}
		// Inside a transaction, the tables as that transaction sees them.
		var tables []*exec.Table
		if cn.tx != nil {
			tables, err = cn.exec.TablesIn(cn.tx)
		} else {
			tables, err = cn.exec.Tables(ctx)
		}
		if err != nil {
			return err
		}
		for _, t := range tables {
			ti := TableInfo{Name: t.Name, Kind: t.Kind().String(), IndexName: t.IndexName, Options: t.Options()}
			for _, col := range t.Columns {
				ti.Columns = append(ti.Columns, ColumnInfo{Name: col.Name, Type: col.Type.String(), NotNull: col.NotNull, Length: col.Length})
			}
			for _, i := range t.Resources {
				ti.Index = append(ti.Index, t.Columns[i].Name)
			}
			for _, u := range t.Unique {
				ui := UniqueInfo{Name: u.Name, Window: u.Window}
				for _, i := range u.Columns {
					ui.Columns = append(ui.Columns, t.Columns[i].Name)
				}
				ti.Unique = append(ti.Unique, ui)
			}
			out = append(out, ti)
		}
		return nil
	})
	return out, err
}

// maxWrappers bounds the wrappers unwrapConn looks through: a wrapper that
// returns itself must not loop.
const maxWrappers = 16

// unwrapConn finds fdbqueue's connection under those of wrapping drivers,
// for caller (named in errors). Tables needs the connection itself, not
// only its engine: inside a transaction it lists the tables as that
// transaction sees them. otelsql (github.com/XSAM/otelsql) exposes the
// connection it wraps with Raw, as other wrappers do; some call it Unwrap.
func unwrapConn(dc any, caller string) (*conn, error) {
	var chain []string
	for range maxWrappers {
		chain = append(chain, fmt.Sprintf("%T", dc))
		switch c := dc.(type) {
		case *conn:
			return c, nil
		case interface{ Raw() driver.Conn }:
			dc = c.Raw()
		case interface{ Unwrap() driver.Conn }:
			dc = c.Unwrap()
		default:
			return nil, fmt.Errorf("%w: %s got a %s connection; a driver that wraps fdbqueue's must expose the connection it wraps with a method Raw() driver.Conn or Unwrap() driver.Conn", ErrNotFdbqueue, caller, strings.Join(chain, " wrapping a "))
		}
	}
	return nil, fmt.Errorf("%w: %s found no fdbqueue connection under %d wrappers (%s)", ErrNotFdbqueue, caller, maxWrappers, strings.Join(chain, ", "))
}
