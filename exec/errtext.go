package exec

import (
	"fmt"

	"github.com/fdbqueue/fdbqueue/queues"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// _error: the last error a worker recorded for a row.
//
// A row's _error is kept with its values: the packed tuple of its declared
// columns, followed by the _error when it is not NULL (decodeRow). A row
// never given one is stored as before and costs nothing more to read, and
// whatever moves a row's value moves its _error: an UPDATE of its
// priority, a lease, a pop's receipt, a put-back, and the move to the
// dead-letter table, which keeps it.
//
// It is TEXT (valid UTF-8) of at most maxErrorBytes bytes; a longer one is
// refused with ErrValue, not cut, so that what a program reads back is
// what it wrote. UPDATE t SET [_visible_at = v,] _error = v WHERE id = v
// [AND _lease = v] writes it (a release that says why the attempt failed),
// and INSERT may give it (a restore, or a redrive that copies it). It
// stays until the next such UPDATE overwrites it, NULL clearing it:
// across leases, and into the dead letters.

// maxErrorBytes is the longest _error: a message, not a log (a stack trace
// belongs in the program's logs); and small beside a row's 100,000 bytes.
const maxErrorBytes = 1000

// checkError returns v, a value converted to TEXT, if it can be an _error:
// NULL, or at most maxErrorBytes bytes.
func checkError(v any) (any, error) {
	if s, ok := v.(string); ok && len(s) > maxErrorBytes {
		return nil, fmt.Errorf("%w: _error of %d bytes: an _error holds at most %d bytes (record the message, and keep traces in your logs)", ErrValue, len(s), maxErrorBytes)
	}
	return v, nil
}

// withError returns the stored value of a row of t, value, with its
// _error set to errText (NULL: none), or ErrValue if the row would no
// longer fit in a record.
func withError(t *Table, it queues.Item, errText any) ([]byte, error) {
	tup, err := tuple.Unpack(it.Value)
	if err != nil || len(tup) != len(t.Columns) && len(tup) != len(t.Columns)+1 {
		_, err := decodeRow(t, it) // says why it is unreadable
		return nil, err
	}
	tup = tup[:len(t.Columns)]
	if errText != nil {
		tup = append(tup, errText)
	}
	v, err := tup.PackWithError()
	if err != nil {
		return nil, err
	}
	if size := queues.MaxRecordSize(v, len(it.Resources)); size > MaxRowSize {
		return nil, fmt.Errorf("%w: with its _error the row would take %d bytes stored; a row holds at most %d (record a shorter _error)", ErrValue, size, MaxRowSize)
	}
	return v, nil
}
