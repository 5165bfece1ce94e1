package exec_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/exec"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/parser"
)

// hiddenStart is where the hidden-row tests stop their clocks.
var hiddenStart = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// newHiddenPair returns a deterministic executor on a fresh in-memory
// database with a priority table jobs (priority, v), and a second executor
// on it whose clock reads skew later: another host's, ahead.
func newHiddenPair(t *testing.T, skew time.Duration) (e, ahead *exec.Executor) {
	t.Helper()
	db := embedded.Open("", embedded.Config{})
	t.Cleanup(func() { _ = db.Close() })
	e = exec.New(db, []byte("h"))
	e.Deterministic(hiddenStart)
	ahead = e.SecondAhead(skew)
	mustRun(t, e, "CREATE TABLE jobs (priority INT NOT NULL, v INT)")
	return e, ahead
}

// hiddenRow is a row as the full scan gives it: the columns the reference
// filters on.
type hiddenRow struct {
	id, prio, v, lease int64
	visibleAt          time.Time
}

// allRows reads every row of jobs with a full scan (no WHERE), in the
// order of ORDER BY priority DESC if desc, and in queue order otherwise.
func allRows(t *testing.T, e *exec.Executor, desc bool) []hiddenRow {
	t.Helper()
	sql := "SELECT id, priority, v, _lease, _visible_at FROM jobs"
	if desc {
		sql += " ORDER BY priority DESC"
	}
	var out []hiddenRow
	for _, r := range mustRun(t, e, sql).Rows {
		out = append(out, hiddenRow{id: r[0].(int64), prio: r[1].(int64), v: r[2].(int64), lease: r[3].(int64), visibleAt: r[4].(time.Time)})
	}
	return out
}

// hiddenQuery is a statement the hidden plan serves, and what the full
// scan's rows (in its order) filtered by the same WHERE at now give.
type hiddenQuery struct {
	sql  string
	args func(now time.Time) []any
	desc bool
	// keep is the WHERE; n the LIMIT (-1: none); count: COUNT(*).
	keep  func(r hiddenRow, now time.Time) bool
	n     int
	count bool
}

var hiddenQueries = []hiddenQuery{
	{sql: "SELECT id FROM jobs WHERE _visible_at > NOW() AND _lease != 0 LIMIT 5", n: 5,
		keep: func(r hiddenRow, now time.Time) bool { return r.visibleAt.After(now) && r.lease != 0 }},
	{sql: "SELECT id FROM jobs WHERE _visible_at > NOW() AND _lease = 0 LIMIT 5", n: 5,
		keep: func(r hiddenRow, now time.Time) bool { return r.visibleAt.After(now) && r.lease == 0 }},
	{sql: "SELECT id FROM jobs WHERE _visible_at >= NOW() ORDER BY priority DESC LIMIT 3", n: 3, desc: true,
		keep: func(r hiddenRow, now time.Time) bool { return !r.visibleAt.Before(now) }},
	{sql: "SELECT id FROM jobs WHERE v >= 3 AND _visible_at > ?", n: -1,
		args: func(now time.Time) []any { return []any{now.Add(time.Second)} },
		keep: func(r hiddenRow, now time.Time) bool { return r.v >= 3 && r.visibleAt.After(now.Add(time.Second)) }},
	{sql: "SELECT COUNT(*) FROM jobs WHERE _visible_at > NOW()", n: -1, count: true,
		keep: func(r hiddenRow, now time.Time) bool { return r.visibleAt.After(now) }},
}

// want returns the ids (or the count) the full scan rows give for q at now.
func (q hiddenQuery) want(rows []hiddenRow, now time.Time) []int64 {
	ids := []int64{}
	for _, r := range rows {
		if q.keep(r, now) && (q.n < 0 || len(ids) < q.n) {
			ids = append(ids, r.id)
		}
	}
	if q.count {
		return []int64{int64(len(ids))}
	}
	return ids
}

// check runs q on e, whose clock reads now, checks that it takes the hidden
// plan and returns what the full scan's rows give.
func (q hiddenQuery) check(t *testing.T, e *exec.Executor, now time.Time, context string) {
	t.Helper()
	var args []any
	if q.args != nil {
		args = q.args(now)
	}
	p, err := parser.Parse(q.sql)
	require.NoError(t, err)
	plan, err := e.Plan(bg, p, exec.Args{Positional: args}, 0)
	require.NoError(t, err)
	require.Contains(t, plan, "scanHidden(", q.sql)
	want := q.want(allRows(t, e, q.desc), now)
	got := []int64{}
	for _, r := range mustRun(t, e, q.sql, args...).Rows {
		got = append(got, r[0].(int64))
	}
	require.Equal(t, want, got, "%s\n%s", q.sql, context)
}

