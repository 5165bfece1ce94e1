package exec_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/exec"
	"github.com/fdbqueue/fdbqueue/internal/fdbmodel"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/parser"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// TestDataDriven runs the files in testdata, each against a fresh
// executor whose ids, tokens and clock are deterministic
// (Executor.Deterministic), on the FoundationDB path: the embedded engine
// on a modeled cluster (internal/fdbmodel), which hides the embedded
// engine's shortcuts, so the executor keeps the receipts it keeps on
// FoundationDB and never combines statements. Traces show that path. On
// memory: and file: (certain commits) INSERT, DELETE, pops and leases
// neither read nor write receipt keys (receipt, receiptexp), and
// concurrent statements may share a transaction. Commands, each with its
// SQL as input:
//
//	exec        runs each input line as an autocommit statement; prints
//	            the rows of a query (a header of column names, then one
//	            line a row), or a write's affected count and last id.
//	trace       runs one statement as exec does, then prints every key
//	            read and write it made (see recorder), and its waits on
//	            the modeled cluster: "waits: grv=1 reads=5 commit=1 (7)",
//	            its sequential round trips by kind and in all.
//	waits       runs each input line as exec does, printing how many
//	            rows a query returned (not the rows), then its waits and
//	            its requests (gets=N getmanys=calls/keys batches=N
//	            cached=N hidden=N: see fdbmodel.Counts).
//	advance d   moves the executor's stopped clock by d (a Go duration).
//	fire        fires the schedules due (Executor.FireDue) and prints how
//	            many fired and its error; fire trace also prints its
//	            keys and waits, as trace does.
//	plan        prints the plan (access path) of each input line, a
//	            SELECT, DELETE or UPDATE, without running it; spread=N
//	            plans it as an attempt after conflicts would (see Auto).
//
// exec, trace and waits take the argument second: the statements run on a
// second executor on the same database (Executor.Second), as another
// client, with a catalog cache of its own.
//
// A statement that took several attempts says so ("attempts=2") after its
// waits, which are then the sum of its attempts'. In a statement, $name
// stands for the value of column name in the first row of the last query
// that returned rows (an ack names the lease token FOR LEASE returned).
//
// Regenerate the expected output with go test ./exec/ -rewrite, and
// review the diff: a change that adds a round trip to a statement shows.
func TestDataDriven(t *testing.T) {
	t.Parallel()
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		t.Parallel()
		h := newHarness(t)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			h.on = h.e
			if d.HasArg("second") {
				if h.second == nil {
					h.second = h.e.Second()
				}
				h.on = h.second
			}
			switch d.Cmd {
			case "exec":
				return eachLine(d.Input, func(line string) string { return h.exec(t, line) })
			case "plan":
				spread := 0
				d.MaybeScanArgs(t, "spread", &spread)
				return eachLine(d.Input, func(line string) string { return h.plan(t, line, spread) + "\n" })
			case "advance":
				d, err := time.ParseDuration(d.CmdArgs[0].Key)
				require.NoError(t, err)
				h.e.Advance(d)
				return ""
			case "trace":
				h.rec.on, h.rec.log = true, nil
				res := h.exec(t, strings.TrimSpace(d.Input))
				h.rec.on = false
				return res + strings.Join(h.rec.log, "\n") + "\nwaits: " + waitsLine(h.cost) + "\n"
			case "waits":
				return eachLine(d.Input, func(line string) string { return h.waits(t, line) })
			case "fire":
				tracing := d.HasArg("trace")
				h.rec.on, h.rec.log = tracing, nil
				out := h.fire()
				h.rec.on = false
				if tracing {
					out += strings.Join(h.rec.log, "\n") + "\nwaits: " + waitsLine(h.cost) + "\n"
				}
				return out
			}
			d.Fatalf(t, "unknown command %s (accepted: exec, plan, trace, waits, advance, fire)", d.Cmd)
			return ""
		})
	})
}

// eachLine returns the outputs of run for each non-blank line of input.
func eachLine(input string, run func(line string) string) string {
	var out strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(input), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			out.WriteString(run(line))
		}
	}
	return out.String()
}

type harness struct {
	e *exec.Executor
	// second is the second executor (Executor.Second), made when a
	// command first asks for it; on is the one the command runs on.
	second, on *exec.Executor
	rec        *recorder
	// cost is what the last statement run cost on the modeled cluster.
	cost fdbmodel.Counts
	// last is the first row of the last query that returned rows, by
	// column, as SQL literals: what $column stands for in a statement.
	last map[string]string
}

// waitsLine renders a statement's waits, and its attempts if it retried.
func waitsLine(c fdbmodel.Counts) string {
	if c.Attempts > 1 {
		return fmt.Sprintf("%s attempts=%d", c, c.Attempts)
	}
	return c.String()
}

