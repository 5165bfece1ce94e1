package exec

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/parser"
	"github.com/fdbqueue/fdbqueue/queues"
)

// Combining: single-row pops and small INSERTs that arrive while another
// statement of their table runs wait for it, and then run together, one
// after the other in one transaction, with one commit.
//
// Concurrent pops of a queue all want its head. Each in its own
// transaction, they pass over the rows the others claimed (queues.Claims),
// read past rows popped since their read version, and each pays for a
// commit; with more consumers than cores most of them wait for a core
// holding their claims and read versions, and every added consumer made
// the others slower. Measured on a 2-core machine, memory:, 100,000 tasks,
// limits that fit everything: 42,851 pops/s from 1 consumer, 19,651 from
// 32. In one transaction a pop sees the pops before it (their rows are
// gone from its reads), so a group passes over nothing and commits once.
//
// Only autocommit FOR POP ... LIMIT 1 statements without WAIT combine, and
// INSERTs of up to maxCombinedRows rows, on databases whose commits are
// certain (kv.CommitsCertain): such a statement keeps no receipt, and its
// only outcome is the row it took or the ids it gave. Single-row INSERTs
// from 8 clients, memory:, medians of 3 interleaved runs: 38.6k rows/s
// before, 47.1k after (42.8k and 48.0k from one client); on file: group
// commit already shares the fsyncs, and the figures did not move beyond
// the noise (10.7k before, 10.1k after). There, a group of INSERTs hands
// the lead on once its commit waits only for the disk (early), so that
// the statements that arrived meanwhile share the next fsync: 16.6k ->
// 22.1k rows/s from 8 clients (medians of 3 interleaved runs).
//
// A group runs its statements in arrival order; one that fails on its own
// (an error that is not the transaction's) leaves the group, which runs
// again without it. A statement whose context ends while it waits leaves
// the queue and does nothing; once its group began it waits for the
// group's outcome, as its row may be committed. The group's transaction
// ends early only once the contexts of all its statements ended.
//
// Each table has two combiners, one for its pops and one for its
// INSERTs: up to half as many groups of pops run at once as Go has
// processors (at least one), and as many groups of INSERTs as it has
// processors (maxLeaders, maxInsertLeaders), so that statements of one
// table on many cores still run side by side, pops choosing different
// rows through their claims.
type stmtCombiner struct {
	mu      sync.Mutex
	queue   []*combineReq // waiting to run, in arrival order
	leading int           // groups running
	leaders int           // the most groups that run at once
	last    int           // the size of the last group to start
	// early: a group hands the lead on once its commit waits only for
	// the disk (kv.CommitQueuer), not once it returns (see combined).
	early bool

	// groupHook, if set (tests), runs in the leader before each group,
	// with the group's size, without mu held.
	groupHook func(n int)
}

// combineReq is one statement on its way through the combiner.
type combineReq struct {
	ctx context.Context
	b   *bound
	res *Result
	err error
	// lead receives true when the request is to lead the next group, or
	// false once its group ran (res and err are set).
	lead chan bool
	// taken: the request is in a group (guarded by stmtCombiner.mu).
	taken bool
}

// maxGroup bounds the statements of one group, so that a group's
// transaction stays small and its statements return soon.
const maxGroup = 64

// maxCombinedRows is the most rows an INSERT that combines adds.
const maxCombinedRows = 4

// combinable reports whether b, an autocommit statement, may run in a
// group with others, on a database whose commits are certain: a
// single-row FOR POP without WAIT, or an INSERT of a few rows.
//
// A statement another process forwarded (forward.go) combines too, with
// its token, when this process serves the database on an engine whose
// commits are certain, as the group's commit then is: each statement
// records its receipt in the group's transaction, for the retry of a
// caller that lost its connection. One whose token is Unsure looks its
// receipt up, and runs alone.
func (e *Executor) combinable(b *bound) bool {
	switch {
	case b.forwarded && b.token.ID != 0 && !b.token.Unsure && e.srv != nil && e.srv.ServingCertain():
	case !e.certain || b.token.ID != 0:
		return false
	}
	switch s := b.p.Stmt.(type) {
	case *parser.Select:
		return s.ForPop && b.wait.d == 0 && s.Limit != nil && s.Limit.Kind == parser.ValueInt && s.Limit.Int == 1
	case *parser.Insert:
		return len(s.Rows) <= maxCombinedRows
	}
	return false
}

