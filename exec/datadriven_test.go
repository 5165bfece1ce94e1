package exec_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/exec"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/parser"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// TestDataDriven runs the files in testdata, each against a fresh
// executor whose ids, tokens and clock are deterministic
// (Executor.Deterministic). Commands, each with its SQL as input:
//
//	exec        runs each input line as an autocommit statement; prints
//	            the rows of a query (a header of column names, then one
//	            line a row), or a write's affected count and last id.
//	trace       runs one statement as exec does, then prints every key
//	            read and write it made (see recorder).
//	advance d   moves the executor's stopped clock by d (a Go duration).
//	plan        prints the plan (access path) of each input line, a
//	            SELECT, DELETE or UPDATE, without running it; spread=N
//	            plans it as an attempt after conflicts would (see Auto).
//
// Regenerate the expected output with go test ./exec/ -rewrite, and
// review the diff.
func TestDataDriven(t *testing.T) {
	t.Parallel()
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		t.Parallel()
		h := newHarness(t)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "exec":
				var out strings.Builder
				for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
					if line = strings.TrimSpace(line); line != "" {
						out.WriteString(h.exec(t, line))
					}
				}
				return out.String()
			case "plan":
				spread := 0
				d.MaybeScanArgs(t, "spread", &spread)
				var out strings.Builder
				for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
					if line = strings.TrimSpace(line); line != "" {
						out.WriteString(h.plan(t, line, spread) + "\n")
					}
				}
				return out.String()
			case "advance":
				d, err := time.ParseDuration(d.CmdArgs[0].Key)
				require.NoError(t, err)
				h.e.Advance(d)
				return ""
			case "trace":
				h.rec.on, h.rec.log = true, nil
				res := h.exec(t, strings.TrimSpace(d.Input))
				h.rec.on = false
				return res + strings.Join(h.rec.log, "\n") + "\n"
			}
			d.Fatalf(t, "unknown command %s (accepted: exec, plan, trace, advance)", d.Cmd)
			return ""
		})
	})
}

type harness struct {
	e   *exec.Executor
	rec *recorder
}

// ddRoot is the driver's root, so that the keys read as the driver's do.
var ddRoot = tuple.Tuple{"fdbqueue"}.Pack()

func newHarness(t *testing.T) *harness {
	db := embedded.Open("", embedded.Config{})
	t.Cleanup(func() { _ = db.Close() })
	rec := &recorder{Database: db, root: ddRoot}
	e := exec.New(rec, ddRoot)
	e.Deterministic(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	// Whatever a file did, every queue's indexes still agree with its
	// items.
	t.Cleanup(func() {
		require.NoError(t, db.ReadTransact(bg, func(tr kv.ReadTransaction) error {
			tables, err := e.TablesIn(tr)
			for _, tb := range tables {
				if err == nil {
					err = tb.Queue.Check(tr)
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
	p, err := parser.Parse(sql)
	if err != nil {
		return fmt.Sprintf("parse error: %v\n", err)
	}
	res, err := h.e.Auto(bg, p, exec.Args{})
	if err != nil {
		return fmt.Sprintf("error: %v\n", err)
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
	fmt.Fprintf(&b, "affected %d", res.RowsAffected)
	if res.LastInsertID != 0 {
		fmt.Fprintf(&b, ", last id %d", res.LastInsertID)
	}
	return b.String() + "\n"
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
