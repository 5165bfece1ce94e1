package exec

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/parser"
)

// SELECT ... FOR POP WAIT n: waiting for rows on watches, not by polling.
//
// An autocommit FOR POP WAIT runs in rounds. A round is the pop, run as any
// autocommit pop is (retries, spread, the statement's token); when it finds
// no row and the wait has time left, the same transaction watches the
// table's push signal (queues.WatchSignal) and commits, which arms the
// watch at the transaction's read version: a push that committed after the
// pop read the table fires it at once, so no push slips between finding
// nothing and waiting. The statement then waits for the watch, the end of
// its wait, or its context, whichever comes first:
//
//   - the watch fires (a push, or the table was dropped): another round;
//     the table is read again, and a table dropped (or dropped and created
//     again) meanwhile ends the statement with ErrNoTable;
//   - the wait ends: the statement returns no rows;
//   - the context ends: the statement returns the context's error.
//
// Every round that found nothing wrote nothing (or only the signal key,
// once per table, and directory keys fit pops clear), and the round that
// takes rows ends the statement, so a statement that returns an error took
// nothing. Every round keeps the statement's token, so that a retry after
// commit_unknown_result returns what its committed attempt popped.
//
// Each push wakes every consumer waiting on its table: one takes the row,
// the others find nothing (or conflict with the one that took it, and
// retry to find nothing) and wait again, within their deadline.
//
// Inside an explicit transaction WAIT is refused: arming a watch needs a
// commit, which would commit the caller's transaction, and the rows a wait
// finds would be popped in a transaction that the caller does not hold.

// waitState is what a FOR POP WAIT statement keeps across its rounds.
type waitState struct {
	// d is how long the statement waits at most (0: it does not wait).
	d time.Duration
	// arm makes the current round watch the push signal if its pop finds
	// nothing: set while the wait has time left.
	arm bool
	// watch is the watch the current attempt armed, on table watchTable.
	watch      kv.Watch
	watchTable int64
	// table is the id of the table the statement waited on (0 before it
	// waited).
	table int64
	// due is when the table's earliest leased or delayed row becomes
	// visible, as the round that armed the watch read it (zero: none).
	// Time passing fires no watch: the wait also ends then.
	due time.Time
}

// pollInterval is how often a waiting statement polls when the database
// holds kv.MaxWatches watches already, and its own fails with
// too_many_watches: it still waits, by polling, rather than failing.
const pollInterval = 50 * time.Millisecond

// errWaitInTx is returned for FOR POP WAIT in an explicit transaction.
var errWaitInTx = fmt.Errorf("%w: WAIT inside a transaction (FOR POP or FOR LEASE): a wait arms its watch by committing its own transaction, which would commit yours; run it in autocommit (outside BEGIN or sql.Tx), or take rows without WAIT (or with WAIT 0) inside the transaction", parser.ErrUnsupported)

// waitOf converts FOR POP WAIT's value (a literal, or the argument bound to
// its placeholder) to a wait: a time.Duration, or a number of seconds.
func waitOf(v any) (time.Duration, error) {
	var secs float64
	switch x := v.(type) {
	case time.Duration:
		if x < 0 || x > parser.MaxWait {
			_, err := parser.WaitDuration(x.Seconds())
			return 0, fmt.Errorf("%w: %v", ErrValue, err)
		}
		return x, nil
	case int64:
		secs = float64(x)
	case float64:
		secs = x
	case nil:
		return 0, fmt.Errorf("%w: WAIT's argument is NULL; bind a time.Duration or a number of seconds, from 0 (do not wait) to %v", ErrArgs, parser.MaxWait.Seconds())
	case string:
		return 0, fmt.Errorf("%w: WAIT's argument is the string %q; bind a time.Duration or a number of seconds (an int or a float), from 0 (do not wait) to %v", ErrArgs, x, parser.MaxWait.Seconds())
	default:
		return 0, fmt.Errorf("%w: WAIT's argument is a %T; bind a time.Duration or a number of seconds, from 0 (do not wait) to %v", ErrArgs, v, parser.MaxWait.Seconds())
	}
	d, err := parser.WaitDuration(secs)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrValue, err)
	}
	return d, nil
}

