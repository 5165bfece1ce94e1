package exec

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/parser"
	"github.com/fdbqueue/fdbqueue/queues"
)

// The system table fdbqueue_queues: one row per table, with its state and
// counters (queues.Stats), read in O(1) reads a table, in one round for
// all of them:
//
//	SELECT * FROM fdbqueue_queues [WHERE name = v]
//
// The queue recipes keep the gauges and most counters (queues/stats.go);
// exec counts what only the statement knows, why rows went (countTaken,
// countDeleted): a FOR POP's rows as popped, a DELETE's as acked when its
// WHERE has _lease = v (the holder's ack), as deleted otherwise. Each is
// one atomic ADD in the statement's transaction, in the attempt that
// removes the rows: an attempt that finds its receipt (a retry after
// commit_unknown_result whose first attempt committed) counts nothing.
//
// A table created before statistics has items without pushed_at, and no
// gauges, until its first read in autocommit migrates it
// (queues.MigrateStats, in transactions of migrateBatch rows); until then,
// and inside a transaction, its gauges are NULL.

// SystemQueues is the name of the system table of the queues' statistics.
const SystemQueues = "fdbqueue_queues"

// isSystemTable reports whether name is the system table's.
func isSystemTable(name string) bool { return strings.EqualFold(name, SystemQueues) }

// migrateBatch is how many rows a transaction of a migration stamps.
const migrateBatch = 1000

// queuesColumn is a column of the system table: its name, type and
// whether it may be NULL, and how a table's statistics give its value.
type queuesColumn struct {
	name     string
	typ      parser.Type
	nullable bool
	value    func(q *queueStats) any
}

// queueStats is one table's row of the system table, before projection.
type queueStats struct {
	t     *Table
	stats queues.Stats
	now   time.Time
	// dead is the row count of the table's dead-letter table; hasDead
	// whether the table has MAX_ATTEMPTS.
	dead    int64
	hasDead bool
}

// exact reports whether the table's gauges are known.
func (q *queueStats) exact() bool { return !q.stats.Since.IsZero() }

// gauge returns v, or NULL when the gauges are not exact.
func (q *queueStats) gauge(v int64) any {
	if !q.exact() {
		return nil
	}
	return v
}

func counterColumn(name string, s queues.Stat) queuesColumn {
	return queuesColumn{name, parser.TypeInt, false, func(q *queueStats) any { return q.stats.Counter(s) }}
}

// queuesColumns are the system table's columns, in order. docs/sql.md
// defines each.
var queuesColumns = []queuesColumn{
	{"name", parser.TypeText, false, func(q *queueStats) any { return q.t.Name }},
	{"rows", parser.TypeInt, false, func(q *queueStats) any { return q.stats.Items }},
	{"visible", parser.TypeInt, true, func(q *queueStats) any { return q.gauge(q.stats.Visible) }},
	{"delayed", parser.TypeInt, true, func(q *queueStats) any { return q.gauge(q.stats.Delayed) }},
	{"leased", parser.TypeInt, true, func(q *queueStats) any { return q.gauge(q.stats.Leased) }},
	{"dead", parser.TypeInt, true, func(q *queueStats) any {
		if !q.hasDead {
			return nil
		}
		return q.dead
	}},
	{"oldest_visible_age_s", parser.TypeInt, true, func(q *queueStats) any {
		if !q.exact() || q.stats.VisibleSince.IsZero() {
			return nil
		}
		return max(int64(q.now.Sub(q.stats.VisibleSince)/time.Second), 0)
	}},
	counterColumn("pushed", queues.StatPushed),
	counterColumn("popped", queues.StatPopped),
	counterColumn("leased_total", queues.StatLeased),
	counterColumn("acked", queues.StatAcked),
	counterColumn("released", queues.StatReleased),
	counterColumn("expired", queues.StatExpired),
	counterColumn("dead_lettered", queues.StatDeadLettered),
	counterColumn("deleted", queues.StatDeleted),
	counterColumn("returned", queues.StatReturned),
	{"stats_since", parser.TypeTimestamp, true, func(q *queueStats) any {
		if !q.exact() {
			return nil
		}
		return q.stats.Since.UTC()
	}},
	{"as_of", parser.TypeTimestamp, false, func(q *queueStats) any { return q.stats.AsOf.UTC() }},
}

