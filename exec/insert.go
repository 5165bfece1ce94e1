package exec

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/parser"
	"github.com/fdbqueue/fdbqueue/queues"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// MaxRowSize is the most bytes a row takes stored: one FoundationDB value
// (kv.MaxValueSize) holds it. Each byte of a TEXT or BLOB takes one byte,
// a zero byte two (it is escaped in the row's packed tuple; the queue's
// record holds the row as it is), a number at most nine; rowTooLarge says
// which column is large.
const MaxRowSize = kv.MaxValueSize

// rowBlock is the size of the blocks an INSERT packs its rows into, at
// most: a block holds at least one row.
const rowBlock = 16 << 10

// insert pushes an INSERT's rows, all of them checked first.
func (e *Executor) insert(tr kv.Transaction, st *parser.Insert, b *bound) (*Result, error) {
	s, err := e.stmt(tr, st.Table, b)
	if err != nil {
		return nil, err
	}
	t := s.t
	bufs := insertPool.Get().(*insertBufs)
	defer bufs.put()
	targets := bufs.targetsFor(len(t.Columns))
	visAt := -1 // the position of _visible_at among the values, if given
	// byID holds, when the statement gives ids, each id's row (1-based),
	// to name the row whose id is given twice or is in the table.
	var byID map[int64]int
	if st.Columns == nil {
		for i := range t.Columns {
			targets = append(targets, i)
		}
	} else {
		for _, name := range st.Columns {
			i, err := t.column(name)
			if err != nil {
				return nil, err
			}
			if i == colLease {
				return nil, readOnlyColumn(t.columnDef(i).Name)
			}
			if slices.Contains(targets, i) { // a few columns: no map
				return nil, fmt.Errorf("%w: column %s is given twice", ErrValue, name)
			}
			switch i {
			case colVisibleAt:
				visAt = len(targets)
			case colID:
				byID = map[int64]int{}
			}
			targets = append(targets, i)
		}
	}
	// Every row is converted and checked before any is written, so that a
	// bad row leaves nothing of the statement behind, also inside an
	// explicit transaction.
	items := bufs.itemsFor(len(st.Rows))
	// One row's scratch, reused: a row is packed before the next is read.
	nc := len(t.Columns)
	cells, flags := bufs.rowFor(nc)
	full, tup := cells[:nc:nc], tuple.Tuple(cells[nc:])
	set, raw := flags[:nc:nc], flags[nc:]
	resources := bufs.resourcesFor(len(st.Rows) * len(t.Resources))
	uniq := s.newUniqueRows(len(st.Rows))
	// The rows are packed one after the other into blocks of a few rows'
	// size: an allocation a block, not one a row.
	var block []byte
	packed := 0 // the last row's packed size, to size the next one's room
	for r, vals := range st.Rows {
		if len(vals) != len(targets) {
			return nil, &RowError{r + 1, fmt.Errorf("%w: %d values for %d columns", ErrValue, len(vals), len(targets))}
		}
		clear(flags)
		item := queues.Item{ID: b.ids[r]}
		var errText any // _error, if given (errtext.go)
		for j, i := range targets {
			var v any
			var err error
			if vals[j].Kind == parser.ValueArg {
				v = b.value(vals[j])
				// A key's values are packed on their own
				// (uniqueValues), as their columns' types.
				if i >= 0 && uniq == nil && textBytes(&t.Columns[i], v) {
					full[i], set[i], raw[i] = v, true, true
					continue
				}
				v, err = convertRead(t.columnDef(i), v)
			} else {
				v, err = b.convert(t.columnDef(i), vals[j])
			}
			if err != nil {
				return nil, &RowError{r + 1, err}
			}
			if i == colError {
				if errText, err = checkError(v); err != nil {
					return nil, &RowError{r + 1, err}
				}
				continue
			}
			if done, err := setPseudo(&item, i, v); err != nil {
				return nil, &RowError{r + 1, err}
			} else if done {
				continue
			}
			if j == visAt {
				if v == nil {
					return nil, &RowError{r + 1, fmt.Errorf("%w: _visible_at cannot be NULL (NOW() for at once)", ErrValue)}
				}
				item.VisibleAt = v.(time.Time)
				if err := checkVisibleAt(item.VisibleAt); err != nil {
					return nil, &RowError{r + 1, err}
				}
				continue
			}
			full[i], set[i] = v, true
		}
		if byID != nil {
			if _, ok := byID[item.ID]; ok {
				return nil, &RowError{r + 1, fmt.Errorf("%w: id %d is given twice", ErrDuplicateID, item.ID)}
			}
			byID[item.ID] = r + 1
		}
		for i := range t.Columns {
			c := &t.Columns[i]
			if !set[i] {
				full[i] = c.Default
			}
			if full[i] == nil && (c.NotNull || i == t.Priority || slices.Contains(t.Resources, i)) {
				return nil, &RowError{r + 1, fmt.Errorf("%w: column %s cannot be NULL", ErrValue, c.Name)}
			}
			tup[i] = encodeValue(full[i])
		}
		if t.Priority >= 0 {
			item.Priority = full[t.Priority].(int64)
		}
		if len(t.Resources) > 0 {
			start := len(resources)
			for _, i := range t.Resources {
				resources = append(resources, full[i].(int64))
			}
			item.Resources = resources[start:len(resources):len(resources)]
		}
		packing := tup
		if errText != nil {
			packing = append(tup[:len(tup):len(tup)], errText)
		}
		if room := max(packed+16, 16*len(tup)); cap(block)-len(block) < room {
			block = bufs.block(min(room*(len(st.Rows)-r), max(room, rowBlock)), room)
		}
		start := len(block)
		var err error
		if block, err = packRow(block, packing, raw); err != nil {
			return nil, &RowError{r + 1, err}
		}
		item.Value = block[start:len(block):len(block)]
		packed = len(item.Value)
		if size := queues.MaxRecordSize(item.Value, len(item.Resources)); size > MaxRowSize {
			return nil, &RowError{r + 1, rowTooLarge(t, full, size)}
		}
		if err := uniq.add(full); err != nil {
			return nil, &RowError{r + 1, err}
		}
		items = append(items, item)
	}
	// Autocommit: one receipt under the statement's token makes the whole
	// INSERT exactly-once; a retry whose first attempt was applied pushes
	// nothing and reports the same result, as the ids were made before the
	// first attempt. In an explicit transaction (no token) no receipt is
	// needed: a retry of the transaction runs the INSERT again with new ids
	// (or the ids it gives). Unique keys are checked in the same round of
	// reads (unique.go).
	if b.dry {
		return &Result{}, nil
	}
	n, last, err := s.push(items, uniq, st.Ignore)
	for try := 0; err != nil && byID == nil && try < maxIDRetries; try++ {
		// An id the counter handed out is in the table: one an INSERT
		// gave (a restore's). The push wrote nothing: push again, with
		// ids above the table's (queues.IDs).
		var dup *queues.DuplicateIDError
		if !errors.As(err, &dup) {
			break
		}
		if err = e.idsPast(s.tr, t.Queue, dup.ID, b.ids); err != nil {
			return nil, err
		}
		for i := range items {
			items[i].ID = b.ids[i]
		}
		n, last, err = s.push(items, uniq, st.Ignore)
	}
	if err != nil {
		var dup *queues.DuplicateIDError
		if errors.As(err, &dup) && byID[dup.ID] > 0 {
			return nil, &RowError{byID[dup.ID], fmt.Errorf("%w: table %s holds a row with id %d (leave id out, and one is assigned)", ErrDuplicateID, t.Name, dup.ID)}
		}
		return nil, err
	}
	if top, ok := maxAssignable(byID); ok {
		// Ids given (a restore's, or dead letters copied back with
		// theirs): the ids assigned from now on go past them, as a
		// client's that gives them first and assigns after expects.
		if err := e.ids.Past(s.tr.Context(), top); err != nil {
			return nil, err
		}
	}
	return &Result{RowsAffected: n, LastInsertID: last}, nil
}

