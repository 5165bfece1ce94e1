package exec

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/parser"
	"github.com/fdbqueue/fdbqueue/queues"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// schemaVersion is the version of the packed schema format.
const schemaVersion = 1

// Column is a declared column.
type Column struct {
	Name    string
	Type    parser.Type
	Length  int
	NotNull bool
	Default any // converted to the column's type; nil for none or NULL
}

// Table is a table's schema.
type Table struct {
	Name    string
	ID      int64
	Columns []Column
	// Priority is the index of the priority column, or -1 (FIFO).
	Priority int
	// Resources are the indexes of the INDEX columns, in index order.
	Resources []int
	IndexName string
	// MaxAttempts is the MAX_ATTEMPTS=n option (0: none): a lease that
	// would take a row already leased MaxAttempts times moves it to the
	// dead-letter table instead (see dead.go).
	MaxAttempts int64
	// Backoff is the BACKOFF=... option (nil: none): how long a row waits
	// after a failed attempt (see backoff.go).
	Backoff *parser.Backoff
	Queue   *queues.Queue
	// Unique are the table's unique keys (see unique.go).
	Unique []UniqueKey
}

// Kind returns the table's queue kind.
func (t *Table) Kind() queues.Kind {
	if t.Priority >= 0 {
		return queues.Priority
	}
	return queues.FIFO
}

// column returns the index of the named column, -1 for id, or an error.
func (t *Table) column(name string) (int, error) {
	if i, ok := pseudoColumn(name); ok {
		return i, nil
	}
	for i, c := range t.Columns {
		if strings.EqualFold(c.Name, name) {
			return i, nil
		}
	}
	names := []string{"id", parser.ColVisibleAt, parser.ColLease, parser.ColAttempts, parser.ColError}
	for _, c := range t.Columns {
		names = append(names, c.Name)
	}
	return 0, fmt.Errorf("%w: table %s has no column %s (columns: %s)", ErrUnknownColumn, t.Name, name, strings.Join(names, ", "))
}

func (c *Column) encode() tuple.Tuple {
	def := c.Default
	return tuple.Tuple{c.Name, int64(c.Type), int64(c.Length), c.NotNull, c.Default != nil, encodeValue(def)}
}

func (t *Table) encode() []byte {
	cols := tuple.Tuple{}
	for i := range t.Columns {
		cols = append(cols, t.Columns[i].encode())
	}
	res := tuple.Tuple{}
	for _, r := range t.Resources {
		res = append(res, int64(r))
	}
	tup := tuple.Tuple{int64(schemaVersion), t.Name, t.ID, int64(t.Priority), cols, res, t.IndexName}
	// The fit index's cells, unless they are those of versions before
	// 2026-11-27 (queues.WithExactCells): as the 11th, so that those
	// versions refuse the schema rather than misread the index.
	cells := len(t.Resources) > 0 && t.Queue.ExactCells() != queues.LegacyExactCellsBelow
	if t.MaxAttempts > 0 || len(t.Unique) > 0 || t.Backoff != nil || cells {
		// Only then: a table without the options keeps the 7 elements
		// versions before MAX_ATTEMPTS read.
		tup = append(tup, t.MaxAttempts)
	}
	if len(t.Unique) > 0 || t.Backoff != nil || cells {
		// Only then, as the 9th: versions before unique keys refuse such a
		// schema, rather than insert without checking its keys. (Empty
		// before a BACKOFF or the cells without unique keys.)
		tup = append(tup, t.encodeUnique())
	}
	switch {
	case t.Backoff != nil:
		// As the 10th: versions before BACKOFF refuse such a schema,
		// rather than lease without the backoff.
		tup = append(tup, encodeBackoff(t.Backoff))
	case cells:
		tup = append(tup, nil) // no BACKOFF
	}
	if cells {
		tup = append(tup, t.Queue.ExactCells())
	}
	return tup.Pack()
}

