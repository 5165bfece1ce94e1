package exec

import (
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
	Queue       *queues.Queue
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
	names := []string{"id", parser.ColVisibleAt, parser.ColLease, parser.ColAttempts}
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
	if t.MaxAttempts > 0 {
		// Only then: a table without the option keeps the 7 elements
		// versions before MAX_ATTEMPTS read.
		tup = append(tup, t.MaxAttempts)
	}
	return tup.Pack()
}

func decodeTable(root []byte, opts queues.Options, b []byte) (*Table, error) {
	tup, err := tuple.Unpack(b)
	if err != nil || len(tup) != 7 && len(tup) != 8 {
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
	if len(tup) == 8 {
		if t.MaxAttempts, _ = tup[7].(int64); t.MaxAttempts <= 0 {
			return nil, fmt.Errorf("%w: MAX_ATTEMPTS %v", ErrCatalog, tup[7])
		}
	}
	t.Queue = queues.New(tableKey(root, t.ID), t.Kind(), names...).WithOptions(opts)
	return t, nil
}

// catalog caches decoded schemas by their packed bytes: a statement still
// reads the catalog key in its transaction, but does not decode it again.
type catalog struct {
	root []byte
	opts queues.Options // of the tables' queues
	mu   sync.Mutex     // guards byRaw
	// byRaw maps packed schemas to decoded ones. Schemas are immutable.
	byRaw map[string]*Table
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
	if len(c.byRaw) > 1024 {
		clear(c.byRaw)
	}
	c.byRaw[string(raw)] = t
	c.mu.Unlock()
	return t, nil
}

// table reads the schema of name in tr.
func (c *catalog) table(tr kv.ReadTransaction, name string) (*Table, error) {
	raw, err := tr.Get(catalogKey(c.root, name))
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, fmt.Errorf("%w: %s", ErrNoTable, name)
	}
	return c.decode(raw)
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
