package parser

// Periodic tasks: CREATE SCHEDULE, DROP SCHEDULE and SHOW SCHEDULES, read
// from the tokens before sqlparser (which knows none of them); the
// schedule's INSERT is parsed as any INSERT.

import (
	"fmt"
	"strings"
	"time"

	"github.com/xwb1989/sqlparser"
)

// CreateSchedule is CREATE SCHEDULE name ON table EVERY n
// SECOND|MINUTE|HOUR|DAY [STARTING 'timestamp'|NOW()] INSERT [IGNORE]
// [(columns)] VALUES (...), ...: the INSERT runs once every interval
// (see package exec).
type CreateSchedule struct {
	Name  string
	Table string
	// Every is the interval: positive, at most MaxScheduleInterval.
	Every time.Duration
	// Starting is when the first occurrence is due: a string (converted
	// as a TIMESTAMP is) or NOW(); nil for one interval after CREATE.
	Starting *Value
	// Insert is the INSERT each occurrence runs, into Table: its values
	// are literals (NOW() is the occurrence's time); Text is that INSERT
	// as SQL, which the catalog stores.
	Insert *Insert
	Text   string
}

// DropSchedule is DROP SCHEDULE [IF EXISTS] name.
type DropSchedule struct {
	Name     string
	IfExists bool
}

// ShowSchedules is SHOW SCHEDULES: one row per schedule.
type ShowSchedules struct{}

func (*CreateSchedule) statement() {}
func (*DropSchedule) statement()   {}
func (*ShowSchedules) statement()  {}

// MaxScheduleInterval is the longest interval of a schedule.
const MaxScheduleInterval = 366 * 24 * time.Hour

// scheduleHint says what CREATE SCHEDULE takes, for errors.
const scheduleHint = "CREATE SCHEDULE name ON table EVERY n SECOND|MINUTE|HOUR|DAY [STARTING 'timestamp'|NOW()] INSERT [IGNORE] [(columns)] VALUES (literals), ..."

// scheduleUnits are EVERY's units, singular and plural.
var scheduleUnits = map[string]time.Duration{
	"second": time.Second, "seconds": time.Second,
	"minute": time.Minute, "minutes": time.Minute,
	"hour": time.Hour, "hours": time.Hour,
	"day": 24 * time.Hour, "days": 24 * time.Hour,
}

// scheduleStatement parses a schedule statement, recognised by its first
// words; ok is false for any other statement.
func scheduleStatement(sql string, toks []token) (p *Parsed, ok bool, err error) {
	var code []token
	for _, t := range toks {
		if t.typ != sqlparser.COMMENT {
			code = append(code, t)
		}
	}
	if n := len(code); n > 0 && code[n-1].typ == ';' {
		code = code[:n-1]
	}
	word := func(k int) string {
		if k >= len(code) || code[k].typ == sqlparser.STRING {
			return ""
		}
		return strings.ToLower(code[k].val)
	}
	switch {
	case word(0) == "create" && word(1) == "schedule":
		st, err := createSchedule(sql, code, word)
		if err != nil {
			return nil, true, err
		}
		return &Parsed{Stmt: st}, true, nil
	case word(0) == "drop" && word(1) == "schedule":
		st := &DropSchedule{}
		k := 2
		if word(2) == "if" && word(3) == "exists" {
			st.IfExists, k = true, 4
		}
		if k >= len(code) || code[k].typ != sqlparser.ID || k+1 != len(code) {
			return nil, true, fmt.Errorf("%w: DROP SCHEDULE [IF EXISTS] name", ErrSyntax)
		}
		st.Name = code[k].val
		return &Parsed{Stmt: st}, true, nil
	case word(0) == "show" && word(1) == "schedules":
		if len(code) != 2 {
			return nil, true, fmt.Errorf("%w: SHOW SCHEDULES takes nothing after it", ErrSyntax)
		}
		return &Parsed{Stmt: &ShowSchedules{}}, true, nil
	}
	return nil, false, nil
}

