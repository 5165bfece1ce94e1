package exec

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/parser"
	"github.com/fdbqueue/fdbqueue/queues"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// Unique keys: CREATE TABLE t (..., UNIQUE [KEY|INDEX] [name] (cols) [FOR
// n unit]), and a column's UNIQUE [KEY].
//
// No two rows of t hold the same values in a unique key's columns: every
// row is in the table until it is removed, leased and delayed rows
// included; t_dead (MAX_ATTEMPTS) is another table, without t's keys. A
// row with NULL in one of a key's columns is not in that key (NULL equals
// nothing, as in MySQL). Values compare as stored: TEXT byte for byte (as
// utf8mb4_bin), -0.0 as 0.0, a TIMESTAMP to the nanosecond.
//
// The index is a key per row and unique key under the table's queue
// (queues/layout.go, tag 15): P (15, k, values...) -> the packed id of the
// row holding them, kept in the transaction that adds or removes the row:
//
//   - INSERT reads each new row's entries serializably, issued before
//     PushSome's reads and so answered in the same round trip on
//     FoundationDB, and PushSome's keep decides, before anything is
//     written, which rows go in: an entry found (or a row earlier in the
//     statement with the same values) is a duplicate, ErrDuplicateKey
//     inside a RowError naming the row, or, with INSERT IGNORE, a row
//     skipped. The reads conflict exactly with a concurrent INSERT of the
//     same values (which writes the entry) and with the removal of the row
//     holding them (which clears it), never with INSERTs of other values.
//     Then it writes the entries of the rows it pushed. In autocommit
//     PushSome's receipt records which rows went in, so that a retry after
//     commit_unknown_result reports them instead of finding its own
//     entries (queues.PushSome).
//   - Every removal frees its row's entries in its transaction: FOR POP
//     and DELETE (the plans, wrapped in uniqueFree), a lease moving a row
//     to t_dead (moveDead), DELETE FROM t (its range clear of the index),
//     DROP TABLE (the table's range). An entry is cleared with
//     CompareAndClear of the row's id: no read, no conflict, and never the
//     entry of another row.
//   - A key with a window (FOR n unit) stays taken for the window after its
//     row is removed: the removal writes P (16, k, bucket, values...) ->
//     (until, id), bucket = until / window, and INSERT reads the two
//     buckets that can hold an until after its time, with its other reads.
//     Each removal clears the buckets that ended, with one blind range
//     clear, as receipts expire. DELETE FROM t frees the keys of the rows
//     it removes at once, window or not: it reads no rows.
//   - A pop's rows that go back to the table (PutBack, settle) take their
//     entries back when no other row took them meanwhile; one that did
//     keeps them, and the row put back is in the table without its
//     entries, a duplicate, until one of the two is removed: the window
//     between a pop's commit and the put-back of its unread rows is
//     SKIP LOCKED's relaxation again (design.md).

// MaxUniqueKeys bounds the unique keys of a table: each costs an INSERT a
// read and a write a row, and a removal a write.
const MaxUniqueKeys = 8

// MaxUniqueColumns bounds the columns of a unique key, as MySQL does.
const MaxUniqueColumns = 16

// UniqueKey is a unique key of a table.
type UniqueKey struct {
	Name string
	// Columns are the indexes of the key's columns, in the key's order.
	Columns []int
	// Window is how long the key stays taken after its row is removed (0:
	// it is free at once).
	Window time.Duration
}

// DuplicateKeyError is the ErrDuplicateKey of an INSERT's row whose values
// in a unique key are held by another row (errors.Is(err, ErrDuplicateKey)
// holds; errors.As finds the row that holds them). INSERT returns it
// inside a *RowError naming the row of the statement.
type DuplicateKeyError struct {
	Table   string
	Key     string   // the unique key's name
	Columns []string // its columns
	Values  string   // the values, as SQL literals, shortened
	// ID is the row holding the values: in the table, in an earlier row
	// of the same INSERT (Earlier), or removed, its key taken until Until.
	ID      int64
	Earlier bool
	Until   time.Time
}