// combinerOf returns the combiner of the pops of the table b pops from,
// or of the INSERTs into the table b inserts into.
func (e *Executor) combinerOf(b *bound) *stmtCombiner {
	var name string
	leaders, early := maxLeaders(), false
	switch s := b.p.Stmt.(type) {
	case *parser.Select:
		name = "pop " + s.Table
	case *parser.Insert:
		name, leaders, early = "insert "+s.Table, maxInsertLeaders(), true
	}
	name = strings.ToLower(name)
	if c, ok := e.combiners.Load(name); ok {
		return c.(*stmtCombiner)
	}
	c, _ := e.combiners.LoadOrStore(name, &stmtCombiner{groupHook: e.groupHook, leaders: leaders, early: early})
	return c.(*stmtCombiner)
}

// maxLeaders is how many groups of pops of one table run at once: half as
// many as Go has processors. Groups of pops side by side pass over each
// other's claimed rows, and more of them cost more than they run in
// parallel: on 2 cores, memory:, fit pops with random limits from 32
// consumers, 14.0k pops/s with one group at a time, 8.3k with two.
func maxLeaders() int { return max(1, runtime.GOMAXPROCS(0)/2) }

// maxInsertLeaders is how many groups of INSERTs into one table run at
// once: as many as Go has processors, as INSERTs do not get in each
// other's way. On 2 cores, memory:, single-row INSERTs from 8 clients:
// 42.7k rows/s with one group at a time, 52.7k with two (medians of 3).
func maxInsertLeaders() int { return max(1, runtime.GOMAXPROCS(0)) }

// combined runs b in a group of statements (see stmtCombiner).
func (e *Executor) combined(ctx context.Context, b *bound) (*Result, error) {
	c := e.combinerOf(b)
	r := &combineReq{ctx: ctx, b: b}
	c.mu.Lock()
	if c.leading >= c.leaders {
		r.lead = make(chan bool, 1)
		c.queue = append(c.queue, r)
		c.mu.Unlock()
		var lead bool
		select {
		case lead = <-r.lead:
		case <-ctx.Done():
			c.mu.Lock()
			if !r.taken {
				c.queue = slices.DeleteFunc(c.queue, func(q *combineReq) bool { return q == r })
				c.mu.Unlock()
				return nil, ctx.Err()
			}
			c.mu.Unlock()
			lead = <-r.lead // its group may commit it: wait for the outcome
		}
		if !lead {
			return r.res, r.err
		}
		c.mu.Lock() // handed the lead; r is out of the queue, taken
	}
	if r.lead == nil {
		c.leading++ // a new leader; one handed the lead takes its place
	}
	if len(c.queue) == 0 && c.last > 1 {
		// Alone, right after a group: its statements are on their way
		// back (the group's leader hands the lead on before it tells
		// them their outcome), and most come back with another. Let
		// them queue before running alone: without this, the groups of
		// 8 consumers' pops on 2 cores settled into one statement,
		// then the 7 others (3 to 5 each otherwise), and in some
		// runs 40% of the pops ran alone, each with its own commit.
		c.mu.Unlock()
		runtime.Gosched()
		c.mu.Lock()
	}
	n := min(len(c.queue), maxGroup-1)
	c.last = n + 1
	group := make([]*combineReq, 0, n+1)
	group = append(group, r)
	group = append(group, c.queue[:n]...)
	c.queue = slices.Delete(c.queue, 0, n)
	for _, q := range group {
		q.taken = true
	}
	c.mu.Unlock()

	if c.groupHook != nil {
		c.groupHook(len(group))
	}
	// The next group starts before this one's statements return: once
	// this one's commit waits only for the disk (INSERTs; a group of pops
	// after another that has not landed yet would pass over its rows and
	// conflict with it), or else once it ran.
	handOff := sync.OnceFunc(func() {
		c.mu.Lock()
		if len(c.queue) > 0 {
			next := c.queue[0]
			c.queue = c.queue[1:]
			next.taken = true
			c.mu.Unlock()
			next.lead <- true
		} else {
			c.leading--
			c.mu.Unlock()
		}
	})
	var queued func()
	if c.early {
		queued = handOff
	}
	e.runGroup(group, queued)
	handOff()
	for _, q := range group[1:] {
		q.lead <- false
	}
	return r.res, r.err
}