func createSchedule(sql string, code []token, word func(int) string) (*CreateSchedule, error) {
	syntax := func(what string) error {
		return fmt.Errorf("%w: %s; %s", ErrSyntax, what, scheduleHint)
	}
	st := &CreateSchedule{}
	if len(code) < 3 || code[2].typ != sqlparser.ID {
		return nil, syntax("a schedule's name follows CREATE SCHEDULE")
	}
	st.Name = code[2].val
	if word(3) != "on" || len(code) < 5 || code[4].typ != sqlparser.ID {
		return nil, syntax("ON table follows the schedule's name")
	}
	st.Table = code[4].val
	if word(5) != "every" {
		return nil, syntax("EVERY n SECOND|MINUTE|HOUR|DAY follows the table")
	}
	k := 6
	if k < len(code) && code[k].typ == '-' {
		return nil, fmt.Errorf("%w: EVERY -%s %s: a schedule's interval is a positive whole number of SECOND, MINUTE, HOUR or DAY, at most 366 days", ErrValue, word(k+1), strings.ToUpper(word(k+2)))
	}
	if k >= len(code) || code[k].typ != sqlparser.INTEGRAL {
		return nil, syntax("EVERY takes a whole number, then SECOND, MINUTE, HOUR or DAY")
	}
	unit, ok := scheduleUnits[word(k+1)]
	if !ok {
		return nil, syntax(fmt.Sprintf("EVERY %s %s: the unit is SECOND, MINUTE, HOUR or DAY", code[k].val, strings.ToUpper(word(k+1))))
	}
	var n int64
	if _, err := fmt.Sscan(code[k].val, &n); err != nil || n <= 0 || n > int64(MaxScheduleInterval/unit) {
		return nil, fmt.Errorf("%w: EVERY %s %s: a schedule's interval is a positive whole number of SECOND, MINUTE, HOUR or DAY, at most 366 days", ErrValue, code[k].val, strings.ToUpper(word(k+1)))
	}
	st.Every = time.Duration(n) * unit
	k += 2
	if word(k) == "starting" {
		switch {
		case k+1 < len(code) && code[k+1].typ == sqlparser.STRING:
			st.Starting = &Value{Kind: ValueString, Str: code[k+1].val}
			k += 2
		case word(k+1) == "now" && k+3 < len(code) && code[k+2].typ == '(' && code[k+3].typ == ')':
			st.Starting = &Value{Kind: ValueNow}
			k += 4
		default:
			return nil, syntax("STARTING takes a timestamp in quotes ('2026-01-02 03:04:05') or NOW()")
		}
	}
	if word(k) != "insert" {
		return nil, syntax("the schedule's INSERT follows its interval (and STARTING)")
	}
	from := k + 1
	ignore := ""
	if word(k+1) == "ignore" {
		ignore, from = " IGNORE", k+2
	}
	if word(from) == "into" {
		return nil, syntax("the schedule's INSERT names no table (ON names it): INSERT [(columns)] VALUES (...)")
	}
	st.Text = "INSERT" + ignore + " INTO " + quoteName(st.Table) + joinTokens(sql, code[from:])
	p, err := parse(st.Text)
	if err != nil {
		return nil, err
	}
	ins, ok := p.Stmt.(*Insert)
	if !ok {
		return nil, unsupported("a schedule's INSERT takes VALUES, not a SELECT; %s", scheduleHint)
	}
	if p.NumInput != 0 {
		return nil, unsupported("placeholders in a schedule's INSERT: it runs long after the statement's arguments are gone; write literals")
	}
	st.Insert = ins
	return st, nil
}

// quoteName quotes a name in backticks, as MySQL does.
func quoteName(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

// joinTokens returns the text of toks (no comments), each after one blank
// but after an opening or before a closing parenthesis or a comma: the
// same text for statements the parser's cache takes as the same.
func joinTokens(sql string, toks []token) string {
	var b strings.Builder
	prev, now := 0, false
	for _, t := range toks {
		if prev != '(' && t.typ != ')' && t.typ != ',' && !(now && t.typ == '(') {
			b.WriteByte(' ')
		}
		b.WriteString(strings.TrimSpace(sql[t.start:t.end]))
		prev, now = t.typ, strings.EqualFold(t.val, "now")
	}
	return b.String()
}