// maxAssignable returns the largest of the given ids, the keys of m,
// that the counter could assign (below queues.MaxAssignedID): the ids
// an earlier version drew lie above, where the counter never goes.
func maxAssignable(m map[int64]int) (int64, bool) {
	top, ok := int64(0), false
	for id := range m {
		if id < queues.MaxAssignedID && id > top {
			top, ok = id, true
		}
	}
	return top, ok
}

// maxIDRetries bounds the pushes of an INSERT again with new ids, after
// it found ids it was handed in its table: each goes past the table's
// largest assignable id (Queue.IDFloor), so that a second is needed only
// when another client gives ids meanwhile.
const maxIDRetries = 8

// idsPast refills ids, those of a push into q in tr that found id there,
// with ids above q's (Queue.IDFloor).
func (e *Executor) idsPast(tr kv.Transaction, q *queues.Queue, id int64, ids []int64) error {
	floor, err := q.IDFloor(tr, id)
	if err != nil {
		return err
	}
	ctx := tr.Context()
	if err := e.ids.Past(ctx, floor); err != nil {
		return err
	}
	return e.ids.Fill(ctx, ids)
}

// insertBufs are an INSERT's slices of items, resources and packed rows,
// reused by the next INSERT once the rows are pushed: the transaction's
// writes copy what they keep, and nothing else holds them. Made afresh,
// they were 200 of the 1,200 bytes a row of a 100-row INSERT allocated.
type insertBufs struct {
	targets   []int
	cells     []any  // a row's values and their tuple, as many of each
	flags     []bool // a row's set and raw flags, as many of each
	items     []queues.Item
	resources []int64
	rows      []byte // the first block of packed rows
	taken     bool   // rows is the statement's
	n         int    // the items the statement took
	// spilled is the bytes of the blocks the statement took after rows:
	// put grows rows by as much, so that the next statement of the same
	// rows packs them all into it. fdbqueue bench's 100-row INSERTs
	// outgrew the first block's estimate (16 bytes a column) and took a
	// block of 6 kB a statement.
	spilled int
}

