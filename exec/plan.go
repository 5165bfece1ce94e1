package exec

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/fdbqueue/fdbqueue/parser"
	"github.com/fdbqueue/fdbqueue/queues"
)

// A plan is the access path a statement takes to its rows: which queue
// operation finds them, with its parameters. choosePlan picks it (UPDATE
// builds its one plan itself); run runs it on one run of the statement.
// String shows it with its parameters, as testdata/* pins it, so that a
// statement that silently takes another path (a full scan, say) fails a
// test.
type plan interface {
	// run returns the rows the plan found (and removed, if it removes)
	// and how many it found or removed: len(rows), but for the plans that
	// only count (countAll, clearAll, moveByID).
	run(s *stmtCtx) ([]row, int64, error)
	String() string
}

// goal is what a statement wants of the rows its WHERE, ORDER BY and
// LIMIT select.
type goal uint8

const (
	goalRead   goal = iota // return them (SELECT)
	goalPop                // return and remove them (SELECT ... FOR POP)
	goalCount              // count them (SELECT COUNT(*))
	goalDelete             // remove them and count them (DELETE)
	goalLease              // lease and return them (SELECT ... FOR LEASE)
)

// take is what a plan does to the rows it finds.
type take uint8

const (
	takeNone   take = iota // nothing: it reads them
	takeRemove             // removes them
	takeLease              // leases them (for the statement's lease)
)

func (k take) String() string { return [...]string{"", "remove", "lease"}[k] }

// choosePlan returns the access path to the rows of t that match conds, in
// order, n of them at the most (n < 0: all), for goal; spread is the
// attempt's spread width (see Auto).
//
// now is the statement's NOW(): a WHERE that selects rows hidden at now or
// later reads the hidden rows only (scanHidden).
func choosePlan(t *Table, conds []cond, order queues.Order, n int64, g goal, spread int, now time.Time) plan {
	remove := g == goalPop || g == goalDelete
	id, byIDOK := idLookup(conds)
	f, fitOK := fitLimits(t, conds)
	// Pops and leases take visible rows only; a DELETE removes rows,
	// visible or not: where the pop plans below would serve it, it runs
	// them only while the table has no invisible row (allRows).
	visible := g == goalPop || g == goalLease
	tk := takeNone
	switch g {
	case goalPop, goalDelete:
		tk = takeRemove
	case goalLease:
		tk = takeLease
	}
	switch {
	case g == goalLease && n == 0:
		return limitZero{}
	case g == goalLease && byIDOK:
		return byID{id: id, conds: conds, take: tk, visible: true}
	case g == goalLease && fitOK:
		return leaseN{fit: &f, order: order, n: n}
	case g == goalLease && len(conds) == 0:
		return leaseN{order: order, n: n}
	case g == goalLease:
		return scan{conds: conds, order: order, n: n, take: tk, visible: true}
	case g == goalDelete && !byIDOK && n != 0 && (fitOK || len(conds) == 0 && n > 0):
		return allRows{
			pop:  choosePlan(t, conds, order, n, goalPop, spread, now),
			scan: scan{conds: conds, order: order, n: n, take: tk},
		}
	}
	switch {
	case g == goalCount && len(conds) == 0:
		return countAll{}
	case g == goalDelete && len(conds) == 0 && n < 0:
		return clearAll{}
	case n == 0:
		return limitZero{}
	case byIDOK:
		return byID{id: id, conds: conds, take: tk, visible: visible}
	case fitOK && remove && spread > 0 && n == 1:
		return fitSpreadPop{fit: f, order: order, spread: spread}
	case fitOK && remove:
		return fitPop{fit: f, order: order, n: n}
	case fitOK && n == 1:
		return fitPeek{fit: f, order: order}
	case len(conds) == 0 && remove && spread > 0 && n == 1:
		return spreadPop{order: order, spread: spread}
	case len(conds) == 0 && remove:
		return popN{order: order, n: n}
	}
	sc := scan{conds: conds, order: order, n: n, take: tk, visible: visible}
	if from, ok := hiddenFrom(conds, now); ok && !visible {
		return scanHidden{scan: sc, from: from}
	}
	return sc
}

