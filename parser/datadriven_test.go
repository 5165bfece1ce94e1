package parser

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"
)

// TestDataDriven runs the files in testdata: the dialect's accepted and
// refused statements. Commands, each with one statement as input (it may
// span lines):
//
//	accept   parses the statement, which must parse, and prints the
//	         statement it parses to (see printParsed): its type and name,
//	         then a line for each field that is set, then NumInput and
//	         Names when there are placeholders.
//	refuse   parses the statement, which must fail with ErrSyntax,
//	         ErrUnsupported or ErrValue, and prints the error's text (which
//	         starts with that error's).
//
// In a statement, {{"s"*n}} stands for the Go string literal s repeated n
// times ({{"s"}} once): for long names and texts, and bytes that are not
// UTF-8.
//
// Regenerate the expected output with go test ./parser/ -rewrite, and
// review the diff: a statement that moves between accept and refuse fails
// rather than being rewritten.
func TestDataDriven(t *testing.T) {
	t.Parallel()
	for _, path := range dataFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
				sql := expand(t, d.Input)
				p, err := parse(sql)
				switch d.Cmd {
				case "accept":
					if err != nil {
						d.Fatalf(t, "refused: %v", err)
					}
					return printParsed(p)
				case "refuse":
					if err == nil {
						d.Fatalf(t, "accepted as:\n%s", printParsed(p))
					}
					// The text starts with its class's, so that the files
					// pin the class too.
					for _, class := range []error{ErrSyntax, ErrUnsupported, ErrValue} {
						if errors.Is(err, class) {
							if !strings.HasPrefix(err.Error(), class.Error()+": ") {
								d.Fatalf(t, "error %q wraps %q but does not start with it", err, class)
							}
							return err.Error() + "\n"
						}
					}
					d.Fatalf(t, "unclassified error %v", err)
					return ""
				}
				d.Fatalf(t, "unknown command %s (accepted: accept, refuse)", d.Cmd)
				return ""
			})
		})
	}
}

// dataFiles lists the datadriven files: the files of testdata, not its
// directories (testdata/fuzz holds the fuzzers' corpus).
func dataFiles(tb testing.TB) []string {
	tb.Helper()
	entries, err := os.ReadDir("testdata")
	require.NoError(tb, err)
	var paths []string
	for _, e := range entries {
		if !e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			paths = append(paths, filepath.Join("testdata", e.Name()))
		}
	}
	require.NotEmpty(tb, paths)
	return paths
}

// dataStatements returns the statements of the datadriven files, expanded,
// for the fuzzers' seeds: each command line's input, up to its ----.
func dataStatements(tb testing.TB) []string {
	tb.Helper()
	var sqls []string
	for _, path := range dataFiles(tb) {
		b, err := os.ReadFile(path)
		require.NoError(tb, err)
		var input []string
		state := 0 // 0: between cases, 1: in an input, 2: in an output
		for _, line := range strings.Split(string(b), "\n") {
			switch {
			case state == 0 && line != "" && !strings.HasPrefix(line, "#"):
				state, input = 1, nil
			case state == 1 && line == "----":
				sqls = append(sqls, expand(tb, strings.Join(input, "\n")))
				state = 2
			case state == 1:
				input = append(input, line)
			case state == 2 && line == "":
				state = 0
			}
		}
	}
	return sqls
}

// repeated is {{"s"*n}} or {{"s"}} in a statement of the datadriven files.
var repeated = regexp.MustCompile(`\{\{("(?:[^"\\]|\\.)*")(?:\*(\d+))?\}\}`)

// expand replaces the {{"s"*n}} of a datadriven statement.
func expand(tb testing.TB, input string) string {
	tb.Helper()
	return repeated.ReplaceAllStringFunc(input, func(m string) string {
		sub := repeated.FindStringSubmatch(m)
		s, err := strconv.Unquote(sub[1])
		require.NoError(tb, err, m)
		n := 1
		if sub[2] != "" {
			n, err = strconv.Atoi(sub[2])
			require.NoError(tb, err, m)
		}
		return strings.Repeat(s, n)
	})
}

