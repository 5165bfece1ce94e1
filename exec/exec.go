package exec

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/parser"
	"github.com/fdbqueue/fdbqueue/queues"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// Executor runs statements against one database.
type Executor struct {
	db  kv.Database
	cat *catalog
	// spreads holds, per table name, the spread width recent single-row
	// pops needed (*atomic.Int64): 0 while pops do not conflict.
	spreads sync.Map
	// newID makes row ids and newToken statement tokens: queues.NewID, or
	// in tests deterministic sources (see export_test.go), so that the
	// keys a statement writes can be pinned in testdata.
	newID, newToken func() int64
	// now is the clock of DDL token expiry: time.Now, or in tests a fixed
	// one, for the same reason.
	now func() time.Time
}

// maxSpread bounds how many head items a spread pop chooses among.
const maxSpread = 64

// New returns an executor for db, keeping all of fdbqueue's data under the
// key prefix root.
func New(db kv.Database, root []byte) *Executor {
	return &Executor{
		db:       db,
		cat:      &catalog{root: bytes.Clone(root), byRaw: map[string]*Table{}},
		newID:    queues.NewID,
		newToken: queues.NewID,
		now:      time.Now,
	}
}

// DB returns the executor's database.
func (e *Executor) DB() kv.Database { return e.db }

// Args are a statement's arguments, already in the driver's value types
// (int64, float64, bool, []byte, string, time.Time, nil).
type Args struct {
	Positional []any
	Named      map[string]any
}

// Result is what a statement returns.
type Result struct {
	// Columns and Types describe the rows of a query (HasRows).
	HasRows bool
	Columns []string
	Types   []parser.Type
	// Nullable and Lengths describe each column: whether it may hold
	// NULL, and its declared length (VARCHAR(n), VARBINARY(n)) or 0.
	Nullable []bool
	Lengths  []int
	Rows     [][]any
	// RowsAffected and LastInsertID describe a write.
	RowsAffected int64
	LastInsertID int64
}

// prepared is a statement bound to its arguments, with what must stay the
// same across retries (the ids of inserted rows).
type prepared struct {
	p    *parser.Parsed
	args Args
	ids  []int64
	// spread, when positive, makes single-row pops take one of the first
	// spread items of the best priority: set on retries after conflicts.
	spread int
	// token names the statement's pops across retries (0: no receipts):
	// see queues.Receipt.
	token int64
	// idsOnly is set for a statement that needs no column values, only
	// ids: a DELETE whose WHERE names no column but id, a SELECT id. Its
	// rows are not decoded (see decodeRow).
	idsOnly bool
}

func (e *Executor) prepare(p *parser.Parsed, args Args) (*prepared, error) {
	if err := checkArgs(p, args); err != nil {
		return nil, err
	}
	pr := &prepared{p: p, args: args}
	if ins, ok := p.Stmt.(*parser.Insert); ok {
		// Ids are made once, outside the retry loop: a retry pushes the
		// same rows with the same ids.
		pr.ids = make([]int64, len(ins.Rows))
		for i := range pr.ids {
			pr.ids[i] = e.newID()
		}
	}
	return pr, nil
}

func checkArgs(p *parser.Parsed, args Args) error {
	if p.NumInput >= 0 {
		if len(args.Named) > 0 {
			return fmt.Errorf("%w: the statement uses ? placeholders; got named arguments", ErrArgs)
		}
		if len(args.Positional) != p.NumInput {
			return fmt.Errorf("%w: the statement has %d placeholders; got %d arguments", ErrArgs, p.NumInput, len(args.Positional))
		}
		return nil
	}
	for _, n := range p.Names {
		if _, ok := args.Named[n]; !ok {
			return fmt.Errorf("%w: no argument for :%s (pass sql.Named(%q, v))", ErrArgs, n, n)
		}
	}
	if len(args.Named) != len(p.Names) || len(args.Positional) > 0 {
		return fmt.Errorf("%w: the statement has %d named placeholders %v; got %d named and %d positional arguments", ErrArgs, len(p.Names), p.Names, len(args.Named), len(args.Positional))
	}
	return nil
}

// IsReadOnly reports whether the statement writes nothing.
func IsReadOnly(st parser.Statement) bool {
	s, ok := st.(*parser.Select)
	return ok && !s.ForPop
}

