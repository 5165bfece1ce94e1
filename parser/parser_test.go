package parser

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func ival(n int64) Value   { return Value{Kind: ValueInt, Int: n} }
func sval(s string) Value  { return Value{Kind: ValueString, Str: s} }
func arg(n int) Value      { return Value{Kind: ValueArg, Ordinal: n} }
func named(s string) Value { return Value{Kind: ValueArg, Name: s} }

var accepted = []struct {
	sql  string
	want Statement
	n    int // NumInput
}{
	{"SELECT 1", &SelectValue{Value: 1}, 0},
	{"select -7 from dual", &SelectValue{Value: -7}, 0},
	{
		"CREATE TABLE tasks (priority INT NOT NULL, cpu INT NOT NULL, mem INT NOT NULL, payload BLOB, INDEX fit (cpu, mem))",
		&CreateTable{Name: "tasks", Columns: []Column{
			{Name: "priority", Type: TypeInt, NotNull: true},
			{Name: "cpu", Type: TypeInt, NotNull: true},
			{Name: "mem", Type: TypeInt, NotNull: true},
			{Name: "payload", Type: TypeBlob},
		}, Index: []string{"cpu", "mem"}, IndexName: "fit"}, 0,
	},
	{
		"create table if not exists jobs (done boolean default false, n bigint default -5, x double default -1.5, name varchar(20) not null default 'a', ts timestamp, b bool, INDEX (n));",
		&CreateTable{Name: "jobs", IfNotExists: true, Columns: []Column{
			{Name: "done", Type: TypeBool, Default: &Value{Kind: ValueString, Str: "false"}},
			{Name: "n", Type: TypeInt, Default: &Value{Kind: ValueString, Str: "-5"}},
			{Name: "x", Type: TypeFloat, Default: &Value{Kind: ValueString, Str: "-1.5"}},
			{Name: "name", Type: TypeText, Length: 20, NotNull: true, Default: &Value{Kind: ValueString, Str: "a"}},
			{Name: "ts", Type: TypeTimestamp},
			{Name: "b", Type: TypeBool},
		}, Index: []string{"n"}, IndexName: "fit"}, 0,
	},
	{
		// The accepted synonyms; DEFAULT NULL.
		"CREATE TABLE s (a INTEGER DEFAULT NULL, b FLOAT, c REAL, d DATETIME, e VARCHAR, f INT NULL)",
		&CreateTable{Name: "s", Columns: []Column{
			{Name: "a", Type: TypeInt, Default: &Value{Kind: ValueNull}},
			{Name: "b", Type: TypeFloat},
			{Name: "c", Type: TypeFloat},
			{Name: "d", Type: TypeTimestamp},
			{Name: "e", Type: TypeText},
			{Name: "f", Type: TypeInt},
		}}, 0,
	},
	{"CREATE TABLE `key` (`status` INT, `order` TEXT)", &CreateTable{Name: "key", Columns: []Column{{Name: "status", Type: TypeInt}, {Name: "order", Type: TypeText}}}, 0},
	{"DROP TABLE IF EXISTS t", &DropTable{Name: "t", IfExists: true}, 0},
	{"drop table t;", &DropTable{Name: "t"}, 0},
	{
		"INSERT INTO t (a, b) VALUES (?, 'x'), (-3, ?)",
		&Insert{Table: "t", Columns: []string{"a", "b"}, Rows: [][]Value{{arg(1), sval("x")}, {ival(-3), arg(2)}}}, 2,
	},
	{
		"INSERT INTO t VALUES (:a, :b, :a, NULL, true, 1.5, x'00ff')",
		&Insert{Table: "t", Rows: [][]Value{{named("a"), named("b"), named("a"), {Kind: ValueNull}, {Kind: ValueBool, Bool: true}, {Kind: ValueFloat, Float: 1.5}, {Kind: ValueBytes, Str: "\x00\xff"}}}}, -1,
	},
	{
		"SELECT id, priority, payload FROM tasks WHERE cpu <= ? AND mem <= ? ORDER BY priority DESC LIMIT 1 FOR POP",
		&Select{Table: "tasks", Columns: []string{"id", "priority", "payload"},
			Where:   []Cond{{Column: "cpu", Op: OpLe, Value: arg(1)}, {Column: "mem", Op: OpLe, Value: arg(2)}},
			OrderBy: &OrderBy{Column: "priority", Desc: true}, Limit: ptr(ival(1)), ForPop: true}, 2,
	},
	{
		"select * from t where (a != 5) and 10 > b and c <> 'x' order by priority limit ? for pop; -- done",
		&Select{Table: "t", Star: true,
			Where:   []Cond{{Column: "a", Op: OpNe, Value: ival(5)}, {Column: "b", Op: OpLt, Value: ival(10)}, {Column: "c", Op: OpNe, Value: sval("x")}},
			OrderBy: &OrderBy{Column: "priority"}, Limit: ptr(arg(1)), ForPop: true}, 1,
	},
	// FOR POP WAIT: seconds, fractions, placeholders (the WAIT's ? is the
	// last); WAIT is also a name.
	{
		"SELECT id FROM tasks WHERE cpu <= ? AND mem <= ? LIMIT 1 FOR POP WAIT ?",
		&Select{Table: "tasks", Columns: []string{"id"},
			Where: []Cond{{Column: "cpu", Op: OpLe, Value: arg(1)}, {Column: "mem", Op: OpLe, Value: arg(2)}},
			Limit: ptr(ival(1)), ForPop: true, Wait: ptr(arg(3))}, 3,
	},
	{"select * from t limit ? for pop wait 5;", &Select{Table: "t", Star: true, Limit: ptr(arg(1)), ForPop: true, Wait: ptr(ival(5))}, 1},
	{"SELECT * FROM t LIMIT 2 FOR POP WAIT 0.25 -- a quarter second", &Select{Table: "t", Star: true, Limit: ptr(ival(2)), ForPop: true, Wait: ptr(Value{Kind: ValueFloat, Float: 0.25})}, 0},
	{"SELECT * FROM t LIMIT 1 FOR POP WAIT 0", &Select{Table: "t", Star: true, Limit: ptr(ival(1)), ForPop: true, Wait: ptr(ival(0))}, 0},
	{"SELECT * FROM t LIMIT 1 FOR POP WAIT 300", &Select{Table: "t", Star: true, Limit: ptr(ival(1)), ForPop: true, Wait: ptr(ival(300))}, 0},
	{"SELECT * FROM t WHERE cpu <= :cpu LIMIT 1 FOR POP WAIT :timeout", &Select{Table: "t", Star: true, Where: []Cond{{Column: "cpu", Op: OpLe, Value: named("cpu")}}, Limit: ptr(ival(1)), ForPop: true, Wait: ptr(named("timeout"))}, -1},
	{"SELECT wait FROM `wait` WHERE wait = 5 LIMIT 1 FOR POP", &Select{Table: "wait", Columns: []string{"wait"}, Where: []Cond{{Column: "wait", Op: OpEq, Value: ival(5)}}, Limit: ptr(ival(1)), ForPop: true}, 0},
	{"SELECT * FROM t /* peek */ LIMIT 3", &Select{Table: "t", Star: true, Limit: ptr(ival(3))}, 0},
	{"SELECT COUNT(*) FROM t", &Select{Table: "t", Count: true}, 0},
	{"SELECT count(*) FROM t WHERE cpu <= 2", &Select{Table: "t", Count: true, Where: []Cond{{Column: "cpu", Op: OpLe, Value: ival(2)}}}, 0},
	{"DELETE FROM t WHERE id = ?", &Delete{Table: "t", Where: []Cond{{Column: "id", Op: OpEq, Value: arg(1)}}}, 1},
	{"DELETE FROM t", &Delete{Table: "t"}, 0},
	{"DELETE FROM t WHERE cpu <= 4 ORDER BY priority DESC LIMIT 2", &Delete{Table: "t", Where: []Cond{{Column: "cpu", Op: OpLe, Value: ival(4)}}, OrderBy: &OrderBy{Column: "priority", Desc: true}, Limit: ptr(ival(2))}, 0},
	{"UPDATE t SET priority = ? WHERE id = ?", &Update{Table: "t", Set: []Assignment{{Column: "priority", Value: arg(1)}}, Where: []Cond{{Column: "id", Op: OpEq, Value: arg(2)}}}, 2},
	{"BEGIN", &Begin{}, 0},
	{"START TRANSACTION", &Begin{}, 0},
	{"COMMIT;", &Commit{}, 0},
	{"ROLLBACK", &Rollback{}, 0},
}