func (e *DuplicateKeyError) Error() string {
	key := fmt.Sprintf("unique key %s (%s) of %s", e.Key, strings.Join(e.Columns, ", "), e.Table)
	var held string
	switch {
	case e.Earlier:
		held = fmt.Sprintf("%s is held by row id %d, given earlier in the same INSERT", e.Values, e.ID)
	case !e.Until.IsZero():
		held = fmt.Sprintf("%s was held by row id %d, removed, and stays taken until %s (the key's window)", e.Values, e.ID, timeText(e.Until))
	default:
		held = fmt.Sprintf("%s is held by row id %d", e.Values, e.ID)
	}
	return fmt.Sprintf("%v: %s: %s (INSERT IGNORE skips such rows)", ErrDuplicateKey, key, held)
}

// Is makes errors.Is(err, ErrDuplicateKey) true.
func (e *DuplicateKeyError) Is(target error) bool { return target == ErrDuplicateKey }

// addUnique checks the unique keys of a CREATE TABLE and adds them to t,
// whose columns are set, naming the unnamed ones after their first column
// (with _2, _3, ... when taken), as MySQL does.
func (t *Table) addUnique(keys []parser.UniqueKey) error {
	if len(keys) > MaxUniqueKeys {
		return fmt.Errorf("%w: %d unique keys; a table has at most %d (each costs an INSERT a read a row)", ErrSchema, len(keys), MaxUniqueKeys)
	}
	names := map[string]bool{}
	if t.IndexName != "" {
		names[strings.ToLower(t.IndexName)] = true
	}
	for _, pk := range keys {
		if pk.Name == "" {
			continue
		}
		if names[strings.ToLower(pk.Name)] {
			return fmt.Errorf("%w: two keys are named %s", ErrSchema, pk.Name)
		}
		names[strings.ToLower(pk.Name)] = true
	}
	for _, pk := range keys {
		u := UniqueKey{Name: pk.Name, Window: pk.Window}
		what := "UNIQUE (" + strings.Join(pk.Columns, ", ") + ")"
		if len(pk.Columns) > MaxUniqueColumns {
			return fmt.Errorf("%w: %s has %d columns; a unique key has at most %d", ErrSchema, what, len(pk.Columns), MaxUniqueColumns)
		}
		for _, name := range pk.Columns {
			i, err := t.column(name)
			switch {
			case err != nil:
				return fmt.Errorf("%w: %s names %s, which is not a column", ErrSchema, what, name)
			case i == colID:
				return fmt.Errorf("%w: %s: id is unique already, every row's", ErrSchema, what)
			case i < 0:
				return fmt.Errorf("%w: %s: %s is a pseudo-column, which leases change; a unique key covers declared columns", ErrSchema, what, name)
			case i == t.Priority:
				return fmt.Errorf("%w: %s: UPDATE moves a row to another priority without checking a key; a unique key covers other columns", ErrSchema, what)
			case slices.Contains(u.Columns, i):
				return fmt.Errorf("%w: %s names %s twice", ErrSchema, what, name)
			}
			u.Columns = append(u.Columns, i)
		}
		for _, other := range t.Unique {
			if slices.Equal(other.Columns, u.Columns) {
				return fmt.Errorf("%w: %s: key %s covers the same columns", ErrSchema, what, other.Name)
			}
		}
		if u.Name == "" {
			base := t.Columns[u.Columns[0]].Name
			u.Name = base
			for n := 2; names[strings.ToLower(u.Name)]; n++ {
				u.Name = fmt.Sprintf("%s_%d", base, n)
			}
			names[strings.ToLower(u.Name)] = true
		}
		t.Unique = append(t.Unique, u)
	}
	return nil
}

// encodeUnique is the unique keys' part of a packed schema.
func (t *Table) encodeUnique() tuple.Tuple {
	keys := tuple.Tuple{}
	for _, u := range t.Unique {
		cols := tuple.Tuple{}
		for _, c := range u.Columns {
			cols = append(cols, int64(c))
		}
		keys = append(keys, tuple.Tuple{u.Name, cols, int64(u.Window)})
	}
	return keys
}

