package exec

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/parser"
	"github.com/fdbqueue/fdbqueue/queues"
)

// Executor runs statements against one database.
type Executor struct {
	db  kv.Database
	cat *catalog
	// claims are the rows the pops in flight chose (see queues.Claims):
	// every autocommit attempt runs in a queues.Attempt of it (transact).
	claims *queues.Claims
	// spreads holds, per table name, the spread width recent single-row
	// pops needed (*atomic.Int64): 0 while pops do not conflict.
	spreads sync.Map
	// ids makes row ids, from the database's counter (queues.IDs), and
	// newToken statement tokens (queues.NewID); in tests, deterministic
	// sources (see export_test.go), so that the keys a statement writes
	// can be pinned in testdata.
	ids      idSource
	newToken func() int64
	// opts are the clock and receipt lifetime of every exactly-once
	// record (queues.Receipts): DDL tokens here, and the tables' receipts.
	opts queues.Options
	// ddl records the CREATE and DROP statements applied (see ddlDone).
	ddl queues.Receipts
	// advanced is how far tests moved a stopped clock (nanoseconds; see
	// export_test.go).
	advanced atomic.Int64
	// certain is set when the database's commits are certain
	// (kv.CommitsCertain): INSERT, DELETE and pops then record no
	// receipts, which serve only retries after commit_unknown_result.
	certain bool
	// combiners holds each table's stmtCombiner (combine.go), by
	// lower-case name; groupHook, if set (tests), is their groupHook.
	combiners sync.Map
	groupHook func(n int)
	// sched caches the schedules' definitions (schedule.go).
	sched schedules
	// fwd, if not nil, runs the autocommit pops and leases in the process
	// that serves the database (forward.go); serving holds the tokens of
	// the statements this process runs for others (a chan closed once
	// each ends).
	fwd     Forwarder
	srv     CallServer
	serving sync.Map
	// hiddenScans counts the runs of scanHidden plans, and hiddenFull
	// those of them that scanned every row (see scanHidden): tests read
	// them.
	hiddenScans, hiddenFull atomic.Int64
	// nowFn is now, as a func made once: a method value made per
	// statement (stmtCtx.now) is an allocation.
	nowFn func() time.Time
}

// idSource hands out the ids of the rows INSERTs push: see queues.IDs.
type idSource interface {
	// Fill sets ids to new consecutive ids.
	Fill(ctx context.Context, ids []int64) error
	// Past makes the ids Fill sets from now on greater than floor.
	Past(ctx context.Context, floor int64) error
}

// newIDs returns n new ids for the rows of an INSERT.
func (e *Executor) newIDs(ctx context.Context, n int) ([]int64, error) {
	ids := make([]int64, n)
	if err := e.ids.Fill(ctx, ids); err != nil {
		return nil, err
	}
	return ids, nil
}

// now reads the executor's clock.
func (e *Executor) now() time.Time {
	if e.opts.Clock == nil {
		return time.Now()
	}
	return e.opts.Clock()
}

// Option configures an Executor.
type Option func(*Executor)

// WithClock sets the wall clock receipts expire by, and statements are
// timed by (time.Now by default).
func WithClock(now func() time.Time) Option {
	return func(e *Executor) { e.opts.Clock = now }
}

// WithReceiptTTL sets how long the receipts that make statements
// exactly-once are kept (queues.DefaultReceiptTTL by default): far longer
// than any retry of a statement.
func WithReceiptTTL(d time.Duration) Option {
	return func(e *Executor) { e.opts.ReceiptTTL = d }
}

// maxSpread bounds how many head items a spread pop chooses among.
const maxSpread = 64

