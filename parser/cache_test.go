package parser

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

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
		t.Run(caseName(in), func(t *testing.T) {
			t.Parallel()
			require.Equal(t, want, cacheKey(in), "%q", in)
			require.Equal(t, cacheKey(want), cacheKey(in), "%q: a key is its own key", in)
		})
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

// FuzzCacheKey: a text and its cache key parse to the same statement, or
// both fail; a key is its own key.
func FuzzCacheKey(f *testing.F) {
	for _, sql := range dataStatements(f) {
		f.Add(sql + " " + traceparent(1))
		f.Add("-- c\n" + sql + " # c")
		f.Add(sql + " /* c */")
	}
	for _, s := range []string{"SELECT 1e--5", "SELECT 0x1e-5 -- c", "SELECT 'a\\' -- b'", "SELECT `a``b` /* c */", "SELECT 1 /*! FOR POP */ -- c", "SELECT x'ab''cd' -- c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		key := cacheKey(sql)
		require.Equal(t, key, cacheKey(key))
		if len(sql) > MaxStatementSize {
			// Parse parses it as sent, never by its key: the key of a
			// text too long may be short enough.
			return
		}
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