func ptr(v Value) *Value { return &v }

func TestAccepted(t *testing.T) {
	t.Parallel()
	for _, tc := range accepted {
		p, err := parse(tc.sql)
		require.NoError(t, err, tc.sql)
		require.Equal(t, tc.want, p.Stmt, tc.sql)
		require.Equal(t, tc.n, p.NumInput, tc.sql)
	}
	p, err := parse("INSERT INTO t VALUES (:a, :b, :a)")
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, p.Names)
	p, err = parse("SELECT * FROM t WHERE cpu <= :cpu LIMIT 1 FOR POP WAIT :timeout")
	require.NoError(t, err)
	require.Equal(t, []string{"cpu", "timeout"}, p.Names, "WAIT's placeholder is an argument too")
}

var rejected = []struct {
	sql, want string
}{
	{"", "empty statement"},
	{"   ;  ", "empty statement"},
	{"SELEC * FROM t", "syntax error"},
	{"SELECT * FROM t /*!*/", "a /*! */ comment holds code after its version number"},
	{"SELECT * FROM t /*!50708*/", "a /*! */ comment holds code after its version number"},
	{"CREATE TABLE t (a INT", "syntax error"},
	{"SELECT * FROM t LIMIT 1 FOR UPDATE", "FOR UPDATE"},
	{"SELECT * FROM t LIMIT 1 FOR SHARE", "the trailing clauses are FOR POP"},
	{"SELECT * FROM t LIMIT 1 FOR POP WAIT", "FOR POP WAIT without the seconds to wait"},
	{"SELECT * FROM t LIMIT 1 FOR POP WAIT -1", "FOR POP WAIT -1: a wait is 0 or more seconds"},
	{"SELECT * FROM t LIMIT 1 FOR POP WAIT 301", "WAIT 301: at most 300 seconds"},
	{"SELECT * FROM t LIMIT 1 FOR POP WAIT 1e400", "WAIT 1e400: not a number of seconds"},
	{"SELECT * FROM t LIMIT 1 FOR POP WAIT ''", "seconds are a number, not a string"},
	{"SELECT * FROM t LIMIT 1 FOR POP WAIT '5'", "seconds are a number, not a string"},
	{"SELECT * FROM t LIMIT 1 FOR POP WAIT five", `not "five"`},
	{"SELECT * FROM t LIMIT 1 FOR POP WAIT 0x10", "hex literal"},
	{"SELECT * FROM t LIMIT 1 FOR POP WAIT NULL", "not NULL"},
	{"SELECT * FROM t LIMIT 1 FOR POP WAIT 5 SECONDS", "one number of seconds, and nothing after it"},
	{"SELECT * FROM t LIMIT 1 FOR POP WAIT 1 2", "one number of seconds"},
	{"SELECT * FROM t LIMIT 1 WAIT 5", "WAIT without FOR POP"},
	{"SELECT * FROM t LIMIT 1 WAIT ? FOR POP", "WAIT without FOR POP"},
	{"SELECT * FROM t FOR POP WAIT 5", "FOR POP needs a LIMIT"},
	{"DELETE FROM t LIMIT 1 FOR POP WAIT 5", "FOR POP ends a SELECT"},
	{"SELECT COUNT(*) FROM t LIMIT 1 FOR POP WAIT 5", "COUNT(*)"},
	{"SELECT * FROM t FOR POP", "FOR POP needs a LIMIT"},
	{"DELETE FROM t FOR POP", "FOR POP ends a SELECT"},
	{"SELECT COUNT(*) FROM t LIMIT 1 FOR POP", "COUNT(*)"},
	{"SELECT a FROM t, u", "more than one table"},
	{"SELECT a FROM t JOIN u ON t.a = u.a", "joins"},
	{"SELECT DISTINCT a FROM t", "DISTINCT"},
	{"SELECT a FROM t GROUP BY a", "GROUP BY"},
	{"SELECT a + 1 FROM t", "select expression"},
	{"SELECT max(a) FROM t", "COUNT(*)"},
	{"SELECT a AS b FROM t", "aliases"},
	{"SELECT * FROM t WHERE a = 1 OR b = 2", "AND of comparisons"},
	{"SELECT * FROM t WHERE a LIKE 'x%'", "operator LIKE"},
	{"SELECT * FROM t WHERE a IN (1, 2)", "operator IN"},
	{"SELECT * FROM t WHERE a = b", "values are literals or placeholders"},
	{"SELECT * FROM t ORDER BY a, b", "more than one column"},
	{"SELECT * FROM t LIMIT 1 OFFSET 2", "OFFSET"},
	{"SELECT * FROM t LIMIT -1", "LIMIT -1 (a count, 0 or more)"},
	{"SELECT * FROM t WHERE a = ? AND b = :x", "either ? or :name"},
	{"SELECT * FROM t; SELECT * FROM u", "2 statements"},
	{"INSERT INTO t SELECT * FROM u", "INSERT ... SELECT"},
	{"INSERT INTO t VALUES (1) ON DUPLICATE KEY UPDATE a = 2", "ON DUPLICATE KEY"},
	{"REPLACE INTO t VALUES (1)", "REPLACE"},
	{"INSERT INTO t VALUES (99999999999999999999)", "64-bit"},
	{"UPDATE t SET priority = 1 WHERE id = 2 LIMIT 1", "UPDATE with ORDER BY or LIMIT"},
	{"CREATE TABLE t (a JSON)", "type JSON"},
	{"CREATE TABLE t (a BIT)", "use BOOLEAN"},
	{"CREATE TABLE t (a INT AUTO_INCREMENT)", "AUTO_INCREMENT"},
	{"CREATE TABLE t (a INT, PRIMARY KEY (a))", "PRIMARY"},
	{"CREATE TABLE t (a INT, b INT, INDEX x (a), INDEX y (b))", "more than one INDEX"},
	{"CREATE TABLE t (a INT) ENGINE=InnoDB", "table options"},
	{"ALTER TABLE t ADD COLUMN b INT", "ALTER"},
	{"SHOW TABLES", "SHOW"},
	{"SET autocommit = 1", "SET"},
	{"SELECT * FROM db.t", "qualified table"},
	{"SELECT 'unterminated FROM t", "syntax error"},

	// Column types and options fdbqueue would not enforce are refused by
	// name, with what to use instead.
	{"CREATE TABLE t (a INT PRIMARY KEY)", "PRIMARY KEY on column a (keys and uniqueness are not enforced"},
	{"CREATE TABLE t (a INT KEY)", "KEY on column a"},
	{"CREATE TABLE t (a INT UNIQUE)", "UNIQUE on column a"},
	{"CREATE TABLE t (a INT UNIQUE KEY)", "UNIQUE KEY on column a"},
	{"CREATE TABLE t (a INT UNSIGNED)", "UNSIGNED on column a"},
	{"CREATE TABLE t (a INT ZEROFILL)", "ZEROFILL on column a"},
	{"CREATE TABLE t (a INT COMMENT 'x')", "COMMENT on column a (comments are not stored)"},
	{"CREATE TABLE t (a TEXT CHARACTER SET latin1)", "CHARACTER SET latin1 on column a (TEXT is always UTF-8; use BLOB"},
	{"CREATE TABLE t (a TEXT COLLATE utf8mb4_general_ci)", "COLLATE utf8mb4_general_ci on column a"},
	{"CREATE TABLE t (a TIMESTAMP ON UPDATE CURRENT_TIMESTAMP)", "ON UPDATE CURRENT_TIMESTAMP on column a"},
	{"CREATE TABLE t (a TIMESTAMP DEFAULT CURRENT_TIMESTAMP)", "DEFAULT CURRENT_TIMESTAMP of column a (a DEFAULT is a literal"},
	{"CREATE TABLE t (a DECIMAL(10,2))", "type DECIMAL of column a (exact decimals are not supported; use INT (in cents, say) or DOUBLE"},
	{"CREATE TABLE t (a NUMERIC)", "type NUMERIC"},
	{"CREATE TABLE t (a TINYINT)", "type TINYINT of column a (its range is not enforced"},
	{"CREATE TABLE t (a SMALLINT)", "type SMALLINT"},
	{"CREATE TABLE t (a MEDIUMINT)", "type MEDIUMINT"},
	{"CREATE TABLE t (a INT(11))", "display width INT(11) of column a"},
	{"CREATE TABLE t (a DOUBLE(5,2))", "precision DOUBLE(5,2) of column a"},
	{"CREATE TABLE t (a REAL(5,2))", "precision REAL(5,2)"},
	{"CREATE TABLE t (a TIMESTAMP(6))", "precision TIMESTAMP(6)"},
	{"CREATE TABLE t (a DATETIME(3))", "precision DATETIME(3)"},
	{"CREATE TABLE t (a VARCHAR(0))", "VARCHAR(0) of column a (the length is 1 or more characters)"},
	{"CREATE TABLE t (a CHAR(3))", "type CHAR of column a (fixed-length, space-padded text is not supported; use VARCHAR(n)"},
	{"CREATE TABLE t (a BINARY(3))", "use VARBINARY(n)"},
	{"CREATE TABLE t (a TINYTEXT)", "type TINYTEXT"},
	{"CREATE TABLE t (a MEDIUMTEXT)", "type MEDIUMTEXT"},
	{"CREATE TABLE t (a LONGTEXT)", "type LONGTEXT"},
	{"CREATE TABLE t (a TINYBLOB)", "type TINYBLOB"},
	{"CREATE TABLE t (a MEDIUMBLOB)", "type MEDIUMBLOB"},
	{"CREATE TABLE t (a LONGBLOB)", "type LONGBLOB"},
	{"CREATE TABLE t (a DATE)", "type DATE of column a (use TIMESTAMP"},
	{"CREATE TABLE t (a TIME)", "type TIME"},
	{"CREATE TABLE t (a YEAR)", "type YEAR"},
	{"CREATE TABLE t (a ENUM('x', 'y'))", "type ENUM"},
	{"CREATE TABLE t (a SET('x', 'y'))", "type SET"},
	{"CREATE TABLE t (a POINT)", "type POINT"},
	{"CREATE TABLE t (a INT, KEY k (a) USING BTREE)", "index option USING BTREE"},
	{"CREATE TABLE t (a INT, INDEX k (a) COMMENT 'x')", "index option COMMENT"},
	{"CREATE TABLE t (a INT, UNIQUE KEY k (a))", "UNIQUE KEY (keys and uniqueness are not enforced"},
	{"CREATE TABLE t (a INT, UNIQUE INDEX k (a))", "UNIQUE INDEX"},
	{"CREATE TABLE t (a INT) DEFAULT CHARSET=utf8mb4", "table options"},

	// Statements outside the dialect are named by what they are, with
	// what to use instead.
	{"CREATE INDEX i ON t (a)", "CREATE INDEX (the fit index is declared in CREATE TABLE"},
	{"CREATE UNIQUE INDEX i ON t (a)", "CREATE UNIQUE INDEX (uniqueness is not enforced"},
	{"DROP INDEX i ON t", "DROP INDEX"},
	{"CREATE VIEW v AS SELECT * FROM t", "CREATE VIEW (the only CREATE is CREATE TABLE)"},
	{"DROP VIEW t", "DROP VIEW (the only DROP is DROP TABLE)"},
	{"CREATE DATABASE d", "CREATE DATABASE"},
	{"DROP DATABASE d", "DROP DATABASE"},
	{"RENAME TABLE t TO u", "RENAME TABLE"},
	{"TRUNCATE TABLE t", "TRUNCATE TABLE (DELETE FROM t removes every row"},
	{"EXPLAIN SELECT * FROM t", "EXPLAIN (queries take"},
	{"DESCRIBE t", "DESCRIBE (driver.Tables lists"},
	{"SHOW TABLES", "SHOW TABLES (driver.Tables"},
	{"ANALYZE TABLE t", "ANALYZE TABLE"},
	{"OPTIMIZE TABLE t", "OPTIMIZE TABLE"},
	{"REPAIR TABLE t", "REPAIR TABLE"},
	{"USE d", "USE (a DSN names one database)"},
	{"LOCK TABLES t READ", "statement LOCK"},
	{"INSERT INTO t VALUES (CURRENT_TIMESTAMP)", "current_timestamp() (values are literals or placeholders)"},

	// MySQL's reserved words are names only when quoted.
	{"CREATE TABLE t (status INT)", "\"status\" is a reserved word; to use it as a name, quote it as `status`"},
	{"SELECT key FROM t", "\"key\" is a reserved word; to use it as a name, quote it as `key`"},
	{"CREATE TABLE t (v INT, order INT)", "\"order\" is a reserved word"},
	{"CREATE TABLE t (timestamp INT)", "\"timestamp\" is a reserved word"},

	// Names are stored as text, and must be UTF-8.
	{"CREATE TABLE `t\xff` (a INT)", "name \"t\\xff\" is not valid UTF-8"},
	{"CREATE TABLE t (`a\xff` INT)", "is not valid UTF-8"},
}

