package exec

// Periodic tasks without a leader: CREATE SCHEDULE stores a schedule in
// the catalog (its definition, and apart from it its next-run time), and
// any process fires what is due (FireDue): one transaction inserts the
// occurrence and advances the next-run key it read, so that two processes
// firing the same occurrence conflict, and the one that retries finds it
// advanced and does nothing. A retry after commit_unknown_result reads the
// key again the same way: the firing is exactly-once without a receipt.
//
// Missed runs (no process fired while several occurrences came due) fire
// once, not in a burst: the next run becomes the first slot after now on
// the schedule's grid (its start plus a whole number of intervals).

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/parser"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// Errors of schedules.
var (
	// ErrNoSchedule is returned by DROP SCHEDULE (without IF EXISTS) for
	// a schedule that does not exist.
	ErrNoSchedule = errors.New("fdbqueue: no such schedule")
	// ErrScheduleExists is returned by CREATE SCHEDULE for a name taken.
	ErrScheduleExists = errors.New("fdbqueue: schedule already exists")
	// ErrSchedule is returned when a CREATE SCHEDULE's start is in the
	// past, or when a stored schedule cannot be read.
	ErrSchedule = errors.New("fdbqueue: invalid schedule")
	// ErrScheduled is returned by DROP TABLE for a table that schedules
	// insert into: they are dropped first, as PostgreSQL refuses to drop
	// a table that other objects depend on.
	ErrScheduled = errors.New("fdbqueue: table has schedules")
)

// scheduleVersion is the version of the packed schedule format.
const scheduleVersion = 1

// Schedule is a stored schedule: Insert (an INSERT INTO Table with
// literal values) runs once every Every, on the grid of First.
type Schedule struct {
	Name  string
	Table string
	Every time.Duration
	// First is the first occurrence; occurrences are First + n*Every.
	First time.Time
	// Insert is the INSERT's text, parsed again to fire it.
	Insert string
	// Next is the next occurrence due (read from its own key; zero in
	// the catalog's cache).
	Next time.Time
}

func (s *Schedule) encode() []byte {
	return tuple.Tuple{int64(scheduleVersion), s.Name, s.Table, int64(s.Every), s.First.UnixNano(), s.Insert}.Pack()
}

func decodeSchedule(b []byte) (*Schedule, error) {
	tup, err := tuple.Unpack(b)
	if err != nil || len(tup) != 6 {
		return nil, fmt.Errorf("%w: unreadable schedule", ErrCatalog)
	}
	if v, _ := tup[0].(int64); v != scheduleVersion {
		return nil, fmt.Errorf("%w: schedule format %v, this version reads %d", ErrCatalog, tup[0], scheduleVersion)
	}
	s := &Schedule{}
	s.Name, _ = tup[1].(string)
	s.Table, _ = tup[2].(string)
	every, _ := tup[3].(int64)
	first, _ := tup[4].(int64)
	s.Insert, _ = tup[5].(string)
	s.Every, s.First = time.Duration(every), time.Unix(0, first).UTC()
	if s.Every <= 0 {
		return nil, fmt.Errorf("%w: schedule %s: interval %v", ErrCatalog, s.Name, s.Every)
	}
	return s, nil
}

func encodeNext(t time.Time) []byte { return binary.BigEndian.AppendUint64(nil, uint64(t.UnixNano())) }

func decodeNext(b []byte) (time.Time, error) {
	if len(b) != 8 {
		return time.Time{}, fmt.Errorf("%w: unreadable next run", ErrCatalog)
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(b))).UTC(), nil
}

// nextSlot returns the first occurrence after now of a schedule whose
// occurrence next was due: next plus as many intervals as pass now.
func nextSlot(next time.Time, every time.Duration, now time.Time) time.Time {
	if now.Before(next) {
		return next
	}
	n := now.Sub(next)/every + 1
	return next.Add(n * every)
}

// schedules caches the schedules' definitions as of a metadata version,
// as the catalog caches schemas: a process with no schedules (or none
// changed) finds what is due reading the metadata version and the
// next-run keys only.
type schedules struct {
	mu   sync.Mutex
	mdv  []byte
	list []*Schedule
}