// bindWait sets b's wait from a FOR POP WAIT statement's value, and turns
// the time.Duration arguments the driver passes through into int64
// nanoseconds, as database/sql converts them for other drivers, for every
// other use.
func (b *bound) bindWait() error {
	if sel, ok := b.p.Stmt.(*parser.Select); ok && sel.Wait != nil {
		d, err := waitOf(b.value(*sel.Wait))
		if err != nil {
			return err
		}
		b.wait.d = d
	}
	if sel, ok := b.p.Stmt.(*parser.Select); ok && sel.Lease != nil {
		d, err := leaseOf(b.value(*sel.Lease))
		if err != nil {
			return err
		}
		if err := checkLeaseEnd(d, b.now); err != nil {
			return err
		}
		b.lease = d
	}
	var pos []any
	for i, v := range b.args.Positional {
		if d, ok := v.(time.Duration); ok {
			if pos == nil {
				pos = append([]any(nil), b.args.Positional...)
			}
			pos[i] = int64(d)
		}
	}
	if pos != nil {
		b.args.Positional = pos
	}
	var named map[string]any
	for k, v := range b.args.Named {
		if d, ok := v.(time.Duration); ok {
			if named == nil {
				named = make(map[string]any, len(b.args.Named))
				for k2, v2 := range b.args.Named {
					named[k2] = v2
				}
			}
			named[k] = int64(d)
		}
	}
	if named != nil {
		b.args.Named = named
	}
	return nil
}

// armWait watches the push signal of the statement's table when its pop
// found nothing and the current round may wait (see waitState).
func (s *stmtCtx) armWait(rows []row, p plan) error {
	w := &s.b.wait
	if !w.arm || len(rows) > 0 {
		return nil
	}
	if _, none := p.(limitZero); none {
		return nil // LIMIT 0 wants no row: nothing to wait for
	}
	// The due time's read and the signal's, in flight together.
	next := s.t.Queue.ReadNextDue(s.tr)
	watch, err := s.t.Queue.WatchSignal(s.tr)
	if err != nil {
		return err
	}
	due, ok, err := next.Get()
	if err != nil {
		watch.Cancel()
		return err
	}
	w.watch, w.watchTable, w.due = watch, s.t.ID, time.Time{}
	if ok {
		w.due = due
	}
	return nil
}

// checkWaitTable fails a round of a statement that waited when its table
// is gone: dropped, or dropped and created again (a new table, with a new
// id, under the same name).
func (s *stmtCtx) checkWaitTable() error {
	if id := s.b.wait.table; id != 0 && id != s.t.ID {
		return fmt.Errorf("%w: %s was dropped (and created again) while the statement's WAIT waited for its rows", ErrNoTable, s.t.Name)
	}
	return nil
}

// waitPop runs an autocommit FOR POP WAIT statement in rounds (see above).
func (e *Executor) waitPop(ctx context.Context, b *bound) (*Result, error) {
	wctx, cancel := context.WithTimeout(ctx, b.wait.d)
	defer cancel()
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		b.wait.arm = wctx.Err() == nil
		res, err := e.auto(ctx, b)
		w := b.wait.watch
		b.wait.watch = nil
		if err != nil && b.wait.table != 0 && errors.Is(err, ErrNoTable) {
			err = fmt.Errorf("%w (it was dropped while the statement's WAIT waited for its rows)", err)
		}
		if err != nil || w == nil {
			if w != nil {
				w.Cancel()
			}
			return res, err
		}
		b.wait.table = b.wait.watchTable
		var dueC <-chan time.Time
		var dueT *time.Timer
		if !b.wait.due.IsZero() {
			dueT = time.NewTimer(max(0, b.wait.due.Sub(e.now())))
			dueC = dueT.C
		}
		stopDue := func() {
			if dueT != nil {
				dueT.Stop()
			}
		}
		select {
		case <-dueC:
			w.Cancel() // a leased or delayed row became visible: take it
		case <-w.Done():
			err := w.Err()
			switch {
			case err == nil: // a push, or a drop: pop again
			case kv.Code(err) == kv.CodeTooManyWatches:
				// Poll instead; the next round sees whether the wait
				// or the context ended meanwhile.
				sleepCtx(wctx, pollInterval/2+rand.N(pollInterval))
			default:
				return nil, fmt.Errorf("fdbqueue: WAIT: the watch on the table's pushes failed; nothing was taken: %w", err)
			}
		case <-wctx.Done():
			stopDue()
			w.Cancel()
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			return res, nil // the wait is over: no rows
		}
		stopDue()
	}
}

// sleepCtx sleeps for d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