func TestRejected(t *testing.T) {
	t.Parallel()
	for _, tc := range rejected {
		_, err := parse(tc.sql)
		require.Error(t, err, tc.sql)
		require.Contains(t, err.Error(), tc.want, tc.sql)
		require.True(t, errors.Is(err, ErrSyntax) || errors.Is(err, ErrUnsupported) || errors.Is(err, ErrValue), tc.sql)
	}
	// Errors list what is supported.
	_, err := parse("SHOW TABLES")
	require.Contains(t, err.Error(), "supported:")
}

func TestCache(t *testing.T) {
	t.Parallel()
	sql := fmt.Sprintf("SELECT * FROM cache_%p LIMIT 1", t)
	a, err := Parse(sql)
	require.NoError(t, err)
	b, err := Parse(sql)
	require.NoError(t, err)
	require.Same(t, a, b, "a repeated statement is not parsed again")
	_, err = Parse("SELEC nope")
	require.Error(t, err)

	// A long statement is parsed each time and does not take cache room.
	long := fmt.Sprintf("INSERT INTO cache_%p VALUES ('%s')", t, strings.Repeat("x", MaxCachedLen))
	a, err = Parse(long)
	require.NoError(t, err)
	b, err = Parse(long)
	require.NoError(t, err)
	require.NotSame(t, a, b)
	require.Equal(t, a, b)
	require.False(t, cache.Contains(long))
}