// New returns an executor for db, keeping all of fdbqueue's data under the
// key prefix root.
func New(db kv.Database, root []byte, opts ...Option) *Executor {
	e := &Executor{
		db:       db,
		cat:      newCatalog(bytes.Clone(root), queues.Options{}),
		claims:   queues.NewClaims(),
		ids:      queues.NewIDs(db, nextRowIDKey(root)),
		newToken: queues.NewID,
		certain:  kv.CommitsCertain(db),
	}
	e.nowFn = e.now
	for _, o := range opts {
		o(e)
	}
	e.setOptions(e.opts)
	e.fwd, _ = db.(Forwarder)
	if s, ok := db.(CallServer); ok {
		e.srv = s
		s.ServeCalls(e.serveCall)
	}
	return e
}

// setOptions makes opts the options of the executor, its catalog (the
// tables' queues) and its DDL receipts.
func (e *Executor) setOptions(opts queues.Options) {
	e.opts = opts
	root := e.cat.root
	e.cat = newCatalog(root, opts)
	e.ddl = queues.NewReceipts(rootKey(root, tagDDLReceipts), opts,
		kv.PrefixRange(rootKey(root, tagDDL)), kv.PrefixRange(rootKey(root, tagDDLExpiry)))
}

// DB returns the executor's database.
func (e *Executor) DB() kv.Database { return e.db }

// Args are a statement's arguments, already in the driver's value types
// (int64, float64, bool, []byte, string, time.Time, nil), or a
// time.Duration: FOR POP WAIT's wait, and int64 nanoseconds anywhere else.
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
	// popped is what an autocommit pop took, for PutBack (putback.go).
	popped popped
	// migrate names the tables of a SELECT of the system table whose
	// statistics need a migration (stats.go).
	migrate []string
}

// IsReadOnly reports whether the statement writes nothing.
func IsReadOnly(st parser.Statement) bool {
	switch s := st.(type) {
	case *parser.SelectValue, *parser.ShowSchedules:
		return true
	case *parser.Select:
		return !s.Takes()
	}
	return false
}

// Auto runs one statement in its own transaction, retrying conflicts; a
// FOR POP WAIT statement, in as many as its wait needs (see wait.go). It
// returns a result only for a statement that committed.
func (e *Executor) Auto(ctx context.Context, p *parser.Parsed, args Args) (*Result, error) {
	b, err := e.bind(ctx, p, args)
	if err != nil {
		return nil, err
	}
	// Read-only statements commit too: committing a transaction that
	// wrote nothing is free on every engine.
	// The statement's token, made once: a retry after
	// commit_unknown_result finds under it what the committed attempt did
	// (see ddlDone, insert, deleteRows, popOnce); a FOR POP WAIT keeps it
	// for all its rounds.
	// On a database whose commits are certain only DDL takes one (a
	// CREATE or DROP is rare, and its token also answers a retry after a
	// conflict); the others would write receipts no retry ever reads.
	if isDDL(p.Stmt) || takesRows(p.Stmt) && !e.certain {
		b.token = queues.Token{ID: e.newToken(), At: b.now}
	}
	var res *Result
	if e.forwardable(b) {
		res, err = e.forwarded(ctx, b, args)
	} else {
		res, err = e.autoRun(ctx, b)
	}
	return e.settled(ctx, b, res, err)
}

// autoRun runs a bound autocommit statement here: in rounds (FOR POP
// WAIT), combined with others, or in a transaction of its own.
func (e *Executor) autoRun(ctx context.Context, b *bound) (*Result, error) {
	switch {
	case b.wait.d > 0:
		return e.waitPop(ctx, b)
	case e.combinable(b):
		return e.combined(ctx, b)
	case isSystemSelect(b.p.Stmt):
		return e.autoQueues(ctx, b)
	}
	return e.auto(ctx, b)
}

// settled returns the outcome of the autocommit statement b, settling a
// pop whose last commit's outcome is unknown first (see putback.go).
func (e *Executor) settled(ctx context.Context, b *bound, res *Result, err error) (*Result, error) {
	if err != nil && b.token.ID != 0 && isPop(b.p.Stmt) && kv.IsMaybeCommitted(err) {
		err = e.settle(ctx, b, err)
	}
	return res, err
}

