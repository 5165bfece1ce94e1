package exec

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/parser"
	"github.com/fdbqueue/fdbqueue/queues"
)

// Putting back the rows of an autocommit pop that the program never read.
//
// An autocommit SELECT ... FOR POP commits before its rows reach the
// program: database/sql hands them over one by one (Rows.Next) after
// QueryContext returned. If the rows are closed first, by the program
// (an early Close, QueryRow reading one row of LIMIT 3) or by database/sql
// because the statement's context ended, the rows not handed over would
// be gone from the table and never seen. The driver gives them
// back with PutBack instead, so that a row a pop removed either reaches
// the program or is in the table again:
//
//   - at its place: the same id, priority and seq (queues.PutBack), so the
//     next pop takes it before the rows pushed after it, with its values,
//     visible_at, lease and attempts as they were;
//   - in one transaction of its own, exactly-once: with a token of its own
//     and a receipt when commits may be unknown (a retry after
//     commit_unknown_result must not put rows back that another pop took
//     meanwhile), retried as an autocommit statement is;
//   - whatever the statement's context: it has often ended (that is why the
//     rows were closed), so the put-back keeps its values only, and runs
//     for at most putBackTimeout.
//
// Inside a transaction (sql.Tx, BEGIN) nothing is put back: the pop is the
// caller's to commit or roll back (Exec keeps no popped rows).
//
// A pop that returns an error must have taken nothing too. One whose last
// commit had an unknown outcome and which cannot retry (on FoundationDB, a
// context that ends while the commit is in flight reports
// commit_unknown_result, kv/fdb) may have taken rows that nobody will see:
// settle settles it (queues.SettlePop), so that it took nothing, either
// way, before it returns its error.

// putBackTimeout bounds a put-back: the time its transaction and retries
// may take once the statement's context no longer does.
const putBackTimeout = 10 * time.Second

// popped is what an autocommit pop took, for PutBack: its table as the pop
// read it, and its rows, in the order of its result's rows.
type popped struct {
	t    *Table
	rows []row
}

// Popped returns how many rows the autocommit pop whose result r is took:
// those PutBack may return (0 for any other result).
func (r *Result) Popped() int { return len(r.popped.rows) }

// PutBack returns the rows of res from the from-th (0-based) on to their
// table, at their places: the rows of an autocommit FOR POP that were
// never handed to the program. It does nothing for any other result (no
// rows taken, or taken inside a transaction) or when from is past the
// rows, and puts back nothing, with no error, when the table was dropped
// since (its rows went with it). ctx gives the put-back its values, not its
// end (see above). When it fails, the rows are lost (or, if its last
// attempt's commit had an unknown outcome, may be): the error wraps
// ErrPutBack, names them, and wraps the cause.
func (e *Executor) PutBack(ctx context.Context, res *Result, from int) error {
	if res == nil || from >= len(res.popped.rows) {
		return nil
	}
	t, rows := res.popped.t, res.popped.rows[from:]
	items := make([]queues.Item, len(rows))
	for i, r := range rows {
		items[i] = r.item
	}
	var token queues.Token // made once: every attempt looks for the same receipt
	if !e.certain {
		token = queues.Token{ID: e.newToken(), At: e.now()}
	}
	err := e.detached(ctx, &token, token.ID != 0, t.Name, t.ID, func(tr kv.Transaction, now *Table) error {
		if now == nil {
			return nil // dropped: its rows went with it
		}
		applied, err := now.Queue.PutBack(tr, token, items)
		if err == nil && applied {
			err = reclaimUnique(tr, now, items, false)
		}
		return err
	})
	if err == nil {
		return nil
	}
	ids := make([]int64, len(items))
	for i, it := range items {
		ids[i] = it.ID
	}
	lost := "are lost"
	if kv.IsMaybeCommitted(err) {
		lost = "may be lost (an attempt to put them back may have been applied)"
	}
	return fmt.Errorf("%w: %d rows of %s (ids %v) were popped and not read, and %s: %w", ErrPutBack, len(ids), t.Name, ids, lost, err)
}

// settle settles the autocommit pop b, which ended with err, an error of
// unknown outcome (see above), under the same bounds as a put-back, and
// returns the error the pop returns: err's cause, saying that the pop took
// nothing, or, if settling failed, err and why.
func (e *Executor) settle(ctx context.Context, b *bound, err error) error {
	table := b.p.Stmt.(*parser.Select).Table
	putBack := queues.Token{ID: e.newToken(), At: e.now()} // made once, as PutBack's
	applied := false
	serr := e.detached(ctx, &putBack, true, table, 0, func(tr kv.Transaction, t *Table) (err error) {
		applied = false
		if t == nil {
			return nil // dropped: what it took went with it
		}
		var items []queues.Item // what it took, to take its unique keys back
		if len(t.Unique) > 0 {
			if items, _, err = t.Queue.Receipt(tr, queues.Token{ID: b.token.ID, At: b.token.At, Unsure: true}); err != nil {
				return err
			}
		}
		if applied, err = t.Queue.SettlePop(tr, b.token, putBack); err == nil && applied {
			err = reclaimUnique(tr, t, items, true)
		}
		return err
	})
	if serr != nil {
		return errors.Join(err, fmt.Errorf("fdbqueue: the pop's commit had an unknown outcome, and settling it failed: the rows it may have taken may be lost: %w", serr))
	}
	took := "it took nothing"
	if applied {
		took = "it had taken rows, which went back to their places"
	}
	if cerr := ctxEnded(ctx); cerr != nil {
		return fmt.Errorf("%w (the pop's last commit had an unknown outcome; settled: %s)", cerr, took)
	}
	return fmt.Errorf("fdbqueue: the pop gave up after a commit of unknown outcome (settled: %s): %v", took, err)
}

// detached runs fn on the table name in a transaction of its own, as
// transact runs an autocommit statement's (marking tok Unsure as it does), on a context that keeps ctx's
// values but not its end, for at most putBackTimeout. fn gets nil for a
// table that is gone: dropped, or, if id is not 0, dropped and created
// again (a new table, with another id).
func (e *Executor) detached(ctx context.Context, tok *queues.Token, retryUnknown bool, name string, id int64, fn func(kv.Transaction, *Table) error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), putBackTimeout)
	defer cancel()
	return e.transact(ctx, tok, retryUnknown, func(tr kv.Transaction) error {
		t, err := e.cat.table(tr, name)
		switch {
		case errors.Is(err, ErrNoTable):
			t = nil
		case err != nil:
			return err
		case id != 0 && t.ID != id:
			t = nil
		}
		return fn(tr, t)
	})
}

// ctxEnded returns ctx's error, or context.DeadlineExceeded once its
// deadline has passed: under load ctx.Err() stays nil for a while after
// the deadline that an engine already acted on (kv/fdb ends a transaction
// at its context's deadline by the clock).
func ctxEnded(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}
