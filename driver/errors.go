package driver

import (
	"errors"

	"github.com/fdbqueue/fdbqueue/exec"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/parser"
)

// Every error a program matches, in one place. Errors wrap these values,
// with what was wrong and what is accepted: test them with errors.Is (and
// RowError with errors.As), never by their text. Those defined in the
// layers below are the same values here, so errors.Is matches either name.
var (
	// ErrDSN is returned (wrapped, with what was wrong and what is
	// accepted) for a DSN that cannot be used.
	ErrDSN = errors.New("fdbqueue: bad DSN")
	// ErrEngine is returned when a DSN's engine is not available in this
	// build.
	ErrEngine = errors.New("fdbqueue: engine not available")
	// ErrTxState is returned for BEGIN inside a transaction, COMMIT or
	// ROLLBACK outside one, and similar misuse.
	ErrTxState = errors.New("fdbqueue: transaction state")
	// ErrReadOnly is returned for a write in a read-only transaction.
	ErrReadOnly = errors.New("fdbqueue: read-only transaction")
	// ErrArgType is returned for an argument of a type the driver does
	// not convert.
	ErrArgType = errors.New("fdbqueue: unsupported argument type")
	// ErrNotFdbqueue is returned by Tables for a connection that is not
	// the fdbqueue driver's, nor one of a wrapping driver (otelsql, say)
	// that exposes the connection it wraps.
	ErrNotFdbqueue = errors.New("fdbqueue: not a connection of the fdbqueue driver")
)

// Errors of the SQL text.
var (
	// ErrSyntax is returned for SQL that does not parse; a reserved word
	// used as a name is named, with how to quote it.
	ErrSyntax = parser.ErrSyntax
	// ErrUnsupported is returned for SQL that parses but is outside the
	// dialect: the error names it and what to use instead.
	ErrUnsupported = parser.ErrUnsupported
)

// Errors of statements.
var (
	// ErrNoTable is returned for a statement on a table that does not exist.
	ErrNoTable = exec.ErrNoTable
	// ErrTableExists is returned by CREATE TABLE without IF NOT EXISTS
	// when the table exists.
	ErrTableExists = exec.ErrTableExists
	// ErrUnknownColumn is returned for a column the table does not have.
	ErrUnknownColumn = exec.ErrUnknownColumn
	// ErrSchema is returned for a table definition the dialect refuses.
	ErrSchema = exec.ErrSchema
	// ErrValue is returned for a value a column cannot hold.
	ErrValue = exec.ErrValue
	// ErrArgs is returned for the wrong number or kind of arguments.
	ErrArgs = exec.ErrArgs
	// ErrStatement is returned for a statement the table's kind does not
	// support (ORDER BY priority on a FIFO queue, say).
	ErrStatement = exec.ErrStatement
	// ErrDuplicateID is returned, inside a *RowError naming the row, for
	// an INSERT that gives an id its table holds already, or one id twice.
	ErrDuplicateID = exec.ErrDuplicateID
	// ErrDuplicateKey is returned, as a *DuplicateKeyError inside a
	// *RowError naming the row, for an INSERT whose row holds the values
	// of a unique key that another row holds: in the table (leased and
	// delayed rows included), earlier in the same INSERT, or removed
	// within the key's window (UNIQUE (cols) FOR n unit). Nothing of the
	// statement was written. INSERT IGNORE skips such rows instead.
	ErrDuplicateKey = exec.ErrDuplicateKey
	// ErrUnreadableRow is returned for a stored row that cannot be decoded;
	// the error names the row and how to delete it.
	ErrUnreadableRow = exec.ErrUnreadableRow
	// ErrCatalog is returned when the stored table definitions are corrupt.
	ErrCatalog = exec.ErrCatalog
	// ErrPutBack is returned by Rows.Close (and Row.Scan) when the rows of
	// an autocommit FOR POP that the program did not read could not be put
	// back into their table (the database was closed, say): the error
	// names them; they are lost.
	ErrPutBack = exec.ErrPutBack
)

// RowError is a bad row of a multi-row INSERT, with its position: use
// errors.As. Nothing of the statement was written.
type RowError = exec.RowError

// DuplicateKeyError is the ErrDuplicateKey of a row, with the table, the
// unique key, and the id of the row holding the values (ID; Until, when
// that row was removed and the key's window keeps them taken): use
// errors.As, to UPDATE or DELETE that row, say.
type DuplicateKeyError = exec.DuplicateKeyError

// Errors of the embedded engine's file databases, and FoundationDB's limits.
var (
	// ErrLocked is returned (with kv/shared.ErrNoServer) when another
	// process holds a file: database and does not serve it to others
	// (an fdbqueue from before databases were shared) for 10 seconds.
	ErrLocked = embedded.ErrLocked
	// ErrNoDatabase is returned by file:DIR?mode=rw or mode=ro when DIR
	// holds no database, and by mode=rwc when DIR's parent does not exist.
	ErrNoDatabase = embedded.ErrNoDatabase
	// ErrReadOnlyDatabase is returned for a write to a file: database
	// opened with mode=ro.
	ErrReadOnlyDatabase = embedded.ErrReadOnly
	// ErrFailed is returned by every commit after a file: database's log
	// hit an I/O error (a full disk, say), wrapping that error; reads go
	// on, and reopening the database makes it writable again.
	ErrFailed = embedded.ErrFailed
	// ErrTransactionTooLarge is returned when a transaction writes more
	// than 10,000,000 bytes (FoundationDB's limit).
	ErrTransactionTooLarge = kv.ErrTransactionTooLarge
	// ErrTransactionTooOld is returned when a transaction runs for more
	// than 5 seconds (FoundationDB's limit).
	ErrTransactionTooOld = kv.ErrTransactionTooOld
)

// IsRetryable reports whether err means the transaction failed on a conflict
// (or another transient condition) and nothing was written, so running the
// whole transaction again is safe. ExecuteTx does that.
func IsRetryable(err error) bool {
	return kv.IsRetryableNotCommitted(err)
}

// IsMaybeCommitted reports whether err means the commit's outcome is unknown
// (FoundationDB's commit_unknown_result, 1021): the transaction may or may
// not have been applied. Autocommit INSERTs are exactly-once through such
// errors and only return one when their retries end (the retry limit, or
// the context); an autocommit pop never does: one that cannot retry is
// settled first, putting back what it took, and returns the error that
// stopped it, having taken nothing. An explicit transaction's COMMIT
// returns it as it is, and only the application can tell whether to run it
// again.
func IsMaybeCommitted(err error) bool {
	return kv.IsMaybeCommitted(err)
}