// runGroup runs the statements of group in one transaction, in order,
// and sets each one's outcome. queued, if not nil, is called once the
// transaction's commit waits only for the disk (kv.CommitQueuer).
func (e *Executor) runGroup(group []*combineReq, queued func()) {
	live := make([]*combineReq, 0, len(group))
	for _, r := range group {
		if err := r.ctx.Err(); err != nil {
			r.err = err // ended before its group began: it took nothing
			continue
		}
		live = append(live, r)
	}
	switch len(live) {
	case 0:
		return // every context ended (a lone statement's had, before it began)
	case 1:
		// Alone: as any statement, with its own context.
		r := live[0]
		r.res, r.err = e.auto(withQueued(r.ctx, queued), r.b)
		return
	}
	// The group outlives the context of any one of its statements, the
	// leader's included: the others depend on it. It ends when all of
	// theirs have ended (no one waits for it any more).
	ctx, cancel := context.WithCancel(context.WithoutCancel(live[0].ctx))
	defer cancel()
	ctx = withQueued(ctx, queued)
	var waiting atomic.Int64
	waiting.Store(int64(len(live)))
	for _, r := range live {
		stop := context.AfterFunc(r.ctx, func() {
			if waiting.Add(-1) == 0 {
				cancel()
			}
		})
		defer stop()
	}
	for len(live) > 0 {
		failed := -1 // the statement whose own error ended the last attempt
		err := e.transact(ctx, nil, false, func(tr kv.Transaction) error {
			failed = -1
			// A statement whose context ended since the last attempt
			// leaves before this one: that attempt failed, so it took
			// nothing, and no one waits for its result. A forwarded
			// pop's caller that lost its connection may, meanwhile,
			// have settled its token as unapplied (forward.go): run
			// again, it would take a row no one receives.
			live = slices.DeleteFunc(live, func(r *combineReq) bool {
				if err := r.ctx.Err(); err != nil {
					r.res, r.err = nil, err
					return true
				}
				return false
			})
			if a, ok := tr.(*queues.Attempt); ok {
				a.Several() // its pops share their reads (queues/firsts.go)
			}
			for i, r := range live {
				res, err := e.run(tr, r.b)
				if err != nil {
					failed = i
					return err
				}
				r.res = res
			}
			return nil
		})
		switch {
		case err == nil:
			return
		case failed >= 0 && kv.Code(err) == 0:
			// That statement's own error: it leaves, the others run again.
			live[failed].res, live[failed].err = nil, tooLarge(live[failed].b.p.Stmt, err)
			live = slices.Delete(live, failed, failed+1)
		default:
			// The transaction's: it ends every statement in it.
			for _, r := range live {
				r.res, r.err = nil, tooLarge(r.b.p.Stmt, err)
			}
			return
		}
	}
}

// queuedKey is the context key of the function a statement's transaction
// calls once its commit waits only for the disk (withQueued).
type queuedKey struct{}

// withQueued returns ctx, whose transactions call queued once their commit
// waits only for the disk (kv.CommitQueuer; see transact). nil: ctx.
func withQueued(ctx context.Context, queued func()) context.Context {
	if queued == nil {
		return ctx
	}
	return context.WithValue(ctx, queuedKey{}, queued)
}
