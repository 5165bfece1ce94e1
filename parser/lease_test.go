package parser

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLeaseAccepted(t *testing.T) {
	t.Parallel()
	fval := func(f float64) Value { return Value{Kind: ValueFloat, Float: f} }
	now := func(n Value, unit time.Duration) Value { return Value{Kind: ValueNow, Interval: &n, Unit: unit} }
	for _, tc := range []struct {
		sql  string
		want Statement
		n    int
	}{
		{
			"SELECT id, _lease, _attempts, payload FROM jobs WHERE cpu <= ? AND mem <= ? ORDER BY priority LIMIT 1 FOR LEASE 30",
			&Select{Table: "jobs", Columns: []string{"id", "_lease", "_attempts", "payload"},
				Where:   []Cond{{Column: "cpu", Op: OpLe, Value: arg(1)}, {Column: "mem", Op: OpLe, Value: arg(2)}},
				OrderBy: &OrderBy{Column: "priority"}, Limit: ptr(ival(1)), Lease: ptr(ival(30))}, 2,
		},
		{"SELECT * FROM t LIMIT 2 FOR LEASE 0.5", &Select{Table: "t", Star: true, Limit: ptr(ival(2)), Lease: ptr(fval(0.5))}, 0},
		{"SELECT * FROM t LIMIT ? FOR LEASE ?", &Select{Table: "t", Star: true, Limit: ptr(arg(1)), Lease: ptr(arg(2))}, 2},
		{"SELECT * FROM t LIMIT 1 FOR LEASE ? WAIT ?", &Select{Table: "t", Star: true, Limit: ptr(ival(1)), Lease: ptr(arg(1)), Wait: ptr(arg(2))}, 2},
		{"SELECT * FROM t LIMIT 1 FOR LEASE 10 WAIT 2.5", &Select{Table: "t", Star: true, Limit: ptr(ival(1)), Lease: ptr(ival(10)), Wait: ptr(fval(2.5))}, 0},
		{
			"INSERT INTO jobs (payload, _visible_at) VALUES ('x', NOW() + INTERVAL 10 SECOND), ('y', NOW()), ('z', NOW() - INTERVAL ? MINUTE)",
			&Insert{Table: "jobs", Columns: []string{"payload", "_visible_at"}, Rows: [][]Value{
				{sval("x"), now(ival(10), time.Second)}, {sval("y"), {Kind: ValueNow}}, {sval("z"), now(arg(1), -time.Minute)}}}, 1,
		},
		{
			"UPDATE jobs SET _visible_at = NOW() + INTERVAL 1.5 HOUR WHERE id = ? AND _lease = ?",
			&Update{Table: "jobs", Set: []Assignment{{Column: "_visible_at", Value: now(fval(1.5), time.Hour)}},
				Where: []Cond{{Column: "id", Op: OpEq, Value: arg(1)}, {Column: "_lease", Op: OpEq, Value: arg(2)}}}, 2,
		},
		{"SELECT COUNT(*) FROM t WHERE _visible_at <= now()", &Select{Table: "t", Count: true, Where: []Cond{{Column: "_visible_at", Op: OpLe, Value: Value{Kind: ValueNow}}}}, 0},
		{"CREATE TABLE jobs (a INT) MAX_ATTEMPTS=3", &CreateTable{Name: "jobs", Columns: []Column{{Name: "a", Type: TypeInt}}, MaxAttempts: 3}, 0},
	} {
		p, err := parse(tc.sql)
		require.NoError(t, err, tc.sql)
		require.Equal(t, tc.want, p.Stmt, tc.sql)
		require.Equal(t, tc.n, p.NumInput, tc.sql)
	}
	p, err := parse("SELECT * FROM t WHERE cpu <= :cpu LIMIT 1 FOR LEASE :d WAIT :w")
	require.NoError(t, err)
	require.Equal(t, []string{"cpu", "d", "w"}, p.Names)
}

func TestLeaseRejected(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ sql, want string }{
		{"SELECT * FROM t LIMIT 1 FOR LEASE", "FOR LEASE without its seconds"},
		{"SELECT * FROM t LIMIT 1 FOR LEASE 0", "a lease lasts a positive number of seconds"},
		{"SELECT * FROM t LIMIT 1 FOR LEASE 0.0", "a lease lasts a positive number of seconds"},
		{"SELECT * FROM t LIMIT 1 FOR LEASE -5", "seconds are not negative"},
		{"SELECT * FROM t LIMIT 1 FOR LEASE '30'", "not a string"},
		{"SELECT * FROM t LIMIT 1 FOR LEASE 30 WAIT", "WAIT without its seconds"},
		{"SELECT * FROM t LIMIT 1 FOR LEASE 30 WAIT 301", "at most 300 seconds"},
		{"SELECT * FROM t FOR LEASE 30", "FOR LEASE needs a LIMIT"},
		{"SELECT COUNT(*) FROM t LIMIT 1 FOR LEASE 30", "COUNT(*) with ORDER BY or LIMIT"},
		{"DELETE FROM t LIMIT 1 FOR LEASE 30", "FOR LEASE ends a SELECT"},
		{"INSERT INTO t (a) VALUES (NOW(1))", "NOW() takes no arguments"},
		{"INSERT INTO t (a) VALUES (NOW() + INTERVAL 1 DAY)", "INTERVAL n SECOND|MINUTE|HOUR"},
		{"INSERT INTO t (a) VALUES (NOW() * 2)", "INTERVAL n SECOND|MINUTE|HOUR"},
		{"INSERT INTO t (a) VALUES (NOW() + INTERVAL 'x' SECOND)", "the INTERVAL is a number"},
		{"CREATE TABLE t (a INT) MAX_ATTEMPTS=0", "MAX_ATTEMPTS=0"},
		{"CREATE TABLE t (a INT) MAX_ATTEMPTS=x", "MAX_ATTEMPTS=x"},
		{"CREATE TABLE t (a INT) MAX_ATTEMPTS=1.5", "MAX_ATTEMPTS=1.5"},
		{"CREATE TABLE t (a INT) ENGINE=InnoDB", "the only table option is MAX_ATTEMPTS=n"},
	} {
		_, err := parse(tc.sql)
		require.Error(t, err, tc.sql)
		require.Contains(t, err.Error(), tc.want, tc.sql)
		require.True(t, errors.Is(err, ErrSyntax) || errors.Is(err, ErrUnsupported) || errors.Is(err, ErrValue), tc.sql)
	}
}