// decodeUnique reads the unique keys' part of a packed schema.
func (t *Table) decodeUnique(el any) error {
	keys, ok := el.(tuple.Tuple)
	if !ok {
		return fmt.Errorf("%w: unreadable unique keys", ErrCatalog)
	}
	for _, ke := range keys {
		k, ok := ke.(tuple.Tuple)
		if !ok || len(k) != 3 {
			return fmt.Errorf("%w: unreadable unique key", ErrCatalog)
		}
		var u UniqueKey
		u.Name, _ = k[0].(string)
		w, _ := k[2].(int64)
		u.Window = time.Duration(w)
		cols, _ := k[1].(tuple.Tuple)
		for _, c := range cols {
			i, _ := c.(int64)
			if i < 0 || int(i) >= len(t.Columns) {
				return fmt.Errorf("%w: bad unique key column", ErrCatalog)
			}
			u.Columns = append(u.Columns, int(i))
		}
		if len(u.Columns) == 0 || u.Window < 0 {
			return fmt.Errorf("%w: bad unique key %s", ErrCatalog, u.Name)
		}
		t.Unique = append(t.Unique, u)
	}
	return nil
}

// uniqueValues packs the values of row vals (declared columns, as
// converted) in key u, or returns nil when one is NULL (the row is not in
// the key).
func uniqueValues(u *UniqueKey, vals []any) []byte {
	tup := make(tuple.Tuple, len(u.Columns))
	for j, c := range u.Columns {
		v := vals[c]
		if v == nil {
			return nil
		}
		if f, ok := v.(float64); ok && f == 0 {
			v = 0.0 // -0.0 equals 0.0
		}
		tup[j] = encodeValue(v)
	}
	return tup.Pack()
}

// uniqueOfItem returns the values of a stored row in each of t's unique
// keys (nil for a key it is not in), or nil if the row does not decode
// (not written by INSERT: it has no entries).
func uniqueOfItem(t *Table, it queues.Item) [][]byte {
	tup, err := tuple.Unpack(it.Value)
	if err != nil || len(tup) != len(t.Columns) && len(tup) != len(t.Columns)+1 {
		return nil
	}
	tup = tup[:len(t.Columns)] // an _error may follow (errtext.go)
	vals := make([]any, len(tup))
	for _, u := range t.Unique {
		for _, c := range u.Columns {
			if vals[c], err = decodeValue(t.Columns[c].Type, tup[c]); err != nil {
				return nil
			}
		}
	}
	out := make([][]byte, len(t.Unique))
	for k := range t.Unique {
		out[k] = uniqueValues(&t.Unique[k], vals)
	}
	return out
}

// bucketOf is the bucket of a window entry whose until is until (unix
// nanoseconds), for a key whose window is w.
func bucketOf(until int64, w time.Duration) int64 { return until / int64(w) }

// uniqueRows are an INSERT's rows' values in its table's unique keys, and
// the reads of their entries.
type uniqueRows struct {
	s *stmtCtx
	// values[r][k] are row r's values in key k, packed (nil: not in it),
	// keys[r][k] their entry's key, and shown[r][k] the values as SQL
	// literals, for errors.
	values, keys [][][]byte
	shown        [][]string
	// live[r][k] reads the entry keys[r][k]; until[r][k] the window
	// entries of the two buckets that can hold an until after the
	// statement's time.
	live  [][]kv.FutureValue
	until [][][2]kv.FutureValue
}

// newUniqueRows starts an INSERT's unique rows: nil when s's table has no
// unique key.
func (s *stmtCtx) newUniqueRows(n int) *uniqueRows {
	if len(s.t.Unique) == 0 {
		return nil
	}
	return &uniqueRows{s: s, values: make([][][]byte, 0, n), keys: make([][][]byte, 0, n), shown: make([][]string, 0, n)}
}