// traceparent is a comment as sqlcommenter appends it, new for each n.
func traceparent(n int) string {
	return fmt.Sprintf("/*traceparent='00-%032x-%016x-01'*/", n, n)
}

func TestCacheKey(t *testing.T) {
	t.Parallel()
	const q = "SELECT id FROM t LIMIT 1 FOR POP"
	for in, want := range map[string]string{
		q:                                     q,
		" \n" + q + " \t\r\n":                 q,
		q + " " + traceparent(1):              q,
		q + traceparent(1):                    q,
		traceparent(1) + " " + q:              q,
		"/* a */ /* b */ " + q + " /* c */\n": q,
		q + " -- done":                        q,
		q + " -- done\n-- and done":           q,
		q + " # done":                         q,
		q + " // done":                        q,
		q + "; /* c */":                       q + ";",
		"-- lead\n" + q:                       q,
		// A comment inside the statement stays.
		"SELECT id /* c */ FROM t": "SELECT id /* c */ FROM t",
		// Comment markers inside strings, quoted names and numbers are
		// not comments.
		"SELECT id FROM t WHERE v = '/* x */'":      "SELECT id FROM t WHERE v = '/* x */'",
		"SELECT id FROM t WHERE v = 'a -- b'":       "SELECT id FROM t WHERE v = 'a -- b'",
		"SELECT id FROM t WHERE v = 'it''s -- x'":   "SELECT id FROM t WHERE v = 'it''s -- x'",
		`SELECT id FROM t WHERE v = 'a\' -- b'`:     `SELECT id FROM t WHERE v = 'a\' -- b'`,
		`SELECT id FROM t WHERE v = "# x"`:          `SELECT id FROM t WHERE v = "# x"`,
		"SELECT `a -- b` FROM t":                    "SELECT `a -- b` FROM t",
		"SELECT id FROM t WHERE f = 1e-5 /* c */":   "SELECT id FROM t WHERE f = 1e-5",
		"SELECT id FROM t WHERE f = 1e--5":          "SELECT id FROM t WHERE f = 1e--5",
		"SELECT id FROM t WHERE f = 0x1e-5 -- c":    "SELECT id FROM t WHERE f = 0x1e-5",
		"SELECT id FROM t WHERE f = .5e-1--5":       "SELECT id FROM t WHERE f = .5e-1",
		"SELECT id FROM t WHERE f = 1 /*! AND 2 */": "SELECT id FROM t WHERE f = 1 /*! AND 2 */",
		"SELECT id FROM t WHERE j->>'a' -- c":       "SELECT id FROM t WHERE j->>'a'",
		"SELECT id FROM t WHERE v = :name -- c":     "SELECT id FROM t WHERE v = :name",
		"SELECT id FROM t WHERE v = 1 /":            "SELECT id FROM t WHERE v = 1 /",
		// Where the lexer fails, or reads by rules the key does not
		// follow, the key is the text.
		"SELECT id FROM t WHERE v = 'open -- c": "SELECT id FROM t WHERE v = 'open -- c",
		"SELECT id FROM t /* open":              "SELECT id FROM t /* open",
		"SELECT id FROM t WHERE v = 1x -- c":    "SELECT id FROM t WHERE v = 1x -- c",
		"SELECT id FROM t WHERE v = x'ab' -- c": "SELECT id FROM t WHERE v = x'ab' -- c",
		"SELECT @@version -- c":                 "SELECT @@version -- c",
		"SELECT id FROM t WHERE v = ::1 -- c":   "SELECT id FROM t WHERE v = ::1 -- c",
		"SELECT id FROM t WHERE v = `open -- c": "SELECT id FROM t WHERE v = `open -- c",
		"/* only a comment */":                  "/* only a comment */",
		"":                                      "",
	} {
		require.Equal(t, want, cacheKey(in), "%q", in)
		require.Equal(t, cacheKey(want), cacheKey(in), "%q: a key is its own key", in)
	}
}