// auto runs a bound statement in one transaction (one round of a FOR POP
// WAIT), retrying as transact allows.
func (e *Executor) auto(ctx context.Context, b *bound) (*Result, error) {
	hint := e.spreadHint(b.p.Stmt)
	var res *Result
	attempt := 0
	// A statement that takes or adds rows without a receipt must not run
	// again after an attempt that may have been applied.
	retryUnknown := b.token.ID != 0 || !takesRows(b.p.Stmt)
	err := e.transact(ctx, &b.token, retryUnknown, func(tr kv.Transaction) error {
		attempt++
		b.wait.watch = nil // a failed attempt's watch failed with it
		if hint != nil {
			b.spread = spreadOf(hint, attempt)
		}
		var err error
		res, err = e.run(tr, b)
		return err
	})
	if err != nil {
		// res is a failed attempt's: its rows were not taken, and must
		// not be put back (PutBack).
		return nil, tooLarge(b.p.Stmt, err)
	}
	if hint != nil {
		learnSpread(hint, attempt, b.spread)
	}
	return res, nil
}

// maxTooOld is how many attempts an autocommit statement lets run out of
// time (transaction_too_old, 1007, after running for the whole 5-second
// limit) before it gives up: one that ran out of time three times will not
// fit in a fourth, and FoundationDB's retry loop would run it for as long
// as the context allows. A 1007 that comes sooner (a storage server that
// fell behind, or an injected fault) is retried as FoundationDB does.
const maxTooOld = 3

// transact runs fn in a transaction and commits it, retrying as the
// engine's OnError allows (kv.Transact), but stops after maxTooOld attempts
// that ran out of time, saying why, and, unless retryUnknown, after an
// attempt that may have been applied; after such an attempt it marks tok
// (if not nil) Unsure, so that the next looks its receipt up. Each attempt runs in an Attempt of
// the executor's claims, released once its commit ended
// (queues.Claims.Run), so that concurrent pops choose different rows.
func (e *Executor) transact(ctx context.Context, tok *queues.Token, retryUnknown bool, fn func(kv.Transaction) error) error {
	tr, err := e.db.CreateTransaction(ctx)
	if err != nil {
		return err
	}
	defer tr.Cancel()
	if queued, _ := ctx.Value(queuedKey{}).(func()); queued != nil {
		if q, ok := tr.(kv.CommitQueuer); ok {
			q.OnCommitQueued(queued)
		}
	}
	tooOld := 0
	var unknown error // the first maybe-committed error of an attempt
	for {
		start := e.now()
		if err = e.claims.Run(tr, fn); err == nil {
			return nil
		}
		if kv.IsMaybeCommitted(err) {
			if tok != nil {
				tok.Unsure = true
			}
			if unknown == nil {
				if !retryUnknown {
					return err
				}
				unknown = err
			}
		}
		if kv.Code(err) == kv.CodeTransactionTooOld && e.now().Sub(start) >= kv.MaxTransactionAge {
			tooOld++
		}
		if tooOld == maxTooOld {
			err = stillUnknown(err, unknown)
			return fmt.Errorf("fdbqueue: the statement ran past the 5-second transaction limit %d times in a row, so it cannot finish in one transaction; do the work in smaller statements (LIMIT n in a loop, fewer rows per INSERT): %w", maxTooOld, err)
		}
		if err = tr.OnError(err); err != nil {
			return stillUnknown(err, unknown)
		}
	}
}

// stillUnknown returns the error that ends a statement's retries, joined
// with the maybe-committed error of an earlier attempt, if there was one
// and err does not say so itself: that attempt may have been applied, and
// an attempt that failed afterwards for another reason (a timeout, the
// context) does not change that.
func stillUnknown(err, unknown error) error {
	if unknown == nil || kv.IsMaybeCommitted(err) {
		return err
	}
	return kv.Join(err, fmt.Errorf("an earlier attempt may have been applied: %w", unknown))
}

