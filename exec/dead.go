package exec

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/parser"
	"github.com/fdbqueue/fdbqueue/queues"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// Dead letters: MAX_ATTEMPTS=n.
//
// CREATE TABLE t (...) MAX_ATTEMPTS=n also creates t_dead, in the same
// transaction (so under the same DDL token), unless it exists: a FIFO table
// with t's columns (their types, NOT NULL and DEFAULT), without INDEX, and
// FIFO even when t has a priority column (there it is an ordinary INT
// column holding the row's last priority), so dead letters read in the
// order they died. An existing t_dead is used if it has t's columns (same
// names, types and lengths, in order, and no NOT NULL where t allows NULL),
// and refused otherwise.
//
// A FOR LEASE that would take a row of t already leased n times removes it
// from t and pushes it into t_dead in the same transaction, keeping its
// id, values, _error, _attempts, _lease and _visible_at (when its last
// lease ended), and goes on to the next candidate. DROP TABLE t leaves
// t_dead. If t_dead was dropped since, the move creates it again, as
// CREATE did: a row is never lost, and the queue never stalls behind a
// row it cannot move. If it was created again with other columns, the
// lease fails with ErrSchema, naming what differs.

// deadSuffix names a table's dead-letter table: t_dead.
const deadSuffix = "_dead"

// deadTable returns the dead-letter table of src in tr, creating it if it
// does not exist, or ErrSchema if it exists with other columns.
func (e *Executor) deadTable(tr kv.Transaction, src *Table) (*Table, error) {
	name := src.Name + deadSuffix
	dead, err := e.cat.table(tr, name)
	if errors.Is(err, ErrNoTable) {
		dead = &Table{Name: name, Priority: -1, Columns: slices.Clone(src.Columns)}
		return dead, e.addTable(tr, dead)
	}
	if err != nil {
		return nil, err
	}
	if err := deadCompatible(src, dead); err != nil {
		return nil, err
	}
	return dead, nil
}

// deadCompatible reports whether dead can hold src's rows as they are
// (deadMismatch).
func deadCompatible(src, dead *Table) error {
	if why := deadMismatch(src, dead); why != "" {
		return fmt.Errorf("%w: MAX_ATTEMPTS of %s moves rows to %s, which exists with other columns: %s (drop %s, or give it %s's columns: %s)",
			ErrSchema, src.Name, dead.Name, why, dead.Name, src.Name, columnList(src))
	}
	return nil
}

// deadMismatch says why dead cannot hold src's rows as they are, or ""
// if it can: it needs the same columns (names, types, lengths) in the
// same order, and none required that src allows to be NULL.
func deadMismatch(src, dead *Table) string {
	if len(dead.Columns) != len(src.Columns) {
		return fmt.Sprintf("%d columns for %d", len(dead.Columns), len(src.Columns))
	}
	for i := range src.Columns {
		s, d := &src.Columns[i], &dead.Columns[i]
		switch {
		case !strings.EqualFold(s.Name, d.Name):
			return fmt.Sprintf("column %d is %s, not %s", i+1, d.Name, s.Name)
		case s.Type != d.Type || s.Length != d.Length:
			return fmt.Sprintf("column %s is %s, not %s", d.Name, columnType(d), columnType(s))
		case dead.required(i) && !src.required(i):
			return fmt.Sprintf("column %s cannot be NULL there", d.Name)
		}
	}
	return ""
}

// checkDeadCreate refuses to create t as the dead-letter table of a table
// with MAX_ATTEMPTS if it could not hold that table's rows: every lease of
// that table would then fail at the first row it must move.
func (e *Executor) checkDeadCreate(tr kv.Transaction, t *Table) error {
	name, ok := strings.CutSuffix(t.Name, deadSuffix)
	if !ok {
		return nil
	}
	src, err := e.cat.table(tr, name)
	if errors.Is(err, ErrNoTable) {
		return nil
	}
	if err != nil || src.MaxAttempts == 0 {
		return err
	}
	if why := deadMismatch(src, t); why != "" {
		return fmt.Errorf("%w: %s is the dead-letter table of %s (MAX_ATTEMPTS=%d), which moves its rows there as they are: %s; give it %s's columns (%s), or leave it to be created with the first row that dies",
			ErrSchema, t.Name, src.Name, src.MaxAttempts, why, src.Name, columnList(src))
	}
	return nil
}