// queuesColumnNames lists the system table's columns, for errors.
func queuesColumnNames() string {
	names := make([]string, len(queuesColumns))
	for i, c := range queuesColumns {
		names[i] = c.name
	}
	return strings.Join(names, ", ")
}

// selectQueues runs a SELECT of the system table.
func (e *Executor) selectQueues(tr kv.Transaction, st *parser.Select, b *bound) (*Result, error) {
	const form = "SELECT * | columns FROM " + SystemQueues + " [WHERE name = v]"
	switch {
	case st.Count, st.ForPop, st.Lease != nil, st.Wait != nil, st.OrderBy != nil, st.Limit != nil:
		return nil, fmt.Errorf("%w: %s is a system table: %s, rows by name", ErrStatement, SystemQueues, form)
	case len(st.Where) > 1 || len(st.Where) == 1 && (!strings.EqualFold(st.Where[0].Column, "name") || st.Where[0].Op != parser.OpEq):
		return nil, fmt.Errorf("%w: %s takes WHERE name = v only: %s", ErrStatement, SystemQueues, form)
	}
	res := &Result{HasRows: true}
	var proj []int
	add := func(i int) {
		c := queuesColumns[i]
		proj = append(proj, i)
		res.Columns = append(res.Columns, c.name)
		res.Types = append(res.Types, c.typ)
		res.Nullable = append(res.Nullable, c.nullable)
		res.Lengths = append(res.Lengths, 0)
	}
	if st.Star {
		for i := range queuesColumns {
			add(i)
		}
	}
	for _, name := range st.Columns {
		i := slices.IndexFunc(queuesColumns, func(c queuesColumn) bool { return strings.EqualFold(c.name, name) })
		if i < 0 {
			return nil, fmt.Errorf("%w: %s has no column %s; its columns: %s", ErrUnknownColumn, SystemQueues, name, queuesColumnNames())
		}
		add(i)
	}
	tables, err := e.statsTables(tr, st, b)
	if err != nil {
		return nil, err
	}
	// The gauges classify rows at a time taken once the transaction has
	// its read version, not at the statement's NOW(): every change it
	// sees was made by a clock read before that (on one host's clock), so
	// no row it sees moved by a later clock (a pop that promoted rows
	// due after NOW(), committed between NOW() and the read version) is
	// counted as of an earlier time than the move.
	if _, err := tr.GetReadVersion(); err != nil {
		return nil, err
	}
	now := e.now()
	byName := map[string]*Table{}
	for _, t := range tables {
		byName[strings.ToLower(t.Name)] = t
	}
	rows := make([]*queueStats, 0, len(tables))
	reads := make([]*queues.StatsRead, 0, len(tables))
	for _, t := range tables {
		if len(st.Where) == 1 && !strings.EqualFold(t.Name, b.value(st.Where[0].Value).(string)) {
			continue // the dead-letter table, read for its count
		}
		rows = append(rows, &queueStats{t: t, now: now, hasDead: t.MaxAttempts > 0})
		reads = append(reads, t.Queue.ReadStats(tr, now))
	}
	deads := make([]kv.FutureValue, len(rows))
	for i, r := range rows {
		if d := byName[strings.ToLower(r.t.Name+deadSuffix)]; r.hasDead && d != nil {
			deads[i] = d.Queue.ReadCount(tr)
		}
	}
	for i, r := range rows {
		if r.stats, err = reads[i].Get(); err != nil {
			return nil, err
		}
		if deads[i] != nil {
			if r.dead, err = queues.GetCount(deads[i]); err != nil {
				return nil, err
			}
		}
		if !r.exact() {
			res.migrate = append(res.migrate, r.t.Name)
		}
		out := make([]any, len(proj))
		for j, c := range proj {
			out[j] = queuesColumns[c].value(r)
		}
		res.Rows = append(res.Rows, out)
	}
	return res, nil
}