// printParsed prints a parsed statement in the stable form the datadriven
// files pin: every field of the statement that is not its zero value, one
// a line (see TestPrintCoversFields), and the placeholders.
func printParsed(p *Parsed) string {
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, "  "+format+"\n", args...) }
	where := func(conds []Cond) {
		for _, c := range conds {
			line("Where %s %s %s", printName(c.Column), c.Op, printValue(c.Value))
		}
	}
	orderLimit := func(ob *OrderBy, limit *Value) {
		if ob != nil {
			dir := "ASC"
			if ob.Desc {
				dir = "DESC"
			}
			line("OrderBy %s %s", printName(ob.Column), dir)
		}
		if limit != nil {
			line("Limit %s", printValue(*limit))
		}
	}
	switch s := p.Stmt.(type) {
	case *CreateTable:
		fmt.Fprintf(&b, "CreateTable %s\n", printName(s.Name))
		if s.IfNotExists {
			line("IfNotExists")
		}
		for _, c := range s.Columns {
			col := printName(c.Name) + " " + c.Type.String()
			if c.Length > 0 {
				col += fmt.Sprintf(" Length=%d", c.Length)
			}
			if c.NotNull {
				col += " NotNull"
			}
			if c.Default != nil {
				col += " Default=" + printValue(*c.Default)
			}
			line("Column %s", col)
		}
		if s.IndexName != "" || len(s.Index) > 0 {
			line("Index %s (%s)", printName(s.IndexName), printNames(s.Index))
		}
		if s.MaxAttempts != 0 {
			line("MaxAttempts %d", s.MaxAttempts)
		}
		if s.Backoff != nil {
			line("Backoff %s (first=%v max=%v)", s.Backoff, s.Backoff.First, s.Backoff.Max)
		}
		for _, u := range s.Unique {
			key := fmt.Sprintf("Unique %s (%s)", printName(u.Name), printNames(u.Columns))
			if u.Window != 0 {
				key += " Window=" + u.Window.String()
			}
			line("%s", key)
		}
	case *DropTable:
		fmt.Fprintf(&b, "DropTable %s\n", printName(s.Name))
		if s.IfExists {
			line("IfExists")
		}
	case *Insert:
		fmt.Fprintf(&b, "Insert %s\n", printName(s.Table))
		if s.Ignore {
			line("Ignore")
		}
		if s.Columns != nil {
			line("Columns %s", printNames(s.Columns))
		}
		for _, row := range s.Rows {
			vals := make([]string, len(row))
			for i, v := range row {
				vals[i] = printValue(v)
			}
			line("Row (%s)", strings.Join(vals, ", "))
		}
	case *InsertSelect:
		fmt.Fprintf(&b, "InsertSelect %s\n", printName(s.Table))
		if s.Columns != nil {
			line("Columns %s", printNames(s.Columns))
		}
		if s.Ignore {
			line("Ignore")
		}
		src := printParsed(&Parsed{Stmt: s.Source})
		b.WriteString("  " + strings.ReplaceAll(strings.TrimSuffix(src, "\n"), "\n", "\n  ") + "\n")
	case *Select:
		fmt.Fprintf(&b, "Select %s\n", printName(s.Table))
		if s.Star {
			line("Star")
		}
		if s.Columns != nil {
			line("Columns %s", printNames(s.Columns))
		}
		if s.Count {
			line("Count")
		}
		where(s.Where)
		orderLimit(s.OrderBy, s.Limit)
		if s.ForPop {
			line("ForPop")
		}
		if s.Lease != nil {
			line("Lease %s", printValue(*s.Lease))
		}
		if s.Wait != nil {
			line("Wait %s", printValue(*s.Wait))
		}
	case *Delete:
		fmt.Fprintf(&b, "Delete %s\n", printName(s.Table))
		where(s.Where)
		orderLimit(s.OrderBy, s.Limit)
	case *Update:
		fmt.Fprintf(&b, "Update %s\n", printName(s.Table))
		for _, a := range s.Set {
			line("Set %s = %s", printName(a.Column), printValue(a.Value))
		}
		where(s.Where)
	case *SelectValue:
		fmt.Fprintf(&b, "SelectValue %d\n", s.Value)
	case *CreateSchedule:
		fmt.Fprintf(&b, "CreateSchedule %s\n", printName(s.Name))
		line("On %s", printName(s.Table))
		line("Every %v", s.Every)
		if s.Starting != nil {
			line("Starting %s", printValue(*s.Starting))
		}
		line("Text %s", s.Text)
		ins := printParsed(&Parsed{Stmt: s.Insert})
		b.WriteString("  " + strings.ReplaceAll(strings.TrimSuffix(ins, "\n"), "\n", "\n  ") + "\n")
	case *DropSchedule:
		fmt.Fprintf(&b, "DropSchedule %s\n", printName(s.Name))
		if s.IfExists {
			line("IfExists")
		}
	case *ShowSchedules:
		b.WriteString("ShowSchedules\n")
	case *Begin, *Commit, *Rollback:
		fmt.Fprintf(&b, "%s\n", reflect.TypeOf(s).Elem().Name())
	default:
		panic(fmt.Sprintf("printParsed: statement %T", s))
	}
	if p.NumInput != 0 {
		fmt.Fprintf(&b, "NumInput %d\n", p.NumInput)
	}
	if p.Names != nil {
		fmt.Fprintf(&b, "Names %s\n", printNames(p.Names))
	}
	return b.String()
}