// hiddenFrom returns the latest from of the conditions _visible_at > from
// and _visible_at >= from whose from is not before now: a row that
// matches them is hidden at now, and so, but for a race that scanHidden
// catches, among the hidden rows.
func hiddenFrom(conds []cond, now time.Time) (time.Time, bool) {
	var from time.Time
	found := false
	for _, c := range conds {
		at, ok := c.val.(time.Time)
		if c.col != colVisibleAt || !ok || (c.op != parser.OpGt && c.op != parser.OpGe) || at.Before(now) {
			continue
		}
		if !found || at.After(from) {
			from, found = at, true
		}
	}
	return from, found
}

// idLookup returns the id of an id = v condition.
func idLookup(conds []cond) (int64, bool) {
	for _, c := range conds {
		if c.col == colID && c.op == parser.OpEq {
			id, ok := c.val.(int64)
			return id, ok
		}
	}
	return 0, false
}

// fit is a WHERE the fit index serves: each resource column at most its
// limit (math.MaxInt64: not bounded), in the index's order.
type fit struct {
	names  []string
	limits []int64
}

// fitLimits returns the fit-index limits when every condition bounds a
// resource column from above (col <= v or col < v).
func fitLimits(t *Table, conds []cond) (fit, bool) {
	if len(t.Resources) == 0 || len(conds) == 0 {
		return fit{}, false
	}
	f := fit{names: make([]string, len(t.Resources)), limits: make([]int64, len(t.Resources))}
	for i, r := range t.Resources {
		f.names[i] = t.Columns[r].Name
		f.limits[i] = math.MaxInt64
	}
	for _, c := range conds {
		k := -1
		for j, r := range t.Resources {
			if c.col == r {
				k = j
			}
		}
		v, isInt := c.val.(int64)
		if k < 0 || !isInt || (c.op != parser.OpLe && c.op != parser.OpLt) {
			return fit{}, false
		}
		if c.op == parser.OpLt {
			if v == math.MinInt64 {
				return fit{}, false
			}
			v--
		}
		f.limits[k] = min(f.limits[k], v)
	}
	return f, true
}

// String shows the bounded resources: cpu<=4, mem<=8.
func (f fit) String() string {
	var parts []string
	for i, l := range f.limits {
		if l != math.MaxInt64 {
			parts = append(parts, fmt.Sprintf("%s<=%d", f.names[i], l))
		}
	}
	return strings.Join(parts, ", ")
}

// The plans. Each finds rows through one kind of queue operation. The
// plans that lease or see every row (leaseN, allRows) are in lease.go, and
// UPDATE's setVisible in write.go; UPDATE chooses its plan in write.go
// (planUpdate).
type (
	// countAll counts a table's rows from its counter, reading none:
	// SELECT COUNT(*) without WHERE.
	countAll struct{}
	// clearAll removes every row at once (one range clear, whatever the
	// table holds) and counts them from the counter: DELETE without WHERE
	// or LIMIT.
	clearAll struct{}
	// limitZero reads nothing: LIMIT 0.
	limitZero struct{}
	// byID reads the row with id, keeps it if it matches every condition
	// (and is visible, if visible), and takes it: a WHERE with id = v.
	byID struct {
		id      int64
		conds   []cond
		take    take
		visible bool
	}
	// fitPop pops the best row that fits, up to n times (n < 0: until
	// none fits): resource limits a pop or DELETE.
	fitPop struct {
		fit   fit
		order queues.Order
		n     int64
	}
	// fitSpreadPop pops one of the first spread rows that fit and share
	// the best fitting priority: a single-row fit pop retried after
	// conflicts.
	fitSpreadPop struct {
		fit    fit
		order  queues.Order
		spread int
	}
	// fitPeek reads the best row that fits: resource limits and LIMIT 1.
	fitPeek struct {
		fit   fit
		order queues.Order
	}
	// spreadPop pops one of the first spread rows of the best priority: a
	// single-row pop without WHERE retried after conflicts.
	spreadPop struct {
		order  queues.Order
		spread int
	}
	// popN pops the first n rows (n < 0: all) in one ordered pass: a pop
	// or DELETE ... LIMIT n without WHERE.
	popN struct {
		order queues.Order
		n     int64
	}
	// scan reads the rows in order (the visible ones only, if visible),
	// keeps those that match every condition, stops after n (n < 0: reads
	// all), and takes those it keeps: any other WHERE.
	scan struct {
		conds   []cond
		order   queues.Order
		n       int64
		take    take
		visible bool
	}
	// scanHidden is scan (not visible) for a WHERE that selects rows hidden
	// at from, from not before the statement's NOW(): _visible_at > from
	// or >= from. It reads the hidden rows only, when the queue shows that
	// no visible row has a _visible_at at or after from (queues.ScanHidden),
	// and runs scan otherwise: either way, it finds what scan finds.
	scanHidden struct {
		scan scan
		from time.Time
	}
	// moveByID moves the row with id to another priority, without
	// reading or rewriting its values: UPDATE t SET priority = v WHERE
	// id = v.
	moveByID struct {
		id, priority int64
	}
)