// Auto runs one statement in its own transaction, retrying conflicts.
func (e *Executor) Auto(ctx context.Context, p *parser.Parsed, args Args) (*Result, error) {
	pr, err := e.prepare(p, args)
	if err != nil {
		return nil, err
	}
	// Read-only statements commit too: committing a transaction that
	// wrote nothing is free on every engine.
	// Pops that conflict (consumers taking the same head item) turn into
	// spread pops (queues.PopSpread): a retry doubles the width, and the
	// table remembers it, so that its next pops start there. Once pops stop
	// conflicting the width decays back to exact order.
	hint := e.spreadHint(p.Stmt)
	switch p.Stmt.(type) {
	case *parser.CreateTable, *parser.DropTable:
		pr.token = e.newToken() // see ddlDone
	case *parser.Delete:
		pr.token = e.newToken() // see deleteRows
	}
	if hint != nil {
		// Pops leave a receipt under this token, made once: a retry after
		// commit_unknown_result returns what the committed attempt popped.
		pr.token = e.newToken()
	}
	var res *Result
	attempt := 0
	err = e.db.Transact(ctx, func(tr kv.Transaction) error {
		attempt++
		if hint != nil {
			pr.spread = int(hint.Load())
			if attempt > 1 {
				pr.spread = min(maxSpread, max(4, 2*pr.spread))
			}
		}
		var err error
		res, err = e.run(tr, pr)
		return err
	})
	if hint != nil && err == nil {
		if attempt > 1 {
			hint.Store(int64(pr.spread))
		} else if h := hint.Load(); h > 0 {
			hint.CompareAndSwap(h, h-1)
		}
	}
	return res, tooLarge(p.Stmt, err)
}

// tooLarge adds to a transaction_too_large error (2101) of an autocommit
// statement what to do instead.
//
// A DELETE with WHERE or LIMIT removes its rows one by one, in one
// transaction, which FoundationDB bounds at 10 MB of writes and conflict
// ranges (tens of thousands of rows) and 5 seconds. It is not split into several
// transactions behind the user's back: the DELETE would no longer be
// atomic (a failure half-way would leave half of it applied, and rows
// inserted meanwhile would be deleted or not by chance), and its count
// could no longer be reported exactly once. The user's loop of
// DELETE ... LIMIT n is each time atomic and exactly-once. DELETE FROM t
// without WHERE or LIMIT clears the table's key range: one small
// transaction whatever the table holds.
func tooLarge(st parser.Statement, err error) error {
	if kv.Code(err) != kv.ErrTransactionTooLarge.Code {
		return err
	}
	switch s := st.(type) {
	case *parser.Delete:
		return fmt.Errorf("%w; a DELETE with WHERE or LIMIT removes its rows in one transaction: delete in batches with DELETE FROM %s [WHERE ...] LIMIT n (1000, say, or fewer if that is still too large), repeated until it deletes 0 rows (DELETE FROM %s with neither removes every row in one small transaction)", err, s.Table, s.Table)
	case *parser.Select:
		return fmt.Errorf("%w; pop fewer rows per statement (a smaller LIMIT)", err)
	case *parser.Insert:
		return fmt.Errorf("%w; insert fewer rows per statement", err)
	}
	return err
}

// spreadHint returns the spread width of the table a single-row pop
// statement pops from, or nil for other statements.
func (e *Executor) spreadHint(st parser.Statement) *atomic.Int64 {
	var table string
	switch s := st.(type) {
	case *parser.Select:
		if !s.ForPop {
			return nil
		}
		table = s.Table
	case *parser.Delete:
		if s.Limit == nil {
			return nil
		}
		table = s.Table
	default:
		return nil
	}
	h, _ := e.spreads.LoadOrStore(strings.ToLower(table), new(atomic.Int64))
	return h.(*atomic.Int64)
}

// Exec runs one statement in the caller's transaction.
func (e *Executor) Exec(tr kv.Transaction, p *parser.Parsed, args Args) (*Result, error) {
	pr, err := e.prepare(p, args)
	if err != nil {
		return nil, err
	}
	return e.run(tr, pr)
}