func decodeTable(root []byte, opts queues.Options, b []byte) (*Table, error) {
	tup, err := tuple.Unpack(b)
	if err != nil || len(tup) < 7 || len(tup) > 11 {
		return nil, fmt.Errorf("%w: unreadable schema", ErrCatalog)
	}
	if v, _ := tup[0].(int64); v != schemaVersion {
		return nil, fmt.Errorf("%w: schema format %v, this version reads %d", ErrCatalog, tup[0], schemaVersion)
	}
	t := &Table{}
	var ok bool
	t.Name, _ = tup[1].(string)
	t.ID, _ = tup[2].(int64)
	prio, _ := tup[3].(int64)
	t.Priority = int(prio)
	cols, ok := tup[4].(tuple.Tuple)
	if !ok {
		return nil, fmt.Errorf("%w: unreadable schema", ErrCatalog)
	}
	for _, ce := range cols {
		ct, ok := ce.(tuple.Tuple)
		if !ok || len(ct) != 6 {
			return nil, fmt.Errorf("%w: unreadable column", ErrCatalog)
		}
		var c Column
		c.Name, _ = ct[0].(string)
		ty, _ := ct[1].(int64)
		c.Type = parser.Type(ty)
		l, _ := ct[2].(int64)
		c.Length = int(l)
		c.NotNull, _ = ct[3].(bool)
		if has, _ := ct[4].(bool); has {
			if c.Default, err = decodeValue(c.Type, ct[5]); err != nil {
				return nil, fmt.Errorf("%w: DEFAULT of column %s %v", ErrCatalog, c.Name, err)
			}
		}
		t.Columns = append(t.Columns, c)
	}
	res, _ := tup[5].(tuple.Tuple)
	var names []string
	for _, r := range res {
		i, _ := r.(int64)
		if i < 0 || int(i) >= len(t.Columns) {
			return nil, fmt.Errorf("%w: bad index column", ErrCatalog)
		}
		t.Resources = append(t.Resources, int(i))
		names = append(names, t.Columns[i].Name)
	}
	t.IndexName, _ = tup[6].(string)
	t.markRequired() // schemas stored before CREATE marked them
	if len(tup) >= 8 {
		// 0 only before unique keys or a BACKOFF: a table with them and
		// no MAX_ATTEMPTS.
		if t.MaxAttempts, _ = tup[7].(int64); t.MaxAttempts < 0 || t.MaxAttempts == 0 && len(tup) == 8 {
			return nil, fmt.Errorf("%w: MAX_ATTEMPTS %v", ErrCatalog, tup[7])
		}
	}
	if len(tup) >= 9 {
		if err := t.decodeUnique(tup[8]); err != nil {
			return nil, err
		}
	}
	// The 10th: a BACKOFF, or nil before the cells (the 11th) of a table
	// without one.
	if len(tup) >= 10 && (tup[9] != nil || len(tup) < 11) {
		if t.Backoff, err = decodeBackoff(tup[9]); err != nil {
			return nil, err
		}
	}
	t.Queue = queues.New(tableKey(root, t.ID), t.Kind(), names...).WithOptions(opts)
	// The fit index's cells: without the 11th element, those of versions
	// before 2026-11-27 (a table without a fit index has no cells).
	cells := int64(queues.LegacyExactCellsBelow)
	if len(tup) == 11 {
		if len(names) == 0 {
			return nil, fmt.Errorf("%w: fit index cells for a table without a fit index", ErrCatalog)
		}
		cells, _ = tup[10].(int64)
	}
	if len(names) > 0 {
		if t.Queue, err = t.Queue.WithExactCells(cells); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCatalog, err)
		}
	}
	return t, nil
}

// catalog reads the tables' schemas, and caches them: by name, with the
// metadata version they were read at (kv.MetadataVersion), so that a
// statement reads none while the catalog does not change (see table); and
// decoded, by their packed bytes, so that a schema read again is not
// decoded again. Schemas are immutable.
type catalog struct {
	root []byte
	opts queues.Options // of the tables' queues
	mu   sync.Mutex     // guards byRaw and byName
	// byRaw maps packed schemas to decoded ones.
	byRaw map[string]*Table
	// byName maps lower-case table names to their schema as of a
	// metadata version.
	byName map[string]cachedTable
}

// cachedTable is a table's schema as the catalog held it at the metadata
// version mdv: t, or nil if it had no such table; key is its catalog key.
type cachedTable struct {
	mdv []byte
	t   *Table
	key []byte
}

// maxCached bounds each of the catalog's caches: past it, one is emptied.
const maxCached = 1024

func newCatalog(root []byte, opts queues.Options) *catalog {
	return &catalog{root: root, opts: opts, byRaw: map[string]*Table{}, byName: map[string]cachedTable{}}
}

func (c *catalog) decode(raw []byte) (*Table, error) {
	c.mu.Lock()
	t, ok := c.byRaw[string(raw)]
	c.mu.Unlock()
	if ok {
		return t, nil
	}
	t, err := decodeTable(c.root, c.opts, raw)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.byRaw) > maxCached {
		clear(c.byRaw)
	}
	c.byRaw[string(raw)] = t
	c.mu.Unlock()
	return t, nil
}