func (countAll) run(s *stmtCtx) ([]row, int64, error) {
	n, err := s.t.Queue.Count(s.tr)
	return nil, n, err
}

func (clearAll) run(s *stmtCtx) ([]row, int64, error) {
	n, err := s.t.Queue.Count(s.tr)
	if err != nil {
		return nil, 0, err
	}
	s.t.Queue.ClearItems(s.tr)
	return nil, n, nil
}

func (limitZero) run(*stmtCtx) ([]row, int64, error) { return nil, 0, nil }

func (p byID) run(s *stmtCtx) ([]row, int64, error) {
	it, found, err := s.t.Queue.Get(s.tr, p.id)
	if err != nil || !found {
		return nil, 0, err
	}
	r, err := s.decode(it)
	if err != nil {
		return nil, 0, err
	}
	if !matchAll(p.conds, r) || p.visible && it.VisibleAt.After(s.now()) {
		return nil, 0, nil
	}
	return counted(s.takeRows([]row{r}, p.take))
}

func (p fitPop) run(s *stmtCtx) ([]row, int64, error) {
	if p.n == 1 {
		return counted(s.take(1, func() (queues.Item, bool, error) {
			return s.t.Queue.PopFit(s.tr, p.order, p.fit.limits)
		}))
	}
	// Several rows: one ordered pass (PopFitN), not n passes from the
	// head, which would walk past the rows this statement already removed.
	items, err := s.t.Queue.PopFitN(s.tr, p.order, p.fit.limits, clampLimit(p.n))
	if err != nil {
		return nil, 0, err
	}
	return counted(s.decodeAll(items))
}

func (p fitSpreadPop) run(s *stmtCtx) ([]row, int64, error) {
	return counted(s.take(1, func() (queues.Item, bool, error) {
		return s.t.Queue.PopFitSpread(s.tr, p.order, p.fit.limits, p.spread)
	}))
}

func (p fitPeek) run(s *stmtCtx) ([]row, int64, error) {
	return counted(s.take(1, func() (queues.Item, bool, error) {
		return s.t.Queue.PeekFit(s.tr, p.order, p.fit.limits)
	}))
}

func (p spreadPop) run(s *stmtCtx) ([]row, int64, error) {
	return counted(s.take(1, func() (queues.Item, bool, error) {
		return s.t.Queue.PopSpread(s.tr, p.order, p.spread)
	}))
}

func (p popN) run(s *stmtCtx) ([]row, int64, error) {
	items, err := s.t.Queue.PopN(s.tr, p.order, clampLimit(p.n))
	if err != nil {
		return nil, 0, err
	}
	return counted(s.decodeAll(items))
}

func (p scan) run(s *stmtCtx) ([]row, int64, error) {
	scan := s.t.Queue.Scan
	if p.visible {
		// Rows whose lease or delay ended are visible: bring them back to
		// the indexes ScanVisible reads, as a pop through an index does.
		if err := s.t.Queue.Promote(s.tr); err != nil {
			return nil, 0, err
		}
		scan = s.t.Queue.ScanVisible
	}
	out, err := p.find(s, func(fn func(queues.Item) (bool, error)) error {
		return scan(s.tr, p.order, fn)
	})
	if err != nil {
		return nil, 0, err
	}
	return counted(s.takeRows(out, p.take))
}