func (e *Executor) run(tr kv.Transaction, pr *prepared) (*Result, error) {
	switch st := pr.p.Stmt.(type) {
	case *parser.CreateTable, *parser.DropTable:
		if done, err := e.ddlDone(tr, pr.token); err != nil || done {
			return &Result{}, err
		}
		if _, ok := st.(*parser.CreateTable); ok {
			return e.createTable(tr, st.(*parser.CreateTable))
		}
		return e.dropTable(tr, st.(*parser.DropTable))
	case *parser.Insert:
		return e.insert(tr, st, pr)
	case *parser.Select:
		return e.selectRows(tr, st, pr)
	case *parser.Delete:
		return e.deleteRows(tr, st, pr)
	case *parser.Update:
		return e.update(tr, st, pr)
	}
	return nil, fmt.Errorf("%w: %T is not a statement to execute", ErrStatement, pr.p.Stmt)
}

// ddlDone makes CREATE and DROP TABLE safe to retry after
// commit_unknown_result: the statement's token is written with its change,
// so a retry whose first attempt was applied finds it and succeeds instead
// of failing with "already exists" (or "no such table"). Tokens expire
// after queues.MarkerTTL, like push markers: each DDL clears up to two
// expired ones, with a snapshot read and blind clears.
//
//	root ("ddl", token)                   -> ""
//	root ("ddl-expiry", expiry, token)    -> ""
func (e *Executor) ddlDone(tr kv.Transaction, token int64) (bool, error) {
	if token == 0 {
		return false, nil
	}
	k := e.ddlKey(token)
	v, err := tr.Get(k)
	if err != nil || v != nil {
		return v != nil, err
	}
	now := e.now()
	tr.Set(k, nil)
	tr.Set(e.ddlExpiryKey(now.Add(queues.MarkerTTL).UnixNano(), token), nil)
	prefix, _ := tuple.Tuple{"ddl-expiry"}.AppendPack(bytes.Clone(e.cat.root))
	it := tr.Snapshot().GetRange(kv.PrefixRange(prefix), kv.RangeOptions{Limit: 2})
	for it.Next() {
		key := it.KeyValue().Key
		t, err := tuple.Unpack(key[len(prefix):])
		if err != nil || len(t) != 2 {
			return false, fmt.Errorf("%w: unreadable DDL token expiry %q", ErrCatalog, key)
		}
		exp, _ := t[0].(int64)
		old, _ := t[1].(int64)
		if exp > now.UnixNano() {
			break
		}
		tr.Clear(key)
		tr.Clear(e.ddlKey(old))
	}
	return false, it.Err()
}

func (e *Executor) ddlKey(token int64) []byte {
	k, _ := tuple.Tuple{"ddl", token}.AppendPack(bytes.Clone(e.cat.root))
	return k
}

func (e *Executor) ddlExpiryKey(exp, token int64) []byte {
	k, _ := tuple.Tuple{"ddl-expiry", exp, token}.AppendPack(bytes.Clone(e.cat.root))
	return k
}

// bind returns the value of a literal or placeholder.
func (pr *prepared) bind(v parser.Value) any {
	if v.Kind != parser.ValueArg {
		return literal(v)
	}
	if v.Name != "" {
		return pr.args.Named[v.Name]
	}
	return pr.args.Positional[v.Ordinal-1]
}