// TestCacheComments: a statement that carries a comment new on each call,
// as sqlcommenter appends it, is parsed once.
func TestCacheComments(t *testing.T) {
	t.Parallel()
	sql := fmt.Sprintf("SELECT id FROM cache_%p WHERE v = '/* not a comment */' LIMIT 1 FOR POP", t)
	first, err := Parse(sql + " " + traceparent(0))
	require.NoError(t, err)
	for n := 1; n <= 100; n++ {
		p, err := Parse(sql + " " + traceparent(n))
		require.NoError(t, err)
		require.Same(t, first, p, "call %d parsed the statement again", n)
	}
	p, err := Parse(traceparent(101) + "\n" + sql + " -- " + traceparent(102))
	require.NoError(t, err)
	require.Same(t, first, p, "leading and -- comments too")
	p, err = Parse(sql)
	require.NoError(t, err)
	require.Same(t, first, p, "and the statement without one")

	// An error still points into the text as sent.
	_, err = Parse("/* a comment */ SELEC nope")
	require.ErrorContains(t, err, "position 22")

	// A long statement is keyed without its comment too: the comment
	// does not push it past MaxCachedLen.
	long := fmt.Sprintf("INSERT INTO cache_%p VALUES ('%s')", t, strings.Repeat("x", MaxCachedLen-100))
	first, err = Parse(long + " " + traceparent(0))
	require.NoError(t, err)
	p, err = Parse(long + " " + traceparent(1))
	require.NoError(t, err)
	require.Same(t, first, p)
}