// ddRoot is the driver's root, so that the keys read as the driver's do.
var ddRoot = tuple.Tuple{"fdbqueue"}.Pack()

func newHarness(t *testing.T) *harness {
	db := embedded.Open("", embedded.Config{})
	t.Cleanup(func() { _ = db.Close() })
	// The recorder above the model: it logs what the executor asks for,
	// and the model counts what that costs.
	rec := &recorder{Database: fdbmodel.Wrap(db, fdbmodel.Config{}), root: ddRoot}
	e := exec.New(rec, ddRoot)
	e.Deterministic(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	// Whatever a file did, every queue's indexes still agree with its
	// items, and every unique index with its table's rows.
	t.Cleanup(func() {
		require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
			tables, err := e.TablesIn(tr)
			for _, tb := range tables {
				if err == nil {
					err = tb.Queue.Check(tr)
				}
				if err == nil {
					err = exec.CheckUnique(tr, tb)
				}
			}
			return err
		}))
	})
	return &harness{e: e, rec: rec}
}

// exec runs one statement and renders its outcome.
func (h *harness) exec(t *testing.T, sql string) string {
	t.Helper()
	res, failed := h.run(t, sql)
	if res == nil {
		return failed
	}
	var b strings.Builder
	if res.HasRows {
		b.WriteString(strings.Join(res.Columns, " | ") + "\n")
		for _, r := range res.Rows {
			vals := make([]string, len(r))
			for i, v := range r {
				vals[i] = exec.SQLLiteral(v)
			}
			b.WriteString(strings.Join(vals, " | ") + "\n")
		}
		if len(res.Rows) == 0 {
			b.WriteString("(no rows)\n")
		}
		return b.String()
	}
	return affected(res)
}

// waits runs one statement and renders its outcome in a line (the rows
// of a query are counted, not shown: some, as lease tokens, are random),
// then what it cost.
func (h *harness) waits(t *testing.T, sql string) string {
	t.Helper()
	res, out := h.run(t, sql)
	switch {
	case res == nil:
	case res.HasRows && len(res.Rows) == 1:
		out = "1 row\n"
	case res.HasRows:
		out = fmt.Sprintf("%d rows\n", len(res.Rows))
	default:
		out = affected(res)
	}
	return out + fmt.Sprintf("waits: %s\nrequests: %s\n", waitsLine(h.cost), h.cost.Requests())
}

func affected(res *exec.Result) string {
	out := fmt.Sprintf("affected %d", res.RowsAffected)
	if res.LastInsertID != 0 {
		out += fmt.Sprintf(", last id %d", res.LastInsertID)
	}
	return out + "\n"
}

// column matches $name in a statement: the value of column name in the
// first row of the last query that returned rows.
var column = regexp.MustCompile(`\$[A-Za-z_][A-Za-z0-9_]*`)

// run runs one statement; h.cost is then what it cost. It returns the
// result, or nil and the rendered parse or run error.
func (h *harness) run(t *testing.T, sql string) (*exec.Result, string) {
	t.Helper()
	sql = column.ReplaceAllStringFunc(sql, func(name string) string {
		v, ok := h.last[name[1:]]
		require.True(t, ok, "%s: no column %s in the first row of the last query that returned rows", sql, name)
		return v
	})
	var col fdbmodel.Collector
	defer func() { h.cost = col.Counts() }()
	p, err := parser.Parse(sql)
	if err != nil {
		return nil, fmt.Sprintf("parse error: %v\n", err)
	}
	res, err := h.on.Auto(fdbmodel.WithCollector(bg, &col), p, exec.Args{})
	if err != nil {
		return nil, fmt.Sprintf("error: %v\n", err)
	}
	if len(res.Rows) > 0 {
		h.last = map[string]string{}
		for i, c := range res.Columns {
			h.last[c] = exec.SQLLiteral(res.Rows[0][i])
		}
	}
	return res, ""
}

// fire fires the schedules due (Executor.FireDue) and says how many fired.
func (h *harness) fire() string {
	var col fdbmodel.Collector
	defer func() { h.cost = col.Counts() }()
	n, err := h.on.FireDue(fdbmodel.WithCollector(bg, &col))
	out := fmt.Sprintf("fired %d\n", n)
	if err != nil {
		out += fmt.Sprintf("error: %v\n", err)
	}
	return out
}

// plan returns the plan of one statement, or its error.
func (h *harness) plan(t *testing.T, sql string, spread int) string {
	t.Helper()
	p, err := parser.Parse(sql)
	if err != nil {
		return fmt.Sprintf("parse error: %v", err)
	}
	s, err := h.e.Plan(bg, p, exec.Args{}, spread)
	if err != nil {
		return fmt.Sprintf("error: %v", err)
	}
	return s
}
