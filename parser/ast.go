package parser

// The statement types Parse returns.

import "time"

// Statement is one parsed statement: *CreateTable, *DropTable, *Insert,
// *InsertSelect (redrive.go), *Select, *SelectValue, *Delete, *Update,
// *Begin, *Commit or *Rollback.
type Statement interface{ statement() }

// Type is a column type.
type Type uint8

// Column types.
const (
	TypeInt Type = iota + 1
	TypeFloat
	TypeText
	TypeBlob
	TypeBool
	TypeTimestamp
)

func (t Type) String() string {
	switch t {
	case TypeInt:
		return "INT"
	case TypeFloat:
		return "DOUBLE"
	case TypeText:
		return "TEXT"
	case TypeBlob:
		return "BLOB"
	case TypeBool:
		return "BOOLEAN"
	case TypeTimestamp:
		return "TIMESTAMP"
	}
	return "?"
}

// Column is a column definition.
type Column struct {
	Name    string
	Type    Type
	Length  int // VARCHAR(n), VARBINARY(n): the most bytes; 0 for no limit
	NotNull bool
	// Default is the DEFAULT literal, or nil. A DEFAULT NULL is a Value
	// of kind ValueNull.
	Default *Value
}

// CreateTable is CREATE TABLE [IF NOT EXISTS] name (columns [, INDEX name (cols)]).
type CreateTable struct {
	Name        string
	IfNotExists bool
	Columns     []Column
	// MaxAttempts is the MAX_ATTEMPTS=n table option (0: none): how many
	// times a row may be leased before FOR LEASE moves it to the table
	// <name>_dead.
	MaxAttempts int64
	// Backoff is the BACKOFF=... table option (nil: none): how long a row
	// waits after a lease that ends unacked, or a release without a time.
	Backoff *Backoff
	// Index lists the resource columns of the fit index, in order; empty
	// without INDEX.
	Index     []string
	IndexName string
	// Unique lists the unique keys, table-level (UNIQUE [KEY|INDEX]
	// [name] (cols) [FOR n unit]) and a column's UNIQUE [KEY], in the
	// order they are declared (see unique.go).
	Unique []UniqueKey
}

// UniqueKey is a unique key of CREATE TABLE: no two rows of the table
// hold the same values in its columns (see package exec).
type UniqueKey struct {
	// Name is the key's name; "" when the statement names none (exec
	// names it after its first column, as MySQL does).
	Name    string
	Columns []string
	// Window is FOR n unit: how long a key stays taken after its row is
	// removed (0: none, it is free at once).
	Window time.Duration
}

// DropTable is DROP TABLE [IF EXISTS] name.
type DropTable struct {
	Name     string
	IfExists bool
}

// ValueKind says what a Value holds.
type ValueKind uint8

// Value kinds.
const (
	ValueNull ValueKind = iota
	ValueInt
	ValueFloat
	ValueString
	ValueBytes
	ValueBool
	// ValueArg is a placeholder, bound at execution.
	ValueArg
	// ValueNow is NOW() [+|- INTERVAL n SECOND|MINUTE|HOUR]: the
	// statement's time (the client's clock), moved by Interval times Unit.
	ValueNow
)

// Value is a literal or a placeholder.
type Value struct {
	Kind  ValueKind
	Int   int64
	Float float64
	Str   string // ValueString; ValueBytes holds its bytes here too
	Bool  bool
	// Placeholders: Ordinal (1-based) for ?, Name for :name.
	Ordinal int
	Name    string
	// ValueNow: Interval is the INTERVAL's count (a number or a
	// placeholder; nil without INTERVAL), and Unit its unit, negative
	// for NOW() - INTERVAL.
	Interval *Value
	Unit     time.Duration
}

// Op is a comparison operator.
type Op uint8

// Comparison operators.
const (
	OpEq Op = iota + 1
	OpNe
	OpLt
	OpLe
	OpGt
	OpGe
)

func (o Op) String() string {
	return [...]string{"", "=", "!=", "<", "<=", ">", ">="}[o]
}

// Cond is one comparison of a WHERE conjunction: Column Op Value.
type Cond struct {
	Column string
	Op     Op
	Value  Value
}

// OrderBy is ORDER BY column [ASC|DESC].
type OrderBy struct {
	Column string
	Desc   bool
}

// Insert is INSERT [IGNORE] INTO table [(columns)] VALUES (...), ....
type Insert struct {
	Table   string
	Columns []string // nil: all columns, in table order
	Rows    [][]Value
	// Ignore is INSERT IGNORE: a row whose unique key the table (or an
	// earlier row of the statement) holds is skipped, not an error.
	Ignore bool
}

// Select is SELECT columns|*|COUNT(*) FROM table [WHERE] [ORDER BY] [LIMIT]
// [FOR POP [WAIT seconds] | FOR LEASE seconds [WAIT seconds]].
type Select struct {
	Table   string
	Star    bool
	Columns []string
	Count   bool
	Where   []Cond
	OrderBy *OrderBy
	Limit   *Value // nil: no LIMIT
	ForPop  bool
	// Lease is FOR LEASE's seconds: a positive integer or float, or a
	// placeholder (bound to a time.Duration or a number of seconds); nil
	// without FOR LEASE. ForPop is false for a lease.
	Lease *Value
	// Wait is FOR POP WAIT's (or FOR LEASE's WAIT's) seconds: an integer or a float from 0 to
	// MaxWait, or a placeholder (bound to a time.Duration or a number of
	// seconds); nil without WAIT.
	Wait *Value
}

// Delete is DELETE FROM table [WHERE] [ORDER BY] [LIMIT].
type Delete struct {
	Table   string
	Where   []Cond
	OrderBy *OrderBy
	Limit   *Value
}

// Assignment is one SET column = value.
type Assignment struct {
	Column string
	Value  Value
}

// Update is UPDATE table SET ... WHERE ....
type Update struct {
	Table string
	Set   []Assignment
	Where []Cond
}

// SelectValue is SELECT n, an integer literal without a table: the
// health check connection pools and ORMs send (SELECT 1). It reads
// nothing and returns one row, a column named n holding n.
type SelectValue struct {
	Value int64
}

// Begin, Commit and Rollback control an explicit transaction.
type (
	Begin    struct{}
	Commit   struct{}
	Rollback struct{}
)

func (*CreateTable) statement() {}
func (*DropTable) statement()   {}
func (*Insert) statement()      {}
func (*Select) statement()      {}
func (*Delete) statement()      {}
func (*Update) statement()      {}
func (*SelectValue) statement() {}
func (*Begin) statement()       {}
func (*Commit) statement()      {}
func (*Rollback) statement()    {}

// Takes reports whether the SELECT takes the rows it finds: FOR POP or
// FOR LEASE.
func (s *Select) Takes() bool { return s.ForPop || s.Lease != nil }

// Pseudo-columns every table has, selectable like id.
const (
	// ColVisibleAt is when the row may be popped or leased (TIMESTAMP).
	ColVisibleAt = "_visible_at"
	// ColLease is the token of the row's current lease, 0 if never leased.
	ColLease = "_lease"
	// ColAttempts is how many times the row was leased.
	ColAttempts = "_attempts"
	// ColError is the last error a worker recorded for the row (TEXT,
	// NULL if none), which UPDATE and INSERT may write.
	ColError = "_error"
)
