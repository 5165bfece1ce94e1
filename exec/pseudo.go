package exec

import (
	"fmt"
	"strings"
	"time"

	"github.com/fdbqueue/fdbqueue/parser"
	"github.com/fdbqueue/fdbqueue/queues"
)

// Pseudo-columns: every table has, besides its declared columns, id and
// the _visible_at, _lease and _attempts of its queue items (queues.Item),
// and _error, the last error a worker recorded, kept with the row's values
// (see errtext.go). INSERT may give id, _visible_at, _attempts and _error
// (a restore from a backup keeps them); UPDATE writes _visible_at and
// _error; FOR LEASE sets _lease. Table.column returns them as these
// negative indexes.
const (
	colID        = -1
	colVisibleAt = -2
	colLease     = -3
	colAttempts  = -4
	colError     = -5
)

var pseudoColumns = map[int]*Column{
	colID:        {Name: "id", Type: parser.TypeInt, NotNull: true},
	colVisibleAt: {Name: parser.ColVisibleAt, Type: parser.TypeTimestamp, NotNull: true},
	colLease:     {Name: parser.ColLease, Type: parser.TypeInt, NotNull: true},
	colAttempts:  {Name: parser.ColAttempts, Type: parser.TypeInt, NotNull: true},
	colError:     {Name: parser.ColError, Type: parser.TypeText},
}

// pseudoNames lists the pseudo-columns, for errors.
const pseudoNames = "id, _visible_at, _lease, _attempts, _error"

// pseudoColumn returns the index of the pseudo-column name.
func pseudoColumn(name string) (int, bool) {
	// Every pseudo-column but id starts with _: a declared column's name
	// is told apart without ranging over the map, which took 2% of a
	// single-row INSERT's time (4 lookups a statement).
	if !strings.HasPrefix(name, "_") && !strings.EqualFold(name, "id") {
		return 0, false
	}
	for i, c := range pseudoColumns {
		if strings.EqualFold(c.Name, name) {
			return i, true
		}
	}
	return 0, false
}

// columnDef returns the column at index i, declared or pseudo.
func (t *Table) columnDef(i int) *Column {
	if i < 0 {
		return pseudoColumns[i]
	}
	return &t.Columns[i]
}

// value returns the value of column i (declared or pseudo) of r.
func (r row) value(i int) any {
	switch i {
	case colID:
		return r.item.ID
	case colVisibleAt:
		return visibleAt(r.item)
	case colLease:
		return r.item.Lease
	case colAttempts:
		return r.item.Attempts
	case colError:
		return r.errText
	}
	return r.vals[i]
}

// visibleAt is an item's _visible_at: the zero time for an item that was
// never delayed or leased (it has always been due).
func visibleAt(it queues.Item) time.Time {
	if it.VisibleAt.IsZero() {
		return time.Time{}
	}
	return it.VisibleAt.UTC()
}

// checkVisibleAt reports a _visible_at that no row can have: a delay
// ends by queues.MaxVisibleAt, and the zero time is "at once".
func checkVisibleAt(t time.Time) error {
	if !queues.ValidVisibleAt(t) {
		return fmt.Errorf("%w: _visible_at %s is out of range: it is %s", ErrValue, timeText(t), queues.VisibleAtRange)
	}
	return nil
}

// checkLeaseEnd reports a lease of d from now that would end after
// queues.MaxVisibleAt: the row could not stay hidden that long.
func checkLeaseEnd(d time.Duration, now time.Time) error {
	if end := now.Add(d); end.After(queues.MaxVisibleAt) {
		return fmt.Errorf("%w: FOR LEASE %v would end at %s, after %s, the latest a lease can end", ErrValue, d, timeText(end), timeText(queues.MaxVisibleAt))
	}
	return nil
}

// readOnlyColumn is the error for a statement that writes a pseudo-column
// it cannot: _lease, and in an UPDATE _attempts.
func readOnlyColumn(name string) error {
	return fmt.Errorf("%w: %s is read-only: FOR LEASE sets it (INSERT may give id, _visible_at, _attempts and _error; UPDATE t SET _visible_at = v, _error = v WHERE id = v [AND _lease = v] writes _visible_at and _error)", ErrValue, name)
}

// setPseudo sets, from v (converted to column i's type), the pseudo-column
// i of an INSERT's item, and reports whether it did: id (a positive integer,
// which the table must not hold) and _attempts (0 or more: a lease counts
// on from there, and MAX_ATTEMPTS with it). It reports false for a declared
// column and for _visible_at, which insert checks (checkVisibleAt).
func setPseudo(it *queues.Item, i int, v any) (bool, error) {
	switch i {
	case colID:
		id, ok := v.(int64)
		switch {
		case !ok:
			return false, fmt.Errorf("%w: id cannot be NULL (leave id out, and one is assigned)", ErrValue)
		case id <= 0:
			return false, fmt.Errorf("%w: id %d: ids are positive (leave id out, and one is assigned)", ErrValue, id)
		}
		it.ID = id
	case colAttempts:
		n, ok := v.(int64)
		switch {
		case !ok:
			return false, fmt.Errorf("%w: _attempts cannot be NULL (leave it out for 0)", ErrValue)
		case n < 0:
			return false, fmt.Errorf("%w: _attempts %d: attempts are 0 or more", ErrValue, n)
		}
		it.Attempts = n
	default:
		return false, nil
	}
	return true, nil
}

// leaseOf converts FOR LEASE's value (a literal, or the argument bound to
// its placeholder) to a lease: a time.Duration, or a number of seconds.
func leaseOf(v any) (time.Duration, error) {
	var secs float64
	switch x := v.(type) {
	case time.Duration:
		if x <= 0 {
			return 0, fmt.Errorf("%w: FOR LEASE %v: a lease lasts a positive duration; bind a time.Duration or a number of seconds above 0", ErrValue, x)
		}
		return x, nil
	case int64:
		secs = float64(x)
	case float64:
		secs = x
	default:
		return 0, fmt.Errorf("%w: FOR LEASE's argument is %s %v; bind a time.Duration or a number of seconds (an int or a float) above 0", ErrArgs, typeName(v), short(v))
	}
	d, err := parser.LeaseDuration(secs)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrValue, err)
	}
	return d, nil
}

// convert converts the value of a literal, placeholder or NOW() to col's
// type.
func (b *bound) convert(col *Column, v parser.Value) (any, error) {
	if v.Kind != parser.ValueNow {
		return convert(col, b.value(v))
	}
	at, err := b.nowValue(v)
	if err != nil {
		return nil, err
	}
	return convert(col, at)
}

// nowValue returns NOW() [+|- INTERVAL n UNIT] at the statement's time.
func (b *bound) nowValue(v parser.Value) (any, error) {
	at := b.now
	if v.Interval != nil {
		var n float64
		switch x := b.value(*v.Interval).(type) {
		case int64:
			n = float64(x)
		case float64:
			n = x
		default:
			return nil, fmt.Errorf("%w: INTERVAL %s %v: the interval is a number", ErrArgs, typeName(x), short(x))
		}
		d := n * float64(v.Unit)
		if d != d || d > 1<<62 || d < -(1<<62) {
			return nil, fmt.Errorf("%w: INTERVAL %v: out of range: NOW() moves by at most 2^62 nanoseconds, about 146 years", ErrValue, n)
		}
		at = at.Add(time.Duration(d))
	}
	return at.UTC(), nil
}