func BenchmarkParse(b *testing.B) {
	const sql = "SELECT id, priority, payload FROM tasks WHERE cpu <= ? AND mem <= ? ORDER BY priority DESC LIMIT 1 FOR POP"
	// misses reports the statements Parse parsed, per op.
	misses := func(b *testing.B, before int64) {
		b.ReportMetric(float64(parsed.Load()-before)/float64(b.N), "misses/op")
	}
	b.Run("uncached", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := parse(sql); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		before := parsed.Load()
		for i := 0; i < b.N; i++ {
			if _, err := Parse(sql); err != nil {
				b.Fatal(err)
			}
		}
		misses(b, before)
	})
	// commented: the statement as sqlcommenter (otelsql's
	// WithSQLCommenter) sends it, with the caller's traceparent appended,
	// new each call. The Sprintf is part of each op.
	b.Run("commented", func(b *testing.B) {
		b.ReportAllocs()
		before := parsed.Load()
		for i := 0; i < b.N; i++ {
			q := fmt.Sprintf("%s /*traceparent='00-%032x-%016x-01'*/", sql, i, i)
			if _, err := Parse(q); err != nil {
				b.Fatal(err)
			}
		}
		misses(b, before)
	})
}

func FuzzParse(f *testing.F) {
	for _, tc := range accepted {
		f.Add(tc.sql)
	}
	for _, tc := range rejected {
		f.Add(tc.sql)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		p, err := parse(sql)
		if err != nil {
			require.True(t, errors.Is(err, ErrSyntax) || errors.Is(err, ErrUnsupported) || errors.Is(err, ErrValue), "unclassified error %v", err)
			return
		}
		require.NotNil(t, p.Stmt)
		// Parsing is deterministic.
		p2, err := parse(sql)
		require.NoError(t, err)
		require.Equal(t, p, p2)
	})
}