// add adds the next row, whose declared columns' values are vals, and
// checks that its keys fit in a key of the store.
func (u *uniqueRows) add(vals []any) error {
	if u == nil {
		return nil
	}
	t := u.s.t
	row := make([][]byte, len(t.Unique))
	keys := make([][]byte, len(t.Unique))
	shown := make([]string, len(t.Unique))
	for k := range t.Unique {
		uk := &t.Unique[k]
		if row[k] = uniqueValues(uk, vals); row[k] == nil {
			continue
		}
		lits := make([]string, len(uk.Columns))
		for j, c := range uk.Columns {
			lits[j] = short(sqlLiteral(vals[c]))
		}
		shown[k] = "(" + strings.Join(lits, ", ") + ")"
		keys[k] = t.Queue.UniqueKey(nil, k, row[k])
		size := len(keys[k])
		if uk.Window > 0 {
			size = len(t.Queue.UniqueUntilKey(nil, k, math.MaxInt64, row[k]))
		}
		if size > kv.MaxKeySize {
			return fmt.Errorf("%w: unique key %s (%s) of %s: the row's values in it take %d bytes packed, and the key %d; a key holds at most %d bytes (FoundationDB's limit): key a shorter value (a hash of a long one, say)",
				ErrValue, uk.Name, strings.Join(u.columnNames(uk), ", "), t.Name, len(row[k]), size, kv.MaxKeySize)
		}
	}
	u.values = append(u.values, row)
	u.keys = append(u.keys, keys)
	u.shown = append(u.shown, shown)
	return nil
}

func (u *uniqueRows) columnNames(uk *UniqueKey) []string {
	names := make([]string, len(uk.Columns))
	for j, c := range uk.Columns {
		names[j] = u.s.t.Columns[c].Name
	}
	return names
}

// read issues the reads of the rows' entries, serializable, without
// waiting for them.
func (u *uniqueRows) read() {
	tr, t, now := u.s.tr, u.s.t, u.s.b.now.UnixNano()
	u.live = make([][]kv.FutureValue, len(u.values))
	u.until = make([][][2]kv.FutureValue, len(u.values))
	for r, row := range u.values {
		u.live[r] = make([]kv.FutureValue, len(row))
		u.until[r] = make([][2]kv.FutureValue, len(row))
		for k, v := range row {
			if v == nil {
				continue
			}
			u.live[r][k] = kv.GetAsync(tr, u.keys[r][k])
			if w := t.Unique[k].Window; w > 0 {
				b := bucketOf(now, w)
				u.until[r][k] = [2]kv.FutureValue{
					kv.GetAsync(tr, t.Queue.UniqueUntilKey(nil, k, b, v)),
					kv.GetAsync(tr, t.Queue.UniqueUntilKey(nil, k, b+1, v)),
				}
			}
		}
	}
}

// held returns the row holding row r's values in key k, as the reads
// found it: in the table, or removed, with the end of the key's window
// (until, 0 for a row in the table); id 0 when none holds them.
func (u *uniqueRows) held(r, k int) (id int64, until time.Time, err error) {
	e, err := u.live[r][k].Get()
	if err != nil || e != nil {
		if err == nil {
			if id, _, err = tuple.DecodeInt(e); err != nil || id <= 0 {
				return 0, until, fmt.Errorf("%w: unique key %s of %s: an entry holds %x", ErrCatalog, u.s.t.Unique[k].Name, u.s.t.Name, e)
			}
		}
		return id, until, err
	}
	for _, f := range u.until[r][k] {
		if f == nil {
			continue
		}
		e, err := f.Get()
		if err != nil || e == nil {
			if err != nil {
				return 0, until, err
			}
			continue
		}
		tu, err := tuple.Unpack(e)
		if err != nil || len(tu) != 2 {
			return 0, until, fmt.Errorf("%w: unique key %s of %s: a window entry holds %x", ErrCatalog, u.s.t.Unique[k].Name, u.s.t.Name, e)
		}
		end, _ := tu[0].(int64)
		if id, _ = tu[1].(int64); end > u.s.b.now.UnixNano() {
			return id, time.Unix(0, end), nil
		}
	}
	return 0, until, nil
}