// The hidden plan returns what the full scan returns, in random states of
// visible, delayed and leased rows, while another executor, on a clock
// ahead, promotes, pops, leases and releases rows: its promotes move rows
// whose _visible_at is after this executor's NOW() to the visible rows,
// where only a full scan finds them. DELETE through the hidden plan removes
// the rows the full scan would.
func TestHiddenPlanMatchesFullScan(t *testing.T) {
	t.Parallel()
	for seed := range uint64(6) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(seed, 32))
			skew := time.Duration(1+r.IntN(3000)) * time.Millisecond
			if seed%2 == 1 {
				// Ahead by more than the marks' horizon (10 s): its clears
				// of old marks reach past this executor's NOW().
				skew += 10 * time.Second
			}
			e, ahead := newHiddenPair(t, skew)
			var advanced time.Duration
			nowOf := func(x *exec.Executor) time.Time {
				if x == ahead {
					return hiddenStart.Add(advanced + skew)
				}
				return hiddenStart.Add(advanced)
			}
			var log []string
			var lastID int64
			for step := range 250 {
				x := e
				if r.IntN(2) == 0 {
					x = ahead
				}
				var op string
				switch k := r.IntN(10); {
				case k < 2:
					op = fmt.Sprintf("INSERT INTO jobs (priority, v) VALUES (%d, %d)", r.IntN(3), r.IntN(6))
				case k < 3:
					op = fmt.Sprintf("INSERT INTO jobs (priority, v, _visible_at) VALUES (%d, %d, NOW() + INTERVAL %d SECOND)", r.IntN(3), r.IntN(6), r.IntN(5))
				case k < 5:
					op = fmt.Sprintf("SELECT id FROM jobs ORDER BY priority DESC LIMIT %d FOR LEASE %d", 1+r.IntN(3), 1+r.IntN(4))
				case k < 6:
					// A pop: it promotes the rows due on x's clock first.
					op = "SELECT id FROM jobs WHERE v = 5 LIMIT 1 FOR POP"
				case k < 7 && lastID > 0:
					op = fmt.Sprintf("UPDATE jobs SET _visible_at = NOW() WHERE id = %d", 1+r.Int64N(lastID))
				case k < 8:
					d := time.Duration(r.IntN(1500)) * time.Millisecond
					e.Advance(d) // ahead's clock too
					advanced += d
					op = "advance"
				case k < 9:
					q := "DELETE FROM jobs WHERE _visible_at > NOW() AND _lease = 0 LIMIT 2"
					now := nowOf(x)
					before := allRows(t, x, false)
					var gone []int64
					for _, row := range before {
						if row.visibleAt.After(now) && row.lease == 0 && len(gone) < 2 {
							gone = append(gone, row.id)
						}
					}
					res := mustRun(t, x, q)
					require.EqualValues(t, len(gone), res.RowsAffected, "step %d: %s\n%v", step, q, log)
					var left []int64
					for _, row := range allRows(t, x, false) {
						left = append(left, row.id)
					}
					for _, row := range before {
						require.Equal(t, !slices.Contains(gone, row.id), slices.Contains(left, row.id), "step %d: %s: row %d", step, q, row.id)
					}
					op = q
				default:
					op = "SELECT id FROM jobs LIMIT 2 FOR POP"
				}
				if op != "advance" && op[0] != 'D' {
					res := mustRun(t, x, op)
					if res.LastInsertID > lastID {
						lastID = res.LastInsertID
					}
				}
				log = append(log, fmt.Sprintf("%d: %s (clock +%v)", step, op, nowOf(x).Sub(hiddenStart)))
				for _, q := range hiddenQueries {
					q.check(t, e, nowOf(e), fmt.Sprint(log))
					q.check(t, ahead, nowOf(ahead), fmt.Sprint(log))
				}
			}
			runs, full := e.HiddenScans()
			aruns, afull := ahead.HiddenScans()
			t.Logf("runs %d full %d, ahead %d %d", runs, full, aruns, afull)
			require.Positive(t, full, "no state needed the full scan")
			require.Less(t, full+afull, runs+aruns, "no state read the hidden rows alone")
		})
	}
}

// The promote race: a pop on a clock ahead moves a leased row whose lease
// ends after this executor's NOW() back to the visible rows. This
// executor's hidden plan must still return it, as the full scan does: it
// finds the promote's visible-at mark and scans every row. Once its clock
// passes the mark, it reads the hidden rows alone again. Ahead by more than
// the marks' horizon (10 s), the promote marks its cut, 10 s before its
// clock, rather than the row's _visible_at, which is older.
func TestHiddenPlanSeesRowsPromotedAhead(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ skew, past time.Duration }{
		{skew: 2 * time.Second, past: 2 * time.Second},
		{skew: 20 * time.Second, past: 11 * time.Second},
	} {
		t.Run(c.skew.String(), func(t *testing.T) {
			t.Parallel()
			e, ahead := newHiddenPair(t, c.skew)
			mustRun(t, e, "INSERT INTO jobs (priority, v) VALUES (0, 1), (0, 2), (0, 5)")
			leased := mustRun(t, e, "SELECT id FROM jobs LIMIT 1 FOR LEASE 1").Rows
			require.Equal(t, [][]any{{int64(1)}}, leased)
			// The pop promotes row 1 (due in 1s: past on ahead's clock), and
			// takes row 3.
			require.Equal(t, [][]any{{int64(3)}}, mustRun(t, ahead, "SELECT id FROM jobs WHERE v = 5 LIMIT 1 FOR POP").Rows)

			const q = "SELECT id FROM jobs WHERE _visible_at > NOW()"
			require.Equal(t, [][]any{{int64(1)}}, mustRun(t, e, q).Rows, "the promoted row is hidden at e's NOW()")
			runs, full := e.HiddenScans()
			require.Equal(t, [2]int64{1, 1}, [2]int64{runs, full}, "the mark sent the plan to the full scan")

			e.Advance(c.past)
			require.Empty(t, mustRun(t, e, q).Rows)
			runs, full = e.HiddenScans()
			require.Equal(t, [2]int64{2, 1}, [2]int64{runs, full}, "past the mark, the hidden rows alone")
		})
	}
}