// statsTables returns the tables a SELECT of the system table reads, by
// name: the one its WHERE names (with its dead-letter table, if any), or
// all, listed through the snapshot (a listing adds no conflicts).
func (e *Executor) statsTables(tr kv.Transaction, st *parser.Select, b *bound) ([]*Table, error) {
	if len(st.Where) == 0 {
		return e.cat.tables(tr.Snapshot())
	}
	name, ok := b.value(st.Where[0].Value).(string)
	if !ok {
		return nil, fmt.Errorf("%w: WHERE name = %v: a table's name is a string", ErrValue, b.value(st.Where[0].Value))
	}
	var out []*Table
	for _, n := range []string{name, name + deadSuffix} {
		t, err := e.cat.table(tr, n)
		switch {
		case errors.Is(err, ErrNoTable):
			return out, nil
		case err != nil:
			return nil, err
		}
		out = append(out, t)
		if t.MaxAttempts == 0 {
			return out, nil // no dead-letter table to count
		}
	}
	return out, nil
}

// autoQueues runs a SELECT of the system table in autocommit: once, then,
// if tables from before statistics have no gauges yet, migrates them and
// runs it again. A migration that cannot write (a read-only handle)
// leaves their gauges NULL.
func (e *Executor) autoQueues(ctx context.Context, b *bound) (*Result, error) {
	res, err := e.auto(ctx, b)
	if err != nil || len(res.migrate) == 0 {
		return res, err
	}
	for _, name := range res.migrate {
		if err := e.migrateStats(ctx, name); err != nil {
			if ctx.Err() != nil || errors.Is(err, queues.ErrCorrupt) {
				return nil, err
			}
			return res, nil
		}
	}
	return e.auto(ctx, b)
}

// migrateStats migrates the statistics of table name (MigrateStats), in
// transactions of migrateBatch rows, each of which reads the table's
// schema, so that a DROP TABLE meanwhile ends it.
func (e *Executor) migrateStats(ctx context.Context, name string) error {
	for done := false; !done; {
		err := e.transact(ctx, nil, true, func(tr kv.Transaction) error {
			t, err := e.cat.table(tr, name)
			if errors.Is(err, ErrNoTable) {
				done = true
				return nil
			}
			if err != nil {
				return err
			}
			done, err = t.Queue.MigrateStats(tr, migrateBatch)
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// countTaken counts the rows an attempt of a FOR POP took as popped
// (leases are counted by the queue).
func (s *stmtCtx) countTaken(rows []row) {
	if isPop(s.b.p.Stmt) {
		s.countPopped(rows)
	}
}

// countPopped counts rows as popped: those of a FOR POP, or of the
// SELECT ... FOR POP of an INSERT ... SELECT (a redrive).
func (s *stmtCtx) countPopped(rows []row) {
	s.t.Queue.AddStat(s.tr, queues.StatPopped, int64(len(rows)))
}

// countDeleted counts the n rows an attempt of a DELETE removed: acked
// when its WHERE has _lease = v, a lease's token (never 0: the holder's
// ack), deleted otherwise.
func (s *stmtCtx) countDeleted(st *parser.Delete, n int64) {
	stat := queues.StatDeleted
	for _, c := range st.Where {
		if v, ok := s.b.value(c.Value).(int64); ok && v != 0 && c.Op == parser.OpEq && strings.EqualFold(c.Column, parser.ColLease) {
			stat = queues.StatAcked
		}
	}
	s.t.Queue.AddStat(s.tr, stat, n)
}

// isSystemSelect reports whether st is a SELECT of the system table.
func isSystemSelect(st parser.Statement) bool {
	s, ok := st.(*parser.Select)
	return ok && isSystemTable(s.Table)
}

// systemTableError turns err, a statement's table lookup's, into what to
// do instead when the table is the system table (which only SELECT reads).
func systemTableError(err error, table string) error {
	if errors.Is(err, ErrNoTable) && isSystemTable(table) {
		return fmt.Errorf("%w: %s is a system table, read with SELECT * FROM %s [WHERE name = v]", ErrStatement, SystemQueues, SystemQueues)
	}
	return err
}