// scheduleList returns the schedules tr sees (Next unset), from the cache
// while the metadata version has not moved. Its reads are snapshot reads:
// it finds candidates, which fire re-reads.
func (e *Executor) scheduleList(tr kv.ReadTransaction) ([]*Schedule, error) {
	snap := tr.Snapshot()
	mdv, err := kv.MetadataVersion(snap)
	cacheable := err == nil
	if err != nil && !errors.Is(err, kv.ErrNoMetadataVersion) && !errors.Is(err, kv.ErrAccessedUnreadable) {
		return nil, err
	}
	if cacheable {
		e.sched.mu.Lock()
		list, hit := e.sched.list, e.sched.mdv != nil && bytes.Equal(e.sched.mdv, mdv)
		e.sched.mu.Unlock()
		if hit {
			return list, nil
		}
	}
	b, end := tuple.PrefixRange(rootKey(e.cat.root, tagSchedule))
	it := snap.GetRange(kv.Range{Begin: b, End: end}, kv.RangeOptions{})
	var list []*Schedule
	for it.Next() {
		s, err := decodeSchedule(it.KeyValue().Value)
		if err != nil {
			return nil, err
		}
		list = append(list, s)
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	if cacheable {
		e.sched.mu.Lock()
		if e.sched.mdv == nil || bytes.Compare(mdv, e.sched.mdv) >= 0 {
			e.sched.mdv, e.sched.list = mdv, list
		}
		e.sched.mu.Unlock()
	}
	return list, nil
}

func scheduleKey(root []byte, name string) []byte {
	return rootKey(root, tagSchedule, strings.ToLower(name))
}

func scheduleNextKey(root []byte, name string) []byte {
	return rootKey(root, tagScheduleNext, strings.ToLower(name))
}

func (e *Executor) createSchedule(tr kv.Transaction, st *parser.CreateSchedule, b *bound) (*Result, error) {
	first := b.now.Add(st.Every)
	if st.Starting != nil {
		if st.Starting.Kind == parser.ValueNow {
			first = b.now
		} else {
			v, err := convert(&Column{Name: "STARTING", Type: parser.TypeTimestamp}, literal(*st.Starting))
			if err != nil {
				return nil, fmt.Errorf("%w: STARTING '%s' is not a timestamp (RFC 3339 text, as '2030-01-02T03:04:05Z')", ErrSchedule, st.Starting.Str)
			}
			if first = v.(time.Time); first.Before(b.now) {
				return nil, fmt.Errorf("%w: STARTING %s is in the past (now is %s); start at NOW() or later", ErrSchedule, first.UTC().Format(time.RFC3339), b.now.UTC().Format(time.RFC3339))
			}
		}
	}
	// The INSERT is checked as it will run, into the table as it is now,
	// without writing anything.
	if err := e.fireInsert(tr, st.Text, b.now, true); err != nil {
		return nil, err
	}
	key := scheduleKey(e.cat.root, st.Name)
	existing, err := tr.Get(key)
	if err != nil {
		return nil, err
	}
	if existing != nil {
		return nil, fmt.Errorf("%w: %s (DROP SCHEDULE %s first)", ErrScheduleExists, st.Name, st.Name)
	}
	if err := e.cat.changed(tr); err != nil {
		return nil, err
	}
	s := &Schedule{Name: st.Name, Table: st.Table, Every: st.Every, First: first.UTC(), Insert: st.Text}
	tr.Set(key, s.encode())
	tr.Set(scheduleNextKey(e.cat.root, st.Name), encodeNext(first))
	return &Result{}, nil
}

func (e *Executor) dropSchedule(tr kv.Transaction, st *parser.DropSchedule) (*Result, error) {
	key := scheduleKey(e.cat.root, st.Name)
	existing, err := tr.Get(key)
	if err != nil {
		return nil, err
	}
	if existing == nil {
		if st.IfExists {
			return &Result{}, nil
		}
		return nil, fmt.Errorf("%w: %s", ErrNoSchedule, st.Name)
	}
	if err := e.cat.changed(tr); err != nil {
		return nil, err
	}
	tr.Clear(key)
	tr.Clear(scheduleNextKey(e.cat.root, st.Name))
	return &Result{}, nil
}

// refuseScheduled returns ErrScheduled, naming them, if schedules insert
// into table. The schedules come from their cache (no round trip while
// the metadata version has not moved), and their range is added to the
// transaction's read conflicts as if read, so a CREATE SCHEDULE committed
// meanwhile makes the DROP TABLE conflict, retry and find it.
func (e *Executor) refuseScheduled(tr kv.Transaction, table string) error {
	list, err := e.scheduleList(tr)
	if err != nil {
		return err
	}
	b, end := tuple.PrefixRange(rootKey(e.cat.root, tagSchedule))
	if err := tr.AddReadConflictRange(kv.Range{Begin: b, End: end}); err != nil {
		return err
	}
	var names []string
	for _, s := range list {
		if strings.EqualFold(s.Table, table) {
			names = append(names, s.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s is the table of schedule %s; DROP SCHEDULE %s first (SHOW SCHEDULES lists them)",
		ErrScheduled, table, strings.Join(names, ", "), strings.Join(names, ", DROP SCHEDULE "))
}

// showSchedules lists the schedules: name, table, interval (seconds),
// next run and the INSERT.
func (e *Executor) showSchedules(tr kv.Transaction) (*Result, error) {
	b, end := tuple.PrefixRange(rootKey(e.cat.root, tagSchedule))
	it := tr.GetRange(kv.Range{Begin: b, End: end}, kv.RangeOptions{})
	var kvs []kv.KeyValue
	for it.Next() {
		kvs = append(kvs, it.KeyValue())
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	res := &Result{HasRows: true,
		Columns:  []string{"name", "table_name", "every_seconds", "next_run", "insert"},
		Types:    []parser.Type{parser.TypeText, parser.TypeText, parser.TypeInt, parser.TypeTimestamp, parser.TypeText},
		Nullable: []bool{false, false, false, false, false},
		Lengths:  []int{0, 0, 0, 0, 0},
	}
	for _, kvp := range kvs {
		s, err := decodeSchedule(kvp.Value)
		if err != nil {
			return nil, err
		}
		raw, err := tr.Get(scheduleNextKey(e.cat.root, s.Name))
		if err != nil {
			return nil, err
		}
		next, err := decodeNext(raw)
		if err != nil {
			return nil, err
		}
		res.Rows = append(res.Rows, []any{s.Name, s.Table, int64(s.Every / time.Second), next, s.Insert})
	}
	return res, nil
}

// Schedules lists the schedules, with their next runs.
func (e *Executor) Schedules(ctx context.Context) ([]Schedule, error) {
	var out []Schedule
	err := e.transact(ctx, nil, true, func(tr kv.Transaction) error {
		out = out[:0]
		res, err := e.showSchedules(tr)
		if err != nil {
			return err
		}
		for _, r := range res.Rows {
			s, err := e.readSchedule(tr, r[0].(string))
			if err != nil {
				return err
			}
			out = append(out, *s)
		}
		return nil
	})
	return out, err
}

// readSchedule reads a schedule and its next run (serializably), or nil
// if there is none.
func (e *Executor) readSchedule(tr kv.Transaction, name string) (*Schedule, error) {
	raw, err := tr.Get(scheduleKey(e.cat.root, name))
	if err != nil || raw == nil {
		return nil, err
	}
	s, err := decodeSchedule(raw)
	if err != nil {
		return nil, err
	}
	next, err := tr.Get(scheduleNextKey(e.cat.root, name))
	if err != nil {
		return nil, err
	}
	if s.Next, err = decodeNext(next); err != nil {
		return nil, err
	}
	return s, nil
}

// fireInsert runs a schedule's INSERT in tr, as of the occurrence at
// (NOW() in its values); dry only checks it.
func (e *Executor) fireInsert(tr kv.Transaction, text string, at time.Time, dry bool) error {
	p, err := parser.Parse(text)
	if err != nil {
		return err
	}
	ins, ok := p.Stmt.(*parser.Insert)
	if !ok {
		return fmt.Errorf("%w: a schedule's INSERT is %T", ErrCatalog, p.Stmt)
	}
	b := &bound{p: p, now: at, dry: dry, ids: make([]int64, len(ins.Rows))}
	if !dry { // a check pushes nothing: no ids reserved for it
		if err := e.ids.Fill(tr.Context(), b.ids); err != nil {
			return err
		}
	}
	_, err = e.insert(tr, ins, b)
	return err
}

// FireDue fires every schedule whose next run is due by the executor's
// clock, each occurrence in one transaction with the advance of its
// next-run key (see the top of this file), and returns how many it fired.
// Any number of processes may call it at once: each occurrence is
// inserted once. A schedule that cannot fire (its INSERT finds its unique
// key taken) stays due, and its error is returned with the others'.
func (e *Executor) FireDue(ctx context.Context) (int, error) {
	now := e.now()
	var due []string
	err := e.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		due = due[:0]
		list, err := e.scheduleList(tr)
		if err != nil {
			return err
		}
		for _, s := range list {
			raw, err := tr.Snapshot().Get(scheduleNextKey(e.cat.root, s.Name))
			if err != nil {
				return err
			}
			if raw == nil {
				continue // dropped since
			}
			next, err := decodeNext(raw)
			if err != nil {
				return err
			}
			if !now.Before(next) {
				due = append(due, s.Name)
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	fired := 0
	var errs []error
	for _, name := range due {
		did, err := e.fire(ctx, name, now)
		if did {
			fired++
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("schedule %s: %w", name, err))
		}
	}
	return fired, errors.Join(errs...)
}

// fire inserts the occurrence of the schedule name due at now, if it is
// still due when read in the transaction that inserts it and advances it.
// A retry (after a conflict, or commit_unknown_result) reads it again: if
// the attempt before was applied, the schedule is no longer due.
func (e *Executor) fire(ctx context.Context, name string, now time.Time) (bool, error) {
	var did bool
	err := e.transact(ctx, nil, true, func(tr kv.Transaction) error {
		did = false
		s, err := e.readSchedule(tr, name)
		if err != nil || s == nil || now.Before(s.Next) {
			return err
		}
		if err := e.fireInsert(tr, s.Insert, s.Next, false); err != nil {
			return err
		}
		tr.Set(scheduleNextKey(e.cat.root, name), encodeNext(nextSlot(s.Next, s.Every, now)))
		did = true
		return nil
	})
	return did, err
}