// keep decides, once the reads are in, which rows go in (PushSome's
// keep): a row whose values in a key are held is skipped with ignore, and
// fails the statement without.
func (u *uniqueRows) keep(items []queues.Item, ignore bool) ([]bool, error) {
	t := u.s.t
	pushed := make([]bool, len(u.values))
	earlier := map[string]int{} // an entry's key -> the row kept that holds it
	for r, row := range u.values {
		var dup *DuplicateKeyError
		for k, v := range row {
			if v == nil {
				continue
			}
			id, until, err := u.held(r, k)
			i, early := earlier[string(u.keys[r][k])]
			switch {
			case err != nil:
				return nil, err
			case early:
				id, until = items[i].ID, time.Time{}
			case id == 0:
				continue
			}
			dup = &DuplicateKeyError{Table: t.Name, Key: t.Unique[k].Name, Columns: u.columnNames(&t.Unique[k]),
				Values: u.shown[r][k], ID: id, Earlier: early, Until: until}
			break
		}
		if dup != nil {
			if !ignore {
				return nil, &RowError{r + 1, dup}
			}
			continue
		}
		pushed[r] = true
		for _, key := range u.keys[r] {
			if key != nil {
				earlier[string(key)] = r
			}
		}
	}
	return pushed, nil
}

// write writes the entries of the rows pushed (nil: all).
func (u *uniqueRows) write(items []queues.Item, pushed []bool) {
	for r, keys := range u.keys {
		if pushed != nil && !pushed[r] {
			continue
		}
		for _, key := range keys {
			if key != nil {
				u.s.tr.Set(key, queues.UniqueEntry(items[r].ID))
			}
		}
	}
}

// push pushes an INSERT's items: with PushAll when the table has no
// unique key, else with PushSome, checking the keys (see above). It
// returns how many rows went in and the last one's id (0: none).
func (s *stmtCtx) push(items []queues.Item, u *uniqueRows, ignore bool) (int64, int64, error) {
	if u == nil {
		if _, err := s.t.Queue.PushAll(s.tr, s.b.token, items); err != nil {
			return 0, 0, err
		}
		return int64(len(items)), items[len(items)-1].ID, nil
	}
	u.read()
	pushed, applied, err := s.t.Queue.PushSome(s.tr, s.b.token, items, func() ([]bool, error) {
		return u.keep(items, ignore)
	})
	if err != nil {
		return 0, 0, err
	}
	if applied {
		u.write(items, pushed)
	}
	var n, last int64
	for r, it := range items {
		if pushed == nil || pushed[r] {
			n, last = n+1, it.ID
		}
	}
	return n, last, nil
}

// freeUnique frees the entries of the rows items, which the statement
// removed from its table: see above.
func (s *stmtCtx) freeUnique(items []queues.Item) {
	t := s.t
	if len(t.Unique) == 0 || len(items) == 0 {
		return
	}
	now := s.now().UnixNano()
	for _, it := range items {
		vals := uniqueOfItem(t, it)
		for k, v := range vals {
			if v == nil {
				continue
			}
			entry := queues.UniqueEntry(it.ID)
			s.tr.CompareAndClear(t.Queue.UniqueKey(nil, k, v), entry)
			if w := t.Unique[k].Window; w > 0 {
				until := now + int64(w)
				s.tr.Set(t.Queue.UniqueUntilKey(nil, k, bucketOf(until, w), v), tuple.Tuple{until, it.ID}.Pack())
			}
		}
	}
	// The windows that ended, once a statement: blind range clears.
	for k, uk := range t.Unique {
		if uk.Window > 0 {
			s.tr.ClearRange(t.Queue.UniqueUntilBefore(k, bucketOf(now, uk.Window)))
		}
	}
}

// uniqueFree wraps the plan of a statement that removes rows (FOR POP,
// DELETE) from a table with unique keys: it frees the keys of the rows
// the plan removed, or, for DELETE FROM t (clearAll), clears the index.
type uniqueFree struct{ plan }

