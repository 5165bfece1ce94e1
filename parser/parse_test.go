package parser

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

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
		t.Run(caseName(sql), func(t *testing.T) {
			t.Parallel()
			_, err := Parse(sql)
			require.Error(t, err, sql)
			require.NotContains(t, err.Error(), "supported: CREATE TABLE", sql)
			require.Less(t, len(err.Error()), 300, "%s: %v", sql, err)
		})
	}
	for _, sql := range []string{"GRANT ALL ON t TO u", "SELEC 1", "", "SELECT * FROM t WHERE"} {
		t.Run(caseName(sql), func(t *testing.T) {
			t.Parallel()
			_, err := Parse(sql)
			require.ErrorContains(t, err, Supported, sql)
		})
	}
}

// caseName names the subtest of a statement: its first 40 bytes.
func caseName(sql string) string {
	if len(sql) > 40 {
		sql = strings.ToValidUTF8(sql[:40], "")
	}
	return sql
}

// FuzzParse: every statement parses or fails with one of the package's
// errors, and parses alike twice. Its seeds are the statements of the
// datadriven files.
func FuzzParse(f *testing.F) {
	for _, sql := range dataStatements(f) {
		f.Add(sql)
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