func (p scanHidden) run(s *stmtCtx) ([]row, int64, error) {
	exact := false
	out, err := p.scan.find(s, func(fn func(queues.Item) (bool, error)) error {
		var err error
		exact, err = s.t.Queue.ScanHidden(s.tr, p.scan.order, p.from, fn)
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	s.e.hiddenScans.Add(1)
	if !exact {
		// A visible row may match (a visible-at mark is at or past from):
		// read them all.
		s.e.hiddenFull.Add(1)
		return p.scan.run(s)
	}
	return counted(s.takeRows(out, p.scan.take))
}

// find returns the rows read gives that match p's conditions, up to p.n
// rows the statement takes.
func (p scan) find(s *stmtCtx, read func(fn func(queues.Item) (bool, error)) error) ([]row, error) {
	var out []row
	taken := int64(0) // rows in out the statement takes: not dead letters
	err := read(func(it queues.Item) (bool, error) {
		r, err := s.decode(it)
		if err != nil {
			return false, err
		}
		if matchAll(p.conds, r) {
			out = append(out, r)
			if !s.deadLetter(p.take, it) {
				taken++
			}
		}
		return p.n < 0 || taken < p.n, nil
	})
	return out, err
}

func (p moveByID) run(s *stmtCtx) ([]row, int64, error) {
	moved, err := s.t.Queue.Move(s.tr, p.id, p.priority)
	if err != nil || !moved {
		return nil, 0, err
	}
	return nil, 1, nil
}

// clampLimit turns a statement's row bound (n < 0: none) into a queue
// call's count.
func clampLimit(n int64) int {
	if n < 0 {
		return math.MaxInt32
	}
	return int(min(n, math.MaxInt32))
}

// take calls next until it finds nothing or has found n rows (n < 0: no
// bound).
func (s *stmtCtx) take(n int64, next func() (queues.Item, bool, error)) ([]row, error) {
	var out []row
	for n < 0 || int64(len(out)) < n {
		it, found, err := next()
		if err != nil {
			return nil, err
		}
		if !found {
			break
		}
		r, err := s.decode(it)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// counted returns rows with their count, for a plan's run.
func counted(rows []row, err error) ([]row, int64, error) {
	if err != nil {
		return nil, 0, err
	}
	return rows, int64(len(rows)), nil
}

func matchAll(conds []cond, r row) bool {
	for _, c := range conds {
		if !c.match(r) {
			return false
		}
	}
	return true
}

func (countAll) String() string  { return "countAll" }
func (clearAll) String() string  { return "clearAll" }
func (limitZero) String() string { return "limitZero" }

func (p byID) String() string {
	args := []string{fmt.Sprintf("id=%d", p.id)}
	var others []string
	for _, c := range p.conds {
		if !(c.col == colID && c.op == parser.OpEq && c.val == any(p.id)) {
			others = append(others, c.String())
		}
	}
	if len(others) > 0 {
		args = append(args, "where "+strings.Join(others, " AND "))
	}
	if p.visible {
		args = append(args, "visible")
	}
	if p.take != takeNone {
		args = append(args, p.take.String())
	}
	return "byID(" + strings.Join(args, ", ") + ")"
}

func (p fitPop) String() string {
	return fmt.Sprintf("fitPop(%v, order=%s, n=%s)", p.fit, orderName(p.order), count(p.n))
}

func (p fitSpreadPop) String() string {
	return fmt.Sprintf("fitSpreadPop(%v, order=%s, spread=%d)", p.fit, orderName(p.order), p.spread)
}

func (p fitPeek) String() string {
	return fmt.Sprintf("fitPeek(%v, order=%s)", p.fit, orderName(p.order))
}

func (p spreadPop) String() string {
	return fmt.Sprintf("spreadPop(order=%s, spread=%d)", orderName(p.order), p.spread)
}

func (p popN) String() string {
	return fmt.Sprintf("popN(order=%s, n=%s)", orderName(p.order), count(p.n))
}

func (p scan) String() string { return "scan(" + p.args() + ")" }

// String shows scan's arguments: from is the WHERE's.
func (p scanHidden) String() string { return "scanHidden(" + p.scan.args() + ")" }

func (p scan) args() string {
	var args []string
	if len(p.conds) > 0 {
		where := make([]string, len(p.conds))
		for i, c := range p.conds {
			where[i] = c.String()
		}
		args = append(args, "where "+strings.Join(where, " AND "))
	}
	args = append(args, "order="+orderName(p.order), "n="+count(p.n))
	if p.visible {
		args = append(args, "visible")
	}
	if p.take != takeNone {
		args = append(args, p.take.String())
	}
	return strings.Join(args, ", ")
}

func (p moveByID) String() string {
	return fmt.Sprintf("moveByID(id=%d, priority=%d)", p.id, p.priority)
}

func orderName(o queues.Order) string {
	if o == queues.Max {
		return "max"
	}
	return "min"
}

// count shows a row count: n < 0 is all.
func count(n int64) string {
	if n < 0 {
		return "all"
	}
	return fmt.Sprint(n)
}