// freeing returns p, wrapped in uniqueFree if the table has unique keys
// and p may remove rows.
func (s *stmtCtx) freeing(p plan) plan {
	if _, none := p.(limitZero); none || len(s.t.Unique) == 0 {
		return p
	}
	return uniqueFree{p}
}

func (p uniqueFree) run(s *stmtCtx) ([]row, int64, error) {
	rows, n, err := p.plan.run(s)
	if err != nil {
		return nil, 0, err
	}
	if _, all := p.plan.(clearAll); all {
		s.tr.ClearRange(s.t.Queue.UniqueIndex())
		return rows, n, nil
	}
	items := make([]queues.Item, len(rows))
	for i, r := range rows {
		items[i] = r.item
	}
	s.freeUnique(items)
	return rows, n, nil
}

func (p uniqueFree) String() string { return p.plan.String() + " +unique" }

// reclaimUnique gives the rows items, put back into t after a pop removed
// them (PutBack, settle), their entries back, where no other row took
// them meanwhile. With check, a row is first looked up, and only one in
// the table takes its entries (settle: its rows may have gone back in an
// earlier attempt, and been taken again since).
func reclaimUnique(tr kv.Transaction, t *Table, items []queues.Item, check bool) error {
	if len(t.Unique) == 0 {
		return nil
	}
	type entry struct {
		key []byte
		id  int64
		f   kv.FutureValue
	}
	var entries []entry
	for _, it := range items {
		if check {
			if _, ok, err := t.Queue.Get(tr, it.ID); err != nil || !ok {
				if err != nil {
					return err
				}
				continue
			}
		}
		for k, v := range uniqueOfItem(t, it) {
			if v != nil {
				key := t.Queue.UniqueKey(nil, k, v)
				entries = append(entries, entry{key, it.ID, kv.GetAsync(tr, key)})
			}
		}
	}
	set := map[string]bool{} // rows put back together may hold the same values
	for _, e := range entries {
		held, err := e.f.Get()
		if err != nil {
			return err
		}
		if held == nil && !set[string(e.key)] {
			tr.Set(e.key, queues.UniqueEntry(e.id))
			set[string(e.key)] = true
		}
	}
	return nil
}

// checkUnique checks t's unique index against its rows, for tests: every
// row is in each key it has values in, under its own id, no two rows hold
// the same values in a key, and no entry is left without its row.
func checkUnique(tr kv.ReadTransaction, t *Table) error {
	if len(t.Unique) == 0 {
		return nil
	}
	want := map[string]int64{} // entry key -> id
	err := t.Queue.Scan(tr, queues.Min, func(it queues.Item) (bool, error) {
		for k, v := range uniqueOfItem(t, it) {
			if v == nil {
				continue
			}
			key := string(t.Queue.UniqueKey(nil, k, v))
			if id, ok := want[key]; ok {
				return false, fmt.Errorf("%w: rows %d and %d of %s hold the same values in unique key %s", queues.ErrCorrupt, id, it.ID, t.Name, t.Unique[k].Name)
			}
			want[key] = it.ID
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	it := tr.GetRange(t.Queue.UniqueIndex(), kv.RangeOptions{})
	for it.Next() {
		e := it.KeyValue()
		id, ok := want[string(e.Key)]
		if !ok {
			return fmt.Errorf("%w: unique index entry %x of %s has no row", queues.ErrCorrupt, e.Key, t.Name)
		}
		if string(e.Value) != string(queues.UniqueEntry(id)) {
			return fmt.Errorf("%w: unique index entry %x of %s holds %x, not row %d", queues.ErrCorrupt, e.Key, t.Name, e.Value, id)
		}
		delete(want, string(e.Key))
	}
	if err := it.Err(); err != nil {
		return err
	}
	for key, id := range want {
		return fmt.Errorf("%w: row %d of %s has no unique index entry %x", queues.ErrCorrupt, id, t.Name, key)
	}
	return nil
}
