package exec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/parser"
	"github.com/fdbqueue/fdbqueue/queues"
)

// ddlDone makes CREATE and DROP TABLE safe to retry after
// commit_unknown_result: the statement's token is recorded with its change
// (queues.Receipts, under root ("ddl-receipts", expiry, token)), so a retry
// whose first attempt was applied finds it and succeeds instead of failing
// with "already exists" (or "no such table").
func (e *Executor) ddlDone(tr kv.Transaction, token queues.Token) (bool, error) {
	if token.ID == 0 {
		return false, nil
	}
	if done, err := e.ddl.Has(tr, token); err != nil || done {
		return done, err
	}
	return false, e.ddl.Record(tr, token, nil)
}

func (e *Executor) createTable(tr kv.Transaction, st *parser.CreateTable) (*Result, error) {
	if st.MaxAttempts < 0 {
		return nil, fmt.Errorf("%w: MAX_ATTEMPTS=%d: how many times a row may be leased is an integer, 1 or more", ErrSchema, st.MaxAttempts)
	}
	if isSystemTable(st.Name) {
		return nil, fmt.Errorf("%w: %s is the system table of the queues' statistics; name yours otherwise", ErrSchema, st.Name)
	}
	if st.Backoff != nil {
		if err := st.Backoff.Check(); err != nil {
			return nil, err
		}
	}
	t := &Table{Name: st.Name, Priority: -1, IndexName: st.IndexName, MaxAttempts: st.MaxAttempts, Backoff: st.Backoff}
	seen := map[string]bool{}
	for _, pc := range st.Columns {
		lower := strings.ToLower(pc.Name)
		if lower == "id" {
			return nil, fmt.Errorf("%w: column id is implicit (every row has one, assigned at insert)", ErrSchema)
		}
		if _, pseudo := pseudoColumn(lower); pseudo {
			return nil, fmt.Errorf("%w: column %s is a pseudo-column every table has (%s); name yours otherwise", ErrSchema, pc.Name, pseudoNames)
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
	for _, name := range st.Index {
		i, err := t.column(name)
		if err != nil {
			return nil, fmt.Errorf("%w: INDEX names %s, which is not a column", ErrSchema, name)
		}
		if i < 0 {
			return nil, fmt.Errorf("%w: INDEX column %s must be an integer resource column; %s is a pseudo-column every table has", ErrSchema, name, name)
		}
		if t.Columns[i].Type != parser.TypeInt {
			return nil, fmt.Errorf("%w: INDEX column %s must be an integer resource column", ErrSchema, name)
		}
		for _, r := range t.Resources {
			if r == i {
				return nil, fmt.Errorf("%w: INDEX names %s twice", ErrSchema, name)
			}
		}
		t.Resources = append(t.Resources, i)
	}
	if len(t.Columns) == 0 {
		return nil, fmt.Errorf("%w: a table needs at least one column", ErrSchema)
	}
	t.markRequired()
	if err := t.addUnique(st.Unique); err != nil {
		return nil, err
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
	if err := e.checkDeadCreate(tr, t); err != nil {
		return nil, err
	}
	if err := e.addTable(tr, t); err != nil {
		return nil, err
	}
	if t.MaxAttempts > 0 {
		// In the same transaction, so under the same DDL token.
		if _, err := e.deadTable(tr, t); err != nil {
			return nil, err
		}
	}
	return &Result{}, nil
}

// addTable gives t a fresh table id and its queue, and stores its schema.
func (e *Executor) addTable(tr kv.Transaction, t *Table) error {
	idKey := nextTableIDKey(e.cat.root)
	raw, err := tr.Get(idKey)
	if err != nil {
		return err
	}
	if len(raw) == 8 {
		t.ID = int64(binary.LittleEndian.Uint64(raw))
	}
	t.ID++
	tr.Set(idKey, binary.LittleEndian.AppendUint64(nil, uint64(t.ID)))
	names := make([]string, len(t.Resources))
	for i, r := range t.Resources {
		names[i] = t.Columns[r].Name
	}
	t.Queue = queues.New(tableKey(e.cat.root, t.ID), t.Kind(), names...).WithOptions(e.opts)
	t.Queue.StartStats(tr)
	if err := e.cat.changed(tr); err != nil {
		return err
	}
	tr.Set(catalogKey(e.cat.root, t.Name), t.encode())
	return nil
}

func (e *Executor) dropTable(tr kv.Transaction, st *parser.DropTable) (*Result, error) {
	t, err := e.cat.table(tr, st.Name)
	if errors.Is(err, ErrNoTable) && st.IfExists {
		return &Result{}, nil
	}
	if err != nil {
		return nil, err
	}
	if err := e.refuseScheduled(tr, t.Name); err != nil {
		return nil, err
	}
	if err := e.cat.changed(tr); err != nil {
		return nil, err
	}
	t.Queue.Clear(tr)
	tr.Clear(catalogKey(e.cat.root, st.Name))
	return &Result{}, nil
}
