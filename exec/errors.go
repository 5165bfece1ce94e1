package exec

import (
	"errors"
	"fmt"
	"strings"

	"github.com/fdbqueue/fdbqueue/parser"
	"github.com/fdbqueue/fdbqueue/queues"
)

// Every error exec returns wraps one of these values (or is a *RowError),
// with what was wrong and what is accepted; the driver exports the same
// values for programs to match with errors.Is.

// Errors of the schema: CREATE and DROP TABLE, and the stored catalog.
var (
	// ErrNoTable is returned when a statement names a table that does not
	// exist (DROP TABLE IF EXISTS excepted).
	ErrNoTable = errors.New("fdbqueue: no such table")
	// ErrTableExists is returned when CREATE TABLE (without IF NOT
	// EXISTS) names a table that exists.
	ErrTableExists = errors.New("fdbqueue: table already exists")
	// ErrSchema is returned when a CREATE TABLE declares what the dialect
	// cannot serve: a column named id, one declared twice, a priority
	// column that is not an integer, a bad INDEX or DEFAULT.
	ErrSchema = errors.New("fdbqueue: invalid table definition")
	// ErrCatalog is returned when a stored schema (or DDL token) cannot be
	// read: written by another version, or damaged; and when a DDL would
	// change the catalog in a transaction that cannot bump the engine's
	// metadata version, which every executor's cached schemas are checked
	// against (a kv wrapper that does not pass kv.BumpMetadataVersion on).
	ErrCatalog = errors.New("fdbqueue: catalog corrupt")
)

// Errors of binding a statement to its table and arguments.
var (
	// ErrArgs is returned when a statement's placeholders and its
	// arguments do not match (count, or positional against named), or
	// when LIMIT is not a count.
	ErrArgs = errors.New("fdbqueue: wrong arguments")
	// ErrUnknownColumn is returned when a statement names a column its
	// table does not have.
	ErrUnknownColumn = errors.New("fdbqueue: unknown column")
	// ErrStatement is returned when a statement asks what its table
	// cannot serve: ORDER BY a column other than priority, an UPDATE
	// other than of priority by id, say.
	ErrStatement = errors.New("fdbqueue: statement not supported on this table")
)

// Errors of values: those coming in, and the rows stored.
var (
	// ErrValue is returned when a value does not fit its column (the
	// wrong type, NULL in a NOT NULL column, too long, a row too large)
	// or is out of its range (a lease, a wait or an INTERVAL), whether
	// written in the statement or bound to a placeholder.
	// INSERT returns it inside a *RowError naming the row.
	ErrValue = parser.ErrValue
	// ErrDuplicateID is returned, inside a *RowError naming the row, when
	// an INSERT gives an id its table holds already, or one id twice.
	ErrDuplicateID = queues.ErrDuplicateID
	// ErrDuplicateKey is returned, as a *DuplicateKeyError inside a
	// *RowError naming the row, when an INSERT's row holds the values of a
	// unique key that another row holds (in the table, earlier in the
	// same INSERT, or removed within the key's window). INSERT IGNORE
	// skips such rows instead.
	ErrDuplicateKey = errors.New("fdbqueue: duplicate key")
	// ErrUnreadableRow is returned when a stored row cannot be decoded as
	// its table's columns: one not written by INSERT (by an older version,
	// or another program). The error names the row's id; statements that
	// need no column values, such as DELETE FROM t WHERE id = ?, still
	// work on it.
	ErrUnreadableRow = errors.New("fdbqueue: stored row unreadable")
)

// Errors of pops.
var (
	// ErrPutBack is returned when rows that an autocommit pop took and
	// never handed to the program could not be put back into their table
	// (see PutBack): the engine was closed, or kept failing for as long as
	// a put-back may take. Those rows are lost; the error names their ids
	// and wraps the cause.
	ErrPutBack = errors.New("fdbqueue: popped rows could not be put back")
)

// RowError is returned when a row of an INSERT is bad: it holds the row's
// position among the statement's VALUES rows, and what is wrong with it
// (an ErrValue, an ErrDuplicateID, a *DuplicateKeyError, or a row that
// does not pack). Nothing of the statement was
// written. Bulk loaders use errors.As to find the row, set it
// aside and run the statement again without it.
type RowError struct {
	Row int // 1-based
	Err error
}

func (e *RowError) Error() string {
	return afterClass(e.Err.Error(), fmt.Sprintf("row %d", e.Row))
}

func (e *RowError) Unwrap() error { return e.Err }

// within is an error with where it happened (a WHERE condition, say),
// said after the error's class: "fdbqueue: invalid value: WHERE id =:
// column id is INT; got string abc".
type within struct {
	where string
	err   error
}

func (e *within) Error() string { return afterClass(e.err.Error(), e.where) }
func (e *within) Unwrap() error { return e.err }

// afterClass puts where after msg's class ("fdbqueue: not supported: "),
// or before msg when it has none.
func afterClass(msg, where string) string {
	const prefix = "fdbqueue: "
	if rest, ok := strings.CutPrefix(msg, prefix); ok {
		if i := strings.Index(rest, ": "); i >= 0 {
			n := len(prefix) + i + 2
			return msg[:n] + where + ": " + msg[n:]
		}
	}
	return where + ": " + msg
}