func (e *Executor) createTable(tr kv.Transaction, st *parser.CreateTable) (*Result, error) {
	t := &Table{Name: st.Name, Priority: -1, IndexName: st.IndexName}
	seen := map[string]bool{}
	for _, pc := range st.Columns {
		lower := strings.ToLower(pc.Name)
		if lower == "id" {
			return nil, fmt.Errorf("%w: column id is implicit (every row has one, assigned at insert)", ErrSchema)
		}
		if seen[lower] {
			return nil, fmt.Errorf("%w: column %s is declared twice", ErrSchema, pc.Name)
		}
		seen[lower] = true
		c := Column{Name: pc.Name, Type: pc.Type, Length: pc.Length, NotNull: pc.NotNull}
		if pc.Default != nil {
			v, err := convert(&c, literal(*pc.Default))
			if err != nil {
				return nil, fmt.Errorf("%w: DEFAULT of column %s: %v", ErrSchema, pc.Name, err)
			}
			if v == nil && c.NotNull {
				return nil, fmt.Errorf("%w: column %s is NOT NULL with DEFAULT NULL", ErrSchema, pc.Name)
			}
			c.Default = v
		}
		if lower == "priority" {
			if c.Type != parser.TypeInt {
				return nil, fmt.Errorf("%w: column priority orders the queue and must be an integer; it is %s", ErrSchema, c.Type)
			}
			t.Priority = len(t.Columns)
		}
		t.Columns = append(t.Columns, c)
	}
	var names []string
	for _, name := range st.Index {
		i, err := t.column(name)
		if err != nil {
			return nil, fmt.Errorf("%w: INDEX names %s, which is not a column", ErrSchema, name)
		}
		if i < 0 || t.Columns[i].Type != parser.TypeInt {
			return nil, fmt.Errorf("%w: INDEX column %s must be an integer resource column", ErrSchema, name)
		}
		for _, r := range t.Resources {
			if r == i {
				return nil, fmt.Errorf("%w: INDEX names %s twice", ErrSchema, name)
			}
		}
		t.Resources = append(t.Resources, i)
		names = append(names, t.Columns[i].Name)
	}
	if len(t.Columns) == 0 {
		return nil, fmt.Errorf("%w: a table needs at least one column", ErrSchema)
	}

	ck := catalogKey(e.cat.root, st.Name)
	existing, err := tr.Get(ck)
	if err != nil {
		return nil, err
	}
	if existing != nil {
		if st.IfNotExists {
			return &Result{}, nil
		}
		return nil, fmt.Errorf("%w: %s (use CREATE TABLE IF NOT EXISTS, or DROP TABLE first)", ErrTableExists, st.Name)
	}
	idKey, _ := tuple.Tuple{"next_table_id"}.AppendPack(bytes.Clone(e.cat.root))
	raw, err := tr.Get(idKey)
	if err != nil {
		return nil, err
	}
	if len(raw) == 8 {
		t.ID = int64(binary.LittleEndian.Uint64(raw))
	}
	t.ID++
	tr.Set(idKey, binary.LittleEndian.AppendUint64(nil, uint64(t.ID)))
	t.Queue = queues.New(tableKey(e.cat.root, t.ID), t.Kind(), names...)
	tr.Set(ck, t.encode())
	return &Result{}, nil
}

func (e *Executor) dropTable(tr kv.Transaction, st *parser.DropTable) (*Result, error) {
	t, err := e.cat.table(tr, st.Name)
	if errors.Is(err, ErrNoTable) && st.IfExists {
		return &Result{}, nil
	}
	if err != nil {
		return nil, err
	}
	t.Queue.Clear(tr)
	tr.Clear(catalogKey(e.cat.root, st.Name))
	return &Result{}, nil
}

// row is a stored row with its queue item.
type row struct {
	item queues.Item
	vals []any // declared columns
}

// decodeRow decodes a stored row. A row that does not decode (not written
// by insert: by an older version, or another program) is an
// ErrUnreadableRow naming it and how to remove it; statements that need no
// column values (a DELETE by id, say) do not decode rows, so they still
// work on it.
func (e *Executor) decodeRow(t *Table, it queues.Item) (row, error) {
	unreadable := func(why string) error {
		return fmt.Errorf("%w: row %d of %s %s (DELETE FROM %s WHERE id = %d removes it)", ErrUnreadableRow, it.ID, t.Name, why, t.Name, it.ID)
	}
	tup, err := tuple.Unpack(it.Value)
	if err != nil {
		return row{}, unreadable(fmt.Sprintf("is not a packed tuple: %v", err))
	}
	if len(tup) != len(t.Columns) {
		return row{}, unreadable(fmt.Sprintf("has %d values for %d columns", len(tup), len(t.Columns)))
	}
	vals := make([]any, len(tup))
	for i, el := range tup {
		if vals[i], err = decodeValue(t.Columns[i].Type, el); err != nil {
			return row{}, unreadable(fmt.Sprintf("column %s %v", t.Columns[i].Name, err))
		}
	}
	if t.Priority >= 0 {
		vals[t.Priority] = it.Priority // UPDATE moves the item without rewriting the row
	}
	return row{item: it, vals: vals}, nil
}

// decoder returns how the statement decodes rows: not at all when it needs
// ids only.
func (e *Executor) decoder(pr *prepared) func(*Table, queues.Item) (row, error) {
	if pr != nil && pr.idsOnly {
		return func(_ *Table, it queues.Item) (row, error) { return row{item: it}, nil }
	}
	return e.decodeRow
}

