package parser

// The conversion of sqlparser's tree to the statement types: which
// statements are in the dialect, and the parts they share.

import (
	"fmt"
	"strings"

	"github.com/xwb1989/sqlparser"
)

// converter turns sqlparser's tree into ours.
type converter struct {
	pp *prepass
	// lead is the statement's leading keywords ("CREATE INDEX"): sqlparser's
	// tree does not keep them (it reads CREATE INDEX as an ALTER, DROP VIEW
	// as a DROP of a table, EXPLAIN as OTHERREAD).
	lead  string
	names []string
	seen  map[string]bool
}

func (c *converter) statement(tree sqlparser.Statement) (Statement, error) {
	switch s := tree.(type) {
	case *sqlparser.DDL:
		return c.ddl(s)
	case *sqlparser.Insert:
		return c.insert(s)
	case *sqlparser.Select:
		return c.selectStmt(s)
	case *sqlparser.Delete:
		return c.delete(s)
	case *sqlparser.Update:
		return c.update(s)
	case *sqlparser.Begin:
		return &Begin{}, nil
	case *sqlparser.Commit:
		return &Commit{}, nil
	case *sqlparser.Rollback:
		return &Rollback{}, nil
	case *sqlparser.Union, *sqlparser.ParenSelect:
		return nil, unsupported("UNION and nested SELECT")
	}
	// Set, Show, OtherRead (EXPLAIN, DESCRIBE), OtherAdmin (REPAIR,
	// OPTIMIZE), DBDDL (CREATE DATABASE), Use, Stream.
	return nil, c.unsupportedStatement()
}

// leadingWords returns the keywords a statement starts with, upper case: up
// to four of them, or one for EXPLAIN and DESCRIBE.
func leadingWords(toks []token) string {
	var words []string
	for _, t := range toks {
		if t.typ == sqlparser.COMMENT {
			continue
		}
		if sqlparser.KeywordString(t.typ) == "" || len(words) == 4 {
			break
		}
		words = append(words, strings.ToUpper(t.val))
		if w := words[0]; w == "EXPLAIN" || w == "DESCRIBE" || w == "DESC" {
			break
		}
	}
	return strings.Join(words, " ")
}

// statementHints says what to use instead of statements outside the
// dialect, by their leading keywords.
var statementHints = []struct{ lead, hint string }{
	{"CREATE INDEX", "the fit index is declared in CREATE TABLE: INDEX name (resource columns)"},
	{"CREATE UNIQUE", "uniqueness is not enforced; the fit index is declared in CREATE TABLE: INDEX name (resource columns)"},
	{"CREATE", "the only CREATEs are CREATE TABLE and CREATE SCHEDULE"},
	{"DROP INDEX", "a table's index is fixed when it is created: create a new table and copy the rows"},
	{"DROP", "the only DROPs are DROP TABLE and DROP SCHEDULE"},
	{"ALTER", "a table's columns and index are fixed when it is created: create a new table and copy the rows"},
	{"RENAME", "create a table with the new name and copy the rows"},
	{"TRUNCATE", "DELETE FROM t removes every row, in one small transaction"},
	{"EXPLAIN", "queries take the access path the dialect documents: WHERE id = v reads one row, <= on INDEX columns uses the fit index, anything else scans"},
	{"DESCRIBE", "driver.Tables lists tables and columns; in the shell, \\dt and \\d TABLE"},
	{"DESC", "driver.Tables lists tables and columns; in the shell, \\dt and \\d TABLE"},
	{"SHOW", "SHOW SCHEDULES lists schedules; driver.Tables lists tables and columns; in the shell, \\dt and \\d TABLE"},
	{"SET", "there are no session variables; transactions are serializable"},
	{"USE", "a DSN names one database"},
}

// unsupportedStatement is the error for a statement outside the dialect,
// named by its leading keywords.
func (c *converter) unsupportedStatement() error {
	lead := c.lead
	if lead == "" {
		lead = "this statement"
	}
	for _, h := range statementHints {
		if lead == h.lead || strings.HasPrefix(lead, h.lead+" ") {
			return unsupported("statement %s (%s)", lead, h.hint)
		}
	}
	return fmt.Errorf("%w: statement %s; %s", ErrUnsupported, lead, Supported)
}

func tableName(t sqlparser.TableName) (string, error) {
	if !t.Qualifier.IsEmpty() {
		return "", unsupported("qualified table name %s.%s", t.Qualifier.String(), t.Name.String())
	}
	if t.Name.IsEmpty() {
		return "", unsupported("a statement without a table")
	}
	return t.Name.String(), nil
}

func (c *converter) from(te sqlparser.TableExprs) (string, error) {
	if len(te) != 1 {
		return "", unsupported("more than one table (joins)")
	}
	at, ok := te[0].(*sqlparser.AliasedTableExpr)
	if !ok {
		return "", unsupported("joins and subqueries")
	}
	tn, ok := at.Expr.(sqlparser.TableName)
	if !ok {
		return "", unsupported("a subquery in FROM")
	}
	if !at.As.IsEmpty() || at.Hints != nil {
		return "", unsupported("table aliases and index hints")
	}
	return tableName(tn)
}

// addName records a :name placeholder, once, in the order of first use.
func (c *converter) addName(name string) {
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	if !c.seen[name] {
		c.seen[name] = true
		c.names = append(c.names, name)
	}
}