// required reports whether column i cannot hold NULL.
func (t *Table) required(i int) bool {
	return t.Columns[i].NotNull || i == t.Priority || slices.Contains(t.Resources, i)
}

// markRequired marks the priority and resource columns NOT NULL, as the
// queue needs them, whether or not they were declared so: what the
// catalog lists is what INSERT enforces.
func (t *Table) markRequired() {
	for i := range t.Columns {
		t.Columns[i].NotNull = t.required(i)
	}
}

// columnType is c's type as declared: VARCHAR(n) and VARBINARY(n) are a
// TEXT and a BLOB with a length.
func columnType(c *Column) string {
	if c.Length > 0 {
		name := map[parser.Type]string{parser.TypeText: "VARCHAR", parser.TypeBlob: "VARBINARY"}[c.Type]
		return fmt.Sprintf("%s(%d)", name, c.Length)
	}
	return c.Type.String()
}

func columnList(t *Table) string {
	names := make([]string, len(t.Columns))
	for i := range t.Columns {
		names[i] = t.Columns[i].Name + " " + columnType(&t.Columns[i])
	}
	return strings.Join(names, ", ")
}

// moveDead pushes it, a row of the statement's table that a lease removed
// for MAX_ATTEMPTS, into the dead-letter table (queues.LeaseRequest.Dead).
func (s *stmtCtx) moveDead(it queues.Item) error {
	s.freeUnique([]queues.Item{it}) // t_dead has none of t's unique keys
	if s.dead == nil {
		d, err := s.e.deadTable(s.tr, s.t)
		if err != nil {
			return err
		}
		s.dead = d
	}
	r, err := decodeRow(s.t, it) // the row's priority is the item's
	if err != nil {
		return err
	}
	tup := make(tuple.Tuple, len(r.vals), len(r.vals)+1)
	for i, v := range r.vals {
		tup[i] = encodeValue(v)
	}
	if r.errText != nil {
		tup = append(tup, r.errText) // the dead letter keeps its _error
	}
	d := queues.Item{ID: it.ID, VisibleAt: it.VisibleAt, Lease: it.Lease, Attempts: it.Attempts}
	if d.Value, err = tup.PackWithError(); err != nil {
		return err
	}
	ints := append([]int{s.dead.Priority}, s.dead.Resources...)
	for k, i := range ints {
		if i < 0 {
			continue // FIFO
		}
		v, ok := r.vals[i].(int64)
		if !ok { // deadCompatible keeps NULL out; a row not written by insert
			return fmt.Errorf("%w: row %d of %s has no integer %s for %s", ErrUnreadableRow, it.ID, s.t.Name, s.t.Columns[i].Name, s.dead.Name)
		}
		if k == 0 {
			d.Priority = v
		} else {
			d.Resources = append(d.Resources, v)
		}
	}
	_, err = s.dead.Queue.PushAll(s.tr, queues.Token{}, []queues.Item{d})
	var dup *queues.DuplicateIDError
	if errors.As(err, &dup) {
		// The dead letters hold its id: one an INSERT gave there (a
		// restore's), which another client's block of ids held too.
		// The push wrote nothing: the dead letter takes a new id, rather
		// than stop every lease of t at this row.
		ids := []int64{0}
		if err := s.e.idsPast(s.tr, s.dead.Queue, d.ID, ids); err != nil {
			return err
		}
		d.ID = ids[0]
		_, err = s.dead.Queue.PushAll(s.tr, queues.Token{}, []queues.Item{d})
	}
	return err
}