// printName prints a name as it is, or quoted as a Go string when it has
// blanks, punctuation that the printed form uses, or bytes that do not
// print.
func printName(name string) string {
	if name == "" || !utf8.ValidString(name) {
		return strconv.Quote(name)
	}
	for _, r := range name {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) || strings.ContainsRune(`,()"'`, r) {
			return strconv.Quote(name)
		}
	}
	return name
}

func printNames(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = printName(n)
	}
	return strings.Join(quoted, ", ")
}

// printValue prints a value as its kind's literal: 5 (an integer), 5.0 (a
// float), "x" (a string), x'00ff' (bytes), ?1 (the first ?), :name, and
// NOW() [+|- INTERVAL n unit].
func printValue(v Value) string {
	switch v.Kind {
	case ValueNull:
		return "NULL"
	case ValueInt:
		return strconv.FormatInt(v.Int, 10)
	case ValueFloat:
		s := strconv.FormatFloat(v.Float, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eIN") {
			s += ".0"
		}
		return s
	case ValueString:
		return strconv.Quote(v.Str)
	case ValueBytes:
		return fmt.Sprintf("x'%x'", v.Str)
	case ValueBool:
		return strconv.FormatBool(v.Bool)
	case ValueArg:
		if v.Name != "" {
			return ":" + v.Name
		}
		return "?" + strconv.Itoa(v.Ordinal)
	case ValueNow:
		if v.Interval == nil {
			return "NOW()"
		}
		sign, unit := "+", v.Unit
		if unit < 0 {
			sign, unit = "-", -unit
		}
		name := map[time.Duration]string{time.Second: "SECOND", time.Minute: "MINUTE", time.Hour: "HOUR"}[unit]
		if name == "" {
			name = "Unit=" + unit.String()
		}
		return fmt.Sprintf("NOW() %s INTERVAL %s %s", sign, printValue(*v.Interval), name)
	}
	return fmt.Sprintf("Value{Kind: %d}", v.Kind)
}

// TestPrintCoversFields: printParsed prints every field of the statement
// types, so that the datadriven files pin whole values. A type that gains
// a field fails here until printParsed prints it and the count is raised.
func TestPrintCoversFields(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v      any
		fields int
	}{
		{Parsed{}, 4}, // Text is the input, which each case holds already
		{CreateTable{}, 8}, {UniqueKey{}, 3}, {Column{}, 5}, {DropTable{}, 2}, {Backoff{}, 3},
		{Insert{}, 4}, {InsertSelect{}, 4},
		{Select{}, 10}, {Cond{}, 3}, {OrderBy{}, 2},
		{Delete{}, 4},
		{Update{}, 3}, {Assignment{}, 2},
		{SelectValue{}, 1},
		{Begin{}, 0}, {Commit{}, 0}, {Rollback{}, 0},
		// Value: Kind and the fields each kind uses.
		{Value{}, 9},
	} {
		typ := reflect.TypeOf(tc.v)
		t.Run(typ.Name(), func(t *testing.T) {
			require.Equal(t, tc.fields, typ.NumField(), "the fields of %s changed: print each in printParsed, then count them here", typ)
		})
	}
}
