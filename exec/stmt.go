package exec

import (
	"context"
	"fmt"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/parser"
	"github.com/fdbqueue/fdbqueue/queues"
)

// bound is a statement bound to its arguments, made once per Auto or Exec
// call, with what must stay the same across the retries of Auto (the ids
// of inserted rows, the statement's token) and what Auto's retry policy
// sets for each attempt (the spread).
type bound struct {
	p    *parser.Parsed
	args Args
	ids  []int64
	// spread, when positive, makes single-row pops take one of the first
	// spread items of the best priority: set on retries after conflicts.
	spread int
	// token names the statement across retries (ID 0: none): a DDL token
	// (see ddlDone), a pop's receipt (see queues.Receipt), a DELETE's
	// count receipt (see queues.CountReceipt). transact marks it Unsure
	// once an attempt may have been applied.
	token queues.Token
	// wait is a FOR POP WAIT's wait, and what it keeps across its rounds.
	wait waitState
	// lease is FOR LEASE's duration (0: not a lease).
	lease time.Duration
	// now is the statement's time: NOW(), read once when it is bound.
	now time.Time
	// dry makes an INSERT check its rows and write nothing: a schedule's
	// at CREATE SCHEDULE (schedule.go).
	dry bool
	// forwarded: another process forwarded the statement (forward.go),
	// which runs it here under its token.
	forwarded bool
}

// bind checks args against p's placeholders and makes the ids of the rows
// an INSERT pushes.
func (e *Executor) bind(ctx context.Context, p *parser.Parsed, args Args) (*bound, error) {
	if err := checkArgs(p, args); err != nil {
		return nil, err
	}
	b := &bound{p: p, args: args, now: e.now()}
	if err := b.bindWait(); err != nil {
		return nil, err
	}
	if ins, ok := p.Stmt.(*parser.Insert); ok {
		// Ids are made once, outside the retry loop: a retry pushes the
		// same rows with the same ids. An INSERT that gives them (a
		// restore's) takes none from the counter.
		if givesIDs(ins) {
			b.ids = make([]int64, len(ins.Rows))
			return b, nil
		}
		ids, err := e.newIDs(ctx, len(ins.Rows))
		if err != nil {
			return nil, err
		}
		b.ids = ids
	}
	return b, nil
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

// value returns the value of a literal or placeholder.
func (b *bound) value(v parser.Value) any {
	if v.Kind != parser.ValueArg {
		return literal(v)
	}
	if v.Name != "" {
		return b.args.Named[v.Name]
	}
	return b.args.Positional[v.Ordinal-1]
}

// stmtCtx is one run of a statement on a table (one attempt, in Auto): its
// transaction, its table as the transaction sees it, and its bound
// arguments. Plans run on it.
type stmtCtx struct {
	tr kv.Transaction
	t  *Table
	b  *bound
	// idsOnly is set for a statement that needs no column values, only
	// ids: a DELETE whose WHERE names no column but id, a SELECT id. Its
	// rows are not decoded (see decode).
	idsOnly bool
	// now reads the clock of the tables' queues.
	now func() time.Time
	// e is the executor the statement runs on (its catalog).
	e *Executor
	// dead is t's dead-letter table, once a lease of this run moved a row
	// there (see moveDead).
	dead *Table
}

// stmt starts a run of b on table in tr: it reads the table's schema,
// which makes a concurrent DROP TABLE conflict with the statement.
func (e *Executor) stmt(tr kv.Transaction, table string, b *bound) (*stmtCtx, error) {
	t, err := e.cat.table(tr, table)
	if err != nil {
		return nil, systemTableError(err, table)
	}
	return &stmtCtx{tr: tr, t: t, b: b, now: e.nowFn, e: e}, nil
}

// givesIDs reports whether ins gives its rows' ids.
func givesIDs(ins *parser.Insert) bool {
	for _, c := range ins.Columns {
		if i, ok := pseudoColumn(c); ok && i == colID {
			return true
		}
	}
	return false
}