// Pops that conflict (consumers taking the same head item) turn into
// spread pops (queues.PopSpread): a retry doubles the width, and the table
// remembers it, so that its next pops start there. Once pops stop
// conflicting the width decays back to exact order.
//
// spreadOf returns the spread width of an attempt of a pop: the table's
// hint, doubled (at least 4, at most maxSpread) on a retry.
func spreadOf(hint *atomic.Int64, attempt int) int {
	spread := int(hint.Load())
	if attempt > 1 {
		spread = min(maxSpread, max(4, 2*spread))
	}
	return spread
}

// learnSpread updates the table's hint after a pop committed: the width
// that worked if it needed retries, else one less than the hint.
func learnSpread(hint *atomic.Int64, attempt, spread int) {
	if attempt > 1 {
		hint.Store(int64(spread))
	} else if h := hint.Load(); h > 0 {
		hint.CompareAndSwap(h, h-1)
	}
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
	if s, ok := st.(*parser.InsertSelect); ok {
		return insertSelectLimits(s, err) // and past 5 seconds
	}
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

// Exec runs one statement in the caller's transaction. FOR POP WAIT is
// refused there (WAIT 0 excepted): see wait.go.
func (e *Executor) Exec(tr kv.Transaction, p *parser.Parsed, args Args) (*Result, error) {
	b, err := e.bind(tr.Context(), p, args)
	if err != nil {
		return nil, err
	}
	if b.wait.d > 0 {
		return nil, errWaitInTx
	}
	res, err := e.run(tr, b)
	if res != nil {
		res.popped = popped{} // the caller's transaction: nothing to put back
	}
	return res, err
}

// run runs a bound statement in tr: once in Exec, once an attempt in Auto.
func (e *Executor) run(tr kv.Transaction, b *bound) (*Result, error) {
	switch st := b.p.Stmt.(type) {
	case *parser.CreateTable, *parser.DropTable:
		if done, err := e.ddlDone(tr, b.token); err != nil || done {
			return &Result{}, err
		}
		if _, ok := st.(*parser.CreateTable); ok {
			return e.createTable(tr, st.(*parser.CreateTable))
		}
		return e.dropTable(tr, st.(*parser.DropTable))
	case *parser.CreateSchedule, *parser.DropSchedule:
		if done, err := e.ddlDone(tr, b.token); err != nil || done {
			return &Result{}, err
		}
		if cs, ok := st.(*parser.CreateSchedule); ok {
			return e.createSchedule(tr, cs, b)
		}
		return e.dropSchedule(tr, st.(*parser.DropSchedule))
	case *parser.ShowSchedules:
		return e.showSchedules(tr)
	case *parser.Insert:
		return e.insert(tr, st, b)
	case *parser.InsertSelect:
		return e.insertSelect(tr, st, b)
	case *parser.Select:
		return e.selectRows(tr, st, b)
	case *parser.Delete:
		return e.deleteRows(tr, st, b)
	case *parser.Update:
		return e.update(tr, st, b)
	case *parser.SelectValue:
		n := strconv.FormatInt(st.Value, 10)
		return &Result{HasRows: true, Columns: []string{n}, Types: []parser.Type{parser.TypeInt},
			Nullable: []bool{false}, Lengths: []int{0}, Rows: [][]any{{st.Value}}}, nil
	}
	return nil, fmt.Errorf("%w: %T is not a statement to execute", ErrStatement, b.p.Stmt)
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

func isDDL(st parser.Statement) bool {
	switch st.(type) {
	case *parser.CreateTable, *parser.DropTable, *parser.CreateSchedule, *parser.DropSchedule:
		return true
	}
	return false
}

// isPop reports whether st is a SELECT ... FOR POP.
func isPop(st parser.Statement) bool {
	s, ok := st.(*parser.Select)
	return ok && s.ForPop
}

// takesRows reports whether st adds or removes rows: the statements an
// autocommit retry after commit_unknown_result must not apply twice.
func takesRows(st parser.Statement) bool {
	switch st := st.(type) {
	case *parser.Delete, *parser.Insert, *parser.InsertSelect:
		return true
	case *parser.Select:
		return st.Takes()
	}
	return false
}