func (e *Executor) insert(tr kv.Transaction, st *parser.Insert, pr *prepared) (*Result, error) {
	t, err := e.cat.table(tr, st.Table)
	if err != nil {
		return nil, err
	}
	targets := make([]int, 0, len(t.Columns))
	if st.Columns == nil {
		for i := range t.Columns {
			targets = append(targets, i)
		}
	} else {
		given := map[int]bool{}
		for _, name := range st.Columns {
			i, err := t.column(name)
			if err != nil {
				return nil, err
			}
			if i < 0 {
				return nil, fmt.Errorf("%w: id is assigned by fdbqueue at insert; LastInsertId returns it", ErrValue)
			}
			if given[i] {
				return nil, fmt.Errorf("%w: column %s is given twice", ErrValue, name)
			}
			given[i] = true
			targets = append(targets, i)
		}
	}
	// Every row is converted and checked before any is written, so that a
	// bad row leaves nothing of the statement behind, also inside an
	// explicit transaction.
	items := make([]queues.Item, 0, len(st.Rows))
	for r, vals := range st.Rows {
		if len(vals) != len(targets) {
			return nil, &RowError{r + 1, fmt.Errorf("%w: %d values for %d columns", ErrValue, len(vals), len(targets))}
		}
		full := make([]any, len(t.Columns))
		set := make([]bool, len(t.Columns))
		for j, i := range targets {
			v, err := convert(&t.Columns[i], pr.bind(vals[j]))
			if err != nil {
				return nil, &RowError{r + 1, err}
			}
			full[i], set[i] = v, true
		}
		item := queues.Item{ID: pr.ids[r]}
		tup := make(tuple.Tuple, len(t.Columns))
		for i := range t.Columns {
			c := &t.Columns[i]
			if !set[i] {
				full[i] = c.Default
			}
			if full[i] == nil && (c.NotNull || i == t.Priority || slicesContains(t.Resources, i)) {
				return nil, &RowError{r + 1, fmt.Errorf("%w: column %s cannot be NULL", ErrValue, c.Name)}
			}
			tup[i] = encodeValue(full[i])
		}
		if t.Priority >= 0 {
			item.Priority = full[t.Priority].(int64)
		}
		for _, i := range t.Resources {
			item.Resources = append(item.Resources, full[i].(int64))
		}
		var err error
		item.Value, err = tup.PackWithError()
		if err != nil {
			return nil, &RowError{r + 1, err}
		}
		if len(item.Value) > MaxRowSize {
			return nil, &RowError{r + 1, fmt.Errorf("%w: %d bytes packed; a row holds at most %d", ErrValue, len(item.Value), MaxRowSize)}
		}
		items = append(items, item)
	}
	res := &Result{}
	for _, item := range items {
		if err := t.Queue.Push(tr, item); err != nil {
			return nil, err
		}
		res.RowsAffected++
		res.LastInsertID = item.ID
	}
	return res, nil
}

func slicesContains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// cond is a bound WHERE comparison.
type cond struct {
	col int // -1: id
	op  parser.Op
	val any // nil: compares with NULL, never true
}

func (c cond) match(r row) bool {
	var v any
	if c.col < 0 {
		v = r.item.ID
	} else {
		v = r.vals[c.col]
	}
	if v == nil || c.val == nil {
		return false
	}
	if x, ok := v.(float64); ok && (math.IsNaN(x) || math.IsNaN(c.val.(float64))) {
		// IEEE 754: NaN is unordered; only != holds. DOUBLE columns refuse
		// NaN (see convert), but a row written before they did may hold one.
		return c.op == parser.OpNe
	}
	n := compare(v, c.val)
	switch c.op {
	case parser.OpEq:
		return n == 0
	case parser.OpNe:
		return n != 0
	case parser.OpLt:
		return n < 0
	case parser.OpLe:
		return n <= 0
	case parser.OpGt:
		return n > 0
	case parser.OpGe:
		return n >= 0
	}
	return false
}

var idColumn = Column{Name: "id", Type: parser.TypeInt}