var insertPool = sync.Pool{New: func() any { return new(insertBufs) }}

// pooledRows bounds the rows, and pooledInsert the bytes of packed rows,
// an insertBufs keeps.
const (
	pooledRows   = 1024
	pooledInsert = 64 << 10
)

func (b *insertBufs) targetsFor(n int) []int {
	if cap(b.targets) < n {
		b.targets = make([]int, 0, n)
	}
	return b.targets[:0]
}

// rowFor returns a row's scratch for a table of n columns: cells for its
// values and their tuple encoding, all nil, and flags for its values, set
// and raw (packRow), all false.
func (b *insertBufs) rowFor(n int) ([]any, []bool) {
	if cap(b.cells) < 2*n {
		b.cells, b.flags = make([]any, 2*n), make([]bool, 2*n)
	}
	b.cells, b.flags = b.cells[:2*n], b.flags[:2*n]
	return b.cells, b.flags
}

// packRow appends the tuple encoding of row to dst, as row.AppendPack
// does, but for the cells raw marks (textBytes): []byte given for TEXT
// columns, packed as the strings they hold, with no string made of them.
func packRow(dst []byte, row tuple.Tuple, raw []bool) ([]byte, error) {
	isRaw := func(i int) bool { return i < len(raw) && raw[i] }
	for i := 0; i < len(row); {
		if isRaw(i) {
			dst = tuple.AppendStringBytes(dst, row[i].([]byte))
			i++
			continue
		}
		j := i + 1
		for j < len(row) && !isRaw(j) {
			j++
		}
		var err error
		if dst, err = row[i:j].AppendPack(dst); err != nil {
			return nil, err
		}
		i = j
	}
	return dst, nil
}

func (b *insertBufs) itemsFor(n int) []queues.Item {
	if cap(b.items) < n {
		b.items = make([]queues.Item, 0, n)
	}
	b.n = n
	return b.items[:0]
}

func (b *insertBufs) resourcesFor(n int) []int64 {
	if cap(b.resources) < n {
		b.resources = make([]int64, 0, n)
	}
	return b.resources[:0]
}

// block returns an empty block for packed rows, of size bytes, or the
// pooled one if it is the statement's first and holds room.
func (b *insertBufs) block(size, room int) []byte {
	if !b.taken && cap(b.rows) >= room {
		b.taken = true
		return b.rows[:0]
	}
	blk := make([]byte, 0, size)
	if !b.taken {
		b.taken, b.rows = true, blk
	} else {
		b.spilled += size
	}
	return blk
}

// put returns b to the pool, or lets go of it if it grew large (reset).
func (b *insertBufs) put() {
	if b.reset() {
		insertPool.Put(b)
	}
}

// reset readies b for the next statement, its items cleared (they point
// into rows and resources), and reports whether it is small enough to
// keep.
func (b *insertBufs) reset() bool {
	clear(b.items[:b.n])
	clear(b.cells)
	b.taken = false
	if cap(b.items) > pooledRows || cap(b.resources) > 8*pooledRows || cap(b.rows) > pooledInsert || cap(b.cells) > pooledRows {
		return false
	}
	if n := cap(b.rows) + b.spilled; b.spilled > 0 && n <= pooledInsert {
		b.rows = make([]byte, 0, n)
	}
	b.spilled = 0
	return true
}

// rowTooLarge is the error for a row of vals that takes size bytes stored,
// more than MaxRowSize: it names the largest column and what it holds.
func rowTooLarge(t *Table, vals []any, size int) error {
	big, bigLen, zeros := -1, 0, 0
	for i, v := range vals {
		var n, z int
		switch x := v.(type) {
		case string:
			n, z = len(x), strings.Count(x, "\x00")
		case []byte:
			n, z = len(x), bytes.Count(x, []byte{0})
		default:
			continue
		}
		if n+z > bigLen+zeros {
			big, bigLen, zeros = i, n, z
		}
	}
	msg := fmt.Sprintf("the row takes %d bytes stored; a row holds at most %d", size, MaxRowSize)
	if big >= 0 {
		msg += fmt.Sprintf(": column %s holds %d bytes", t.Columns[big].Name, bigLen)
		if zeros > 0 {
			msg += fmt.Sprintf(", %d of them zero bytes, which take 2 bytes each stored", zeros)
		}
	}
	return fmt.Errorf("%w: %s", ErrValue, msg)
}