// An error about one part of a statement says what was wrong there, and
// what to write instead, without the whole grammar; a statement that is
// not understood at all (or not in the dialect) still lists it.
func TestErrorsWithoutTheGrammar(t *testing.T) {
	t.Parallel()
	for _, sql := range []string{
		"SELECT * FROM t WHERE a = 9223372036854775808",
		"SELECT * FROM t LIMIT -1",
		"SELECT * FROM t LIMIT 2, 3",
		"CREATE TABLE t (a VARCHAR(0))",
		"CREATE TABLE t (a INT) MAX_ATTEMPTS=0",
		"SELECT COUNT(*), name FROM t",
		"SELECT a AS b FROM t",
		"SELECT DISTINCT a FROM t",
		"SELECT a FROM t LIMIT 1 FOR LEASE 0",
		"INSERT INTO t (a) VALUES (0/0)",
		"INSERT INTO t (a) VALUES (NOW() + INTERVAL 1 DAY)",
		"CREATE TABLE émoji (a INT)",
		"CREATE TABLE ` ` (a INT)",
		"CREATE TABLE `" + strings.Repeat("x", 300) + "` (a INT)",
		"CREATE TABLE t (`" + strings.Repeat("y", 70000) + "` INT)",
	} {
		_, err := Parse(sql)
		require.Error(t, err, sql)
		require.NotContains(t, err.Error(), "supported: CREATE TABLE", sql)
		require.Less(t, len(err.Error()), 300, "%s: %v", sql, err)
	}
	for _, sql := range []string{"GRANT ALL ON t TO u", "SELEC 1", "", "SELECT * FROM t WHERE"} {
		_, err := Parse(sql)
		require.ErrorContains(t, err, Supported, sql)
	}
	_, err := Parse("CREATE TABLE émoji2 (名前 TEXT)")
	require.ErrorIs(t, err, ErrSyntax)
	require.ErrorContains(t, err, "quote others in backticks, as `émoji2`")
	_, err = Parse("CREATE TABLE `émoji😀` (`名前` TEXT, `🔥` INT)")
	require.NoError(t, err)
	_, err = Parse("CREATE TABLE ` ` (a INT)")
	require.ErrorContains(t, err, "is blank")
	_, err = Parse("CREATE TABLE `" + strings.Repeat("x", 256) + "` (a INT)")
	require.ErrorContains(t, err, "is 256 bytes; a name is at most 255")
	_, err = Parse("CREATE TABLE `" + strings.Repeat("x", 255) + "` (a INT)")
	require.NoError(t, err)
}

// FuzzCacheKey: a text and its cache key parse to the same statement, or
// both fail; a key is its own key.
func FuzzCacheKey(f *testing.F) {
	for _, tc := range accepted {
		f.Add(tc.sql)
		f.Add(tc.sql + " " + traceparent(1))
		f.Add("-- c\n" + tc.sql + " # c")
	}
	for _, tc := range rejected {
		f.Add(tc.sql + " /* c */")
	}
	for _, s := range []string{"SELECT 1e--5", "SELECT 0x1e-5 -- c", "SELECT 'a\\' -- b'", "SELECT `a``b` /* c */", "SELECT 1 /*! FOR POP */ -- c", "SELECT x'ab''cd' -- c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		key := cacheKey(sql)
		require.Equal(t, key, cacheKey(key))
		p, err := parse(sql)
		pk, errk := parse(key)
		require.Equal(t, err == nil, errk == nil, "%q: %v; key %q: %v", sql, err, key, errk)
		if err == nil {
			require.Equal(t, p, pk, "%q and its key %q", sql, key)
		}
		// Errors may differ (a position, a class): they are not cached,
		// and Parse reports the one of the text as sent.
	})
}