func (e *Executor) bindWhere(t *Table, where []parser.Cond, pr *prepared) ([]cond, error) {
	out := make([]cond, 0, len(where))
	for _, w := range where {
		i, err := t.column(w.Column)
		if err != nil {
			return nil, err
		}
		col := &idColumn
		if i >= 0 {
			col = &t.Columns[i]
		}
		v, err := convert(col, pr.bind(w.Value))
		if err != nil {
			return nil, fmt.Errorf("WHERE %s %s: %w", w.Column, w.Op, err)
		}
		out = append(out, cond{col: i, op: w.Op, val: v})
	}
	return out, nil
}

func (e *Executor) order(t *Table, ob *parser.OrderBy) (queues.Order, error) {
	if ob == nil {
		return queues.Min, nil
	}
	if t.Priority < 0 {
		return 0, fmt.Errorf("%w: ORDER BY %s on %s, a FIFO table (it has no priority column; rows come in insertion order)", ErrStatement, ob.Column, t.Name)
	}
	i, err := t.column(ob.Column)
	if err != nil {
		return 0, err
	}
	if i < 0 || i != t.Priority {
		return 0, fmt.Errorf("%w: ORDER BY %s; a queue is ordered by priority", ErrStatement, ob.Column)
	}
	if ob.Desc {
		return queues.Max, nil
	}
	return queues.Min, nil
}

func (e *Executor) limit(l *parser.Value, pr *prepared) (int64, error) {
	if l == nil {
		return -1, nil
	}
	v, err := convert(&Column{Name: "LIMIT", Type: parser.TypeInt, NotNull: true}, pr.bind(*l))
	if err != nil {
		return 0, err
	}
	n, _ := v.(int64)
	if v == nil || n < 0 {
		return 0, fmt.Errorf("%w: LIMIT must be a count, 0 or more; got %v", ErrArgs, v)
	}
	return n, nil
}

// fitLimits returns the fit-index limits when every condition bounds a
// resource column from above (col <= v or col < v).
func fitLimits(t *Table, conds []cond) ([]int64, bool) {
	if len(t.Resources) == 0 || len(conds) == 0 {
		return nil, false
	}
	limits := make([]int64, len(t.Resources))
	for i := range limits {
		limits[i] = math.MaxInt64
	}
	for _, c := range conds {
		k := -1
		for j, r := range t.Resources {
			if c.col == r {
				k = j
			}
		}
		v, isInt := c.val.(int64)
		if k < 0 || !isInt || (c.op != parser.OpLe && c.op != parser.OpLt) {
			return nil, false
		}
		if c.op == parser.OpLt {
			if v == math.MinInt64 {
				return nil, false
			}
			v--
		}
		limits[k] = min(limits[k], v)
	}
	return limits, true
}

// idsOnly reports whether a statement projecting proj (column indexes, -1
// for id) with conds reads no column values.
func idsOnly(proj []int, conds []cond) bool {
	for _, i := range proj {
		if i >= 0 {
			return false
		}
	}
	for _, c := range conds {
		if c.col >= 0 {
			return false
		}
	}
	return true
}

// idLookup returns the id of an id = v condition.
func idLookup(conds []cond) (int64, bool) {
	for _, c := range conds {
		if c.col < 0 && c.op == parser.OpEq {
			id, ok := c.val.(int64)
			return id, ok
		}
	}
	return 0, false
}