// table returns the schema of name as tr sees it, as a Get of its catalog
// key would, read conflict included; ErrNoTable if there is none.
//
// Every transaction that writes the catalog bumps the metadata version
// (changed), so if the one at tr's read version is the one a cached schema
// was read at, no transaction changed the catalog in between: the cached
// schema is what the Get would read. The read conflict the Get would have
// recorded is added instead, which costs no round trip, so that a DDL
// committed after tr's read version fails tr's commit as before: no
// statement runs on a schema that is not the catalog's at its commit, nor
// writes into a dropped table's keys. The metadata version is read through
// the snapshot view: a bump for another table, or by another layer on the
// cluster, conflicts with no statement. The Record Layer caches its
// stores' headers this way (MetaDataVersionStampStoreStateCache, a
// snapshot read of the metadata version and a read conflict on the header).
//
// The catalog is read when the engine has no metadata version, or when tr
// bumped it (it changed the catalog itself: what it reads is its own
// writes, which no other transaction may see from the cache).
func (c *catalog) table(tr kv.Transaction, name string) (*Table, error) {
	mdv, err := kv.MetadataVersion(tr.Snapshot())
	cacheable := err == nil
	switch {
	case cacheable:
		if e, ok := c.cachedEntry(name, mdv); ok {
			// The key as the miss built it: building it again was 3%
			// of a single-row INSERT's time. It is only read.
			if err := tr.AddReadConflictKey(e.key); err != nil {
				return nil, err
			}
			return exists(e.t, name)
		}
	case errors.Is(err, kv.ErrNoMetadataVersion), errors.Is(err, kv.ErrAccessedUnreadable):
	default:
		return nil, err
	}
	key := catalogKey(c.root, name)
	raw, err := tr.Get(key)
	if err != nil {
		return nil, err
	}
	var t *Table
	if raw != nil {
		if t, err = c.decode(raw); err != nil {
			return nil, err
		}
	}
	if cacheable {
		c.remember(name, mdv, t, key)
	}
	return exists(t, name)
}

// exists returns t, or ErrNoTable if t is nil.
func exists(t *Table, name string) (*Table, error) {
	if t == nil {
		return nil, fmt.Errorf("%w: %s", ErrNoTable, name)
	}
	return t, nil
}

// cached returns the cached schema of name (nil for none) if it was read at
// the metadata version mdv.
func (c *catalog) cached(name string, mdv []byte) (*Table, bool) {
	e, ok := c.cachedEntry(name, mdv)
	return e.t, ok
}

// cachedEntry is cached, with the table's catalog key.
func (c *catalog) cachedEntry(name string, mdv []byte) (cachedTable, bool) {
	c.mu.Lock()
	e, ok := c.byName[strings.ToLower(name)]
	c.mu.Unlock()
	if !ok || !bytes.Equal(e.mdv, mdv) {
		return cachedTable{}, false
	}
	return e, true
}

// remember caches t (nil: no such table) as the schema of name, whose
// catalog key is key, at the metadata version mdv, unless the cache holds one read at a later
// version (a transaction with an older read version read it).
func (c *catalog) remember(name string, mdv []byte, t *Table, key []byte) {
	name = strings.ToLower(name)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byName[name]; ok && bytes.Compare(e.mdv, mdv) > 0 {
		return
	}
	if len(c.byName) > maxCached {
		clear(c.byName)
	}
	c.byName[name] = cachedTable{mdv: mdv, t: t, key: key}
}

// changed makes tr's commit bump the metadata version: every transaction
// that writes the catalog calls it, before it writes it (see table). A
// transaction that cannot bump it on an engine that has one (a wrapper
// that does not pass BumpMetadataVersion on) must not write the catalog:
// the schemas cached everywhere would go stale unseen.
func (c *catalog) changed(tr kv.Transaction) error {
	if kv.BumpMetadataVersion(tr) {
		return nil
	}
	if _, err := kv.MetadataVersion(tr.Snapshot()); errors.Is(err, kv.ErrNoMetadataVersion) {
		return nil // no metadata version: nothing is cached
	}
	return fmt.Errorf("%w: the transaction (%T) cannot bump the metadata version that cached schemas are checked against", ErrCatalog, tr)
}

// Tables lists the tables in tr, by name.
func (c *catalog) tables(tr kv.ReadTransaction) ([]*Table, error) {
	prefix := catalogPrefix(c.root)
	b, e := tuple.PrefixRange(prefix)
	it := tr.GetRange(kv.Range{Begin: b, End: e}, kv.RangeOptions{})
	var out []*Table
	for it.Next() {
		t, err := c.decode(it.KeyValue().Value)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, it.Err()
}
