package exec

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/parser"
)

// Deterministic makes e number the rows it inserts 1, 2, 3, ... and its
// statement tokens (DDL tokens, pop and DELETE receipts) 1001, 1002, ...,
// and stops its clock at at (Advance moves it), so that a test can pin the keys statements
// read and write (testdata/*). Production ids and tokens are random (see
// queues.NewID), which a test cannot pin. It is for tests only: call it
// before e runs any statement.
func (e *Executor) Deterministic(at time.Time) {
	var tokens atomic.Int64
	tokens.Store(1000)
	e.ids = new(countedIDs)
	e.newToken = func() int64 { return tokens.Add(1) }
	opts := e.opts
	opts.Clock = func() time.Time { return at.Add(time.Duration(e.advanced.Load())) }
	e.setOptions(opts)
}

// countedIDs numbers rows 1, 2, 3, ... (from its count + 1): ids a test
// can pin.
type countedIDs struct{ n atomic.Int64 }

func (c *countedIDs) Fill(_ context.Context, ids []int64) error {
	last := c.n.Add(int64(len(ids)))
	for i := range ids {
		ids[i] = last - int64(len(ids)-1-i)
	}
	return nil
}

func (c *countedIDs) Past(_ context.Context, floor int64) error {
	for {
		n := c.n.Load()
		if n >= floor || c.n.CompareAndSwap(n, floor) {
			return nil
		}
	}
}

// Second returns another executor on e's database and root, as another
// client would have: a catalog cache of its own. It is deterministic as e
// (which Deterministic must have made so), numbering its rows from
// 1,000,001 and its tokens from 5001, on e's clock.
func (e *Executor) Second() *Executor {
	s := New(e.db, e.cat.root)
	var tokens atomic.Int64
	ids := new(countedIDs)
	ids.n.Store(1_000_000)
	tokens.Store(5000)
	s.ids = ids
	s.newToken = func() int64 { return tokens.Add(1) }
	s.setOptions(e.opts)
	return s
}

// SecondAhead is Second on a clock that reads skew later than e's: another
// host's, ahead.
func (e *Executor) SecondAhead(skew time.Duration) *Executor {
	s := e.Second()
	opts := e.opts
	opts.Clock = func() time.Time { return e.opts.Clock().Add(skew) }
	s.setOptions(opts)
	return s
}

// HiddenScans returns how many times scanHidden plans ran, and how many of
// them scanned every row.
func (e *Executor) HiddenScans() (runs, full int64) {
	return e.hiddenScans.Load(), e.hiddenFull.Load()
}

// Advance moves the clock Deterministic stopped by d.
func (e *Executor) Advance(d time.Duration) { e.advanced.Add(int64(d)) }

// SQLLiteral shows a value as SQL writes it, as plans show values.
var SQLLiteral = sqlLiteral

// Plan returns the plan a SELECT, DELETE or UPDATE would take now, in an
// attempt whose spread width is spread (see Auto), without running it.
func (e *Executor) Plan(ctx context.Context, p *parser.Parsed, args Args, spread int) (string, error) {
	b, err := e.bind(ctx, p, args)
	if err != nil {
		return "", err
	}
	b.spread = spread
	var chosen plan
	var plain string // a plan shown as text: INSERT ... SELECT's
	err = e.db.Transact(ctx, func(tr kv.Transaction) error {
		var table string
		switch st := p.Stmt.(type) {
		case *parser.InsertSelect:
			_, _, q, _, err := e.planInsertSelect(tr, st, b)
			if err == nil {
				plain = insertSelectPlan(st, q)
			}
			return err
		case *parser.Select:
			table = st.Table
		case *parser.Delete:
			table = st.Table
		case *parser.Update:
			table = st.Table
		default:
			return fmt.Errorf("a %T has no plan (SELECT, INSERT ... SELECT, DELETE and UPDATE have)", st)
		}
		s, err := e.stmt(tr, table, b)
		if err != nil {
			return err
		}
		switch st := p.Stmt.(type) {
		case *parser.Select:
			var q *query
			if q, err = s.planSelect(st); q != nil {
				chosen = q.plan
			}
		case *parser.Delete:
			chosen, err = s.planDelete(st)
		case *parser.Update:
			chosen, err = s.planUpdate(st)
		}
		return err
	})
	if err != nil || plain != "" {
		return plain, err
	}
	return chosen.String(), nil
}

// OnGroup makes f run before each group of combined statements
// (combine.go) with the group's size, in the group's leader. Call it
// before e runs any statement.
func (e *Executor) OnGroup(f func(n int)) { e.groupHook = f }

// MaxLeaders is how many groups of combined pops of one table run at
// once; MaxInsertLeaders, of combined INSERTs.
var MaxLeaders, MaxInsertLeaders = maxLeaders, maxInsertLeaders

// WithQueued returns ctx, whose transactions call queued once their commit
// waits only for the disk (file: engines), as combining does.
var WithQueued = withQueued

// CheckUnique checks t's unique index against its rows (checkUnique).
func CheckUnique(tr kv.ReadTransaction, t *Table) error { return checkUnique(tr, t) }