// find returns up to n rows (n < 0: all) matching conds, in order, and
// removes them if pop.
func (e *Executor) find(tr kv.Transaction, t *Table, conds []cond, order queues.Order, n int64, pop bool, pr *prepared) ([]row, error) {
	if !pop || pr == nil || pr.token == 0 {
		return e.findOnce(tr, t, conds, order, n, pop, pr)
	}
	items, ok, err := t.Queue.Receipt(tr, pr.token)
	if err != nil {
		return nil, err
	}
	if ok {
		// An earlier attempt of this statement committed its pops.
		out := make([]row, len(items))
		for i, it := range items {
			if out[i], err = e.decoder(pr)(t, it); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	out, err := e.findOnce(tr, t, conds, order, n, pop, pr)
	if err != nil {
		return nil, err
	}
	items = make([]queues.Item, len(out))
	for i, r := range out {
		items[i] = r.item
	}
	return out, t.Queue.RecordReceipt(tr, pr.token, items)
}

// findOnce is find without receipts.
func (e *Executor) findOnce(tr kv.Transaction, t *Table, conds []cond, order queues.Order, n int64, pop bool, pr *prepared) ([]row, error) {
	spread := 0
	if pr != nil {
		spread = pr.spread
	}
	decodeRow := e.decoder(pr)
	var out []row
	if n == 0 {
		return nil, nil
	}
	if id, ok := idLookup(conds); ok {
		it, found, err := t.Queue.Get(tr, id)
		if err != nil || !found {
			return nil, err
		}
		r, err := decodeRow(t, it)
		if err != nil {
			return nil, err
		}
		for _, c := range conds {
			if !c.match(r) {
				return nil, nil
			}
		}
		if pop {
			if _, _, err := t.Queue.Remove(tr, id); err != nil {
				return nil, err
			}
		}
		return []row{r}, nil
	}
	// Pops (and a single fit peek) take one item at a time from the queue.
	var next func() (queues.Item, bool, error)
	if limits, ok := fitLimits(t, conds); ok && (pop || n == 1) {
		next = func() (queues.Item, bool, error) {
			switch {
			case pop && spread > 0 && n == 1:
				return t.Queue.PopFitSpread(tr, order, limits, spread)
			case pop:
				return t.Queue.PopFit(tr, order, limits)
			}
			return t.Queue.PeekFit(tr, order, limits)
		}
	} else if len(conds) == 0 && pop && spread > 0 && n == 1 {
		next = func() (queues.Item, bool, error) { return t.Queue.PopSpread(tr, order, spread) }
	} else if len(conds) == 0 && pop {
		// Plain pops: one ordered pass, not n passes from the head.
		limit := int(min(n, math.MaxInt32))
		if n < 0 {
			limit = math.MaxInt32
		}
		items, err := t.Queue.PopN(tr, order, limit)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			r, err := decodeRow(t, it)
			if err != nil {
				return nil, err
			}
			out = append(out, r)
		}
		return out, nil
	}
	if next != nil {
		for int64(len(out)) < n || n < 0 {
			it, found, err := next()
			if err != nil {
				return nil, err
			}
			if !found {
				break
			}
			r, err := decodeRow(t, it)
			if err != nil {
				return nil, err
			}
			out = append(out, r)
		}
		return out, nil
	}
	err := t.Queue.Scan(tr, order, func(it queues.Item) (bool, error) {
		r, err := decodeRow(t, it)
		if err != nil {
			return false, err
		}
		for _, c := range conds {
			if !c.match(r) {
				return true, nil
			}
		}
		out = append(out, r)
		return n < 0 || int64(len(out)) < n, nil
	})
	if err != nil {
		return nil, err
	}
	if pop {
		for _, r := range out {
			if _, _, err := t.Queue.Remove(tr, r.item.ID); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

func (e *Executor) selectRows(tr kv.Transaction, st *parser.Select, pr *prepared) (*Result, error) {
	t, err := e.cat.table(tr, st.Table)
	if err != nil {
		return nil, err
	}
	conds, err := e.bindWhere(t, st.Where, pr)
	if err != nil {
		return nil, err
	}
	if st.Count {
		res := &Result{HasRows: true, Columns: []string{"COUNT(*)"}, Types: []parser.Type{parser.TypeInt}, Nullable: []bool{false}, Lengths: []int{0}}
		var n int64
		if len(conds) == 0 {
			n, err = t.Queue.Count(tr)
		} else {
			var rows []row
			rows, err = e.find(tr, t, conds, queues.Min, -1, false, nil)
			n = int64(len(rows))
		}
		if err != nil {
			return nil, err
		}
		res.Rows = [][]any{{n}}
		return res, nil
	}
	// The projection: * is the declared columns; id is selectable.
	var proj []int
	res := &Result{HasRows: true}
	add := func(i int) {
		proj = append(proj, i)
		c := &idColumn
		if i >= 0 {
			c = &t.Columns[i]
		}
		nullable := !c.NotNull && i >= 0 && i != t.Priority && !slicesContains(t.Resources, i)
		res.Columns = append(res.Columns, c.Name)
		res.Types = append(res.Types, c.Type)
		res.Nullable = append(res.Nullable, nullable)
		res.Lengths = append(res.Lengths, c.Length)
	}
	if st.Star {
		for i := range t.Columns {
			add(i)
		}
	}
	for _, name := range st.Columns {
		i, err := t.column(name)
		if err != nil {
			return nil, err
		}
		add(i)
	}
	order, err := e.order(t, st.OrderBy)
	if err != nil {
		return nil, err
	}
	n, err := e.limit(st.Limit, pr)
	if err != nil {
		return nil, err
	}
	pr.idsOnly = idsOnly(proj, conds)
	rows, err := e.find(tr, t, conds, order, n, st.ForPop, pr)
	if err != nil {
		return nil, err
	}
	res.Rows = make([][]any, len(rows))
	for k, r := range rows {
		out := make([]any, len(proj))
		for j, i := range proj {
			if i < 0 {
				out[j] = r.item.ID
			} else {
				out[j] = r.vals[i]
			}
		}
		res.Rows[k] = out
	}
	if st.ForPop {
		res.RowsAffected = int64(len(rows))
	}
	return res, nil
}

func (e *Executor) deleteRows(tr kv.Transaction, st *parser.Delete, pr *prepared) (*Result, error) {
	t, err := e.cat.table(tr, st.Table)
	if err != nil {
		return nil, err
	}
	conds, err := e.bindWhere(t, st.Where, pr)
	if err != nil {
		return nil, err
	}
	order, err := e.order(t, st.OrderBy)
	if err != nil {
		return nil, err
	}
	n, err := e.limit(st.Limit, pr)
	if err != nil {
		return nil, err
	}
	// A DELETE reports only how many rows it removed, so in autocommit its
	// receipt is that count: a retry after commit_unknown_result reports
	// what the committed attempt did (see Auto).
	if pr.token != 0 {
		if count, ok, err := t.Queue.CountReceipt(tr, pr.token); err != nil || ok {
			return &Result{RowsAffected: count}, err
		}
	}
	pr.idsOnly = idsOnly(nil, conds)
	var count int64
	if len(conds) == 0 && n < 0 {
		if count, err = t.Queue.Count(tr); err != nil {
			return nil, err
		}
		t.Queue.ClearItems(tr)
	} else {
		rows, err := e.findOnce(tr, t, conds, order, n, true, pr)
		if err != nil {
			return nil, err
		}
		count = int64(len(rows))
	}
	if pr.token != 0 {
		if err := t.Queue.RecordCount(tr, pr.token, count); err != nil {
			return nil, err
		}
	}
	return &Result{RowsAffected: count}, nil
}

func (e *Executor) update(tr kv.Transaction, st *parser.Update, pr *prepared) (*Result, error) {
	t, err := e.cat.table(tr, st.Table)
	if err != nil {
		return nil, err
	}
	const form = "the only UPDATE is UPDATE t SET priority = v WHERE id = v"
	if t.Priority < 0 {
		return nil, fmt.Errorf("%w: %s is a FIFO table (no priority column); %s", ErrStatement, t.Name, form)
	}
	if len(st.Set) != 1 || !strings.EqualFold(st.Set[0].Column, t.Columns[t.Priority].Name) {
		return nil, fmt.Errorf("%w: %s", ErrStatement, form)
	}
	conds, err := e.bindWhere(t, st.Where, pr)
	if err != nil {
		return nil, err
	}
	id, ok := idLookup(conds)
	if !ok || len(conds) != 1 {
		return nil, fmt.Errorf("%w: %s", ErrStatement, form)
	}
	v, err := convert(&t.Columns[t.Priority], pr.bind(st.Set[0].Value))
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, fmt.Errorf("%w: priority cannot be NULL", ErrValue)
	}
	moved, err := t.Queue.Move(tr, id, v.(int64))
	if err != nil {
		return nil, err
	}
	res := &Result{}
	if moved {
		res.RowsAffected = 1
	}
	return res, nil
}

// Tables lists the tables, for tools such as the shell.
func (e *Executor) Tables(ctx context.Context) ([]*Table, error) {
	var out []*Table
	err := e.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		var err error
		out, err = e.TablesIn(tr)
		return err
	})
	return out, err
}

// TablesIn lists the tables as tr sees them (its own CREATE and DROP
// TABLE included), by name.
func (e *Executor) TablesIn(tr kv.ReadTransaction) ([]*Table, error) {
	return e.cat.tables(tr)
}
