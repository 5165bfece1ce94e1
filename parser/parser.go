package parser

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/xwb1989/sqlparser"
)

// ErrSyntax is returned (wrapped, with the position and what is supported)
// for text the dialect does not accept.
var ErrSyntax = errors.New("fdbqueue: SQL not understood")

// ErrUnsupported is returned (wrapped) for valid SQL outside the dialect.
var ErrUnsupported = errors.New("fdbqueue: not supported")

// ErrValue is returned when a value in the statement's text is out of
// its range (a lease of 0 seconds, a wait of an hour); exec returns the
// same value for arguments out of range, and for values that do not fit
// their column.
var ErrValue = errors.New("fdbqueue: invalid value")

// Supported summarises the dialect for error messages.
const Supported = "supported: CREATE TABLE [IF NOT EXISTS], DROP TABLE [IF EXISTS], " +
	"INSERT INTO t [(cols)] VALUES (...), SELECT cols|*|COUNT(*) FROM t [WHERE] [ORDER BY priority [ASC|DESC]] [LIMIT n] [FOR POP [WAIT seconds] | FOR LEASE seconds [WAIT seconds]], " +
	"DELETE FROM t [WHERE] [ORDER BY priority] [LIMIT n], UPDATE t SET priority = v WHERE id = v, UPDATE t SET _visible_at = v WHERE id = v [AND _lease = v], BEGIN, COMMIT, ROLLBACK"

// MaxStatementSize bounds the text Parse accepts.
const MaxStatementSize = 1 << 20

// Parsed is a parsed statement with what its placeholders need.
type Parsed struct {
	Stmt Statement
	// NumInput is the number of ? placeholders, or -1 when the statement
	// uses :name placeholders (their names are in Names).
	NumInput int
	Names    []string
}

// token is one token of the text, with the segment of the text it came from
// (its leading blanks included).
type token struct {
	typ        int
	val        string
	start, end int
}

func tokenize(sql string) ([]token, error) {
	tz := sqlparser.NewStringTokenizer(sql)
	var toks []token
	for {
		before := tz.Position
		typ, val, err := scan(tz)
		if err != nil {
			return nil, err
		}
		if typ == 0 {
			break
		}
		if typ == sqlparser.LEX_ERROR {
			if len(val) > 0 && val[0] >= utf8.RuneSelf {
				return nil, fmt.Errorf("%w: syntax error at position %d near %q: a name without quotes is ASCII letters, digits, _ and $; quote others in backticks, as `%s`", ErrSyntax, tz.Position, val, nameAt(sql, before))
			}
			return nil, fmt.Errorf("%w: syntax error at position %d: unterminated or invalid token near %q; %s", ErrSyntax, tz.Position, val, Supported)
		}
		if typ == sqlparser.ID {
			if err := checkName(val); err != nil {
				return nil, err
			}
		}
		start, end := max(before-1, 0), max(tz.Position-1, 0)
		if end > len(sql) {
			end = len(sql)
		}
		toks = append(toks, token{typ: typ, val: string(val), start: start, end: end})
	}
	return toks, nil
}

// scan is tz.Scan, with a panic of sqlparser's lexer made a syntax error:
// it panics on a MySQL comment whose version holds no code after it, as in
// /*!*/ or /*!123*/ (ExtractMysqlComment slices at -1).
func scan(tz *sqlparser.Tokenizer) (typ int, val []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: syntax error at position %d: the lexer failed; a /*! */ comment holds code after its version number", ErrSyntax, tz.Position)
		}
	}()
	typ, val = tz.Scan()
	return typ, val, nil
}

// MaxNameSize is the longest table or column name, in bytes (MySQL's is
// 64 characters): names are parts of keys, which hold at most 10,000
// bytes.
const MaxNameSize = 255

// checkName reports a name that no table or column may have.
func checkName(name []byte) error {
	switch {
	case !utf8.Valid(name):
		// Names are stored as text: one that is not UTF-8 could not be
		// read back.
		return fmt.Errorf("%w: name %q is not valid UTF-8", ErrSyntax, name)
	case len(name) > MaxNameSize:
		return fmt.Errorf("%w: name %.20q... is %d bytes; a name is at most %d", ErrSyntax, name, len(name), MaxNameSize)
	case len(bytes.TrimSpace(name)) == 0:
		return fmt.Errorf("%w: name %q is blank; a name has a character other than spaces", ErrSyntax, name)
	}
	return nil
}

// nameAt returns the run of name characters (letters, digits, _ and $,
// of any script) at offset i of sql, for the error at an unquoted name
// outside ASCII.
func nameAt(sql string, i int) string {
	i = max(i, 0)
	for i < len(sql) && sql[i] == ' ' {
		i++
	}
	j := i
	for j < len(sql) {
		r, n := utf8.DecodeRuneInString(sql[j:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '$' && !unicode.Is(unicode.So, r) {
			break
		}
		j += n
	}
	return sql[i:j]
}

// prepass recognises what sqlparser does not: a trailing FOR POP [WAIT n],
// CREATE TABLE IF NOT EXISTS, BOOL/BOOLEAN column types, negative and
// boolean DEFAULTs, and unnamed indexes. It returns the text for sqlparser.
type prepass struct {
	forPop      bool
	lease       *Value // FOR LEASE's seconds or placeholder
	wait        *Value // FOR POP WAIT's (or FOR LEASE's WAIT's) seconds or placeholder
	ifNotExists bool
	maxAttempts int64 // MAX_ATTEMPTS=n
	boolCols    map[string]bool
	positional  int // ? placeholders
	named       bool
}

func (pp *prepass) run(sql string, toks []token) (string, error) {
	var code []int // indexes of non-comment tokens
	for i, t := range toks {
		if t.typ != sqlparser.COMMENT {
			code = append(code, i)
		}
	}
	tokAt := func(k int) token {
		if k < 0 || k >= len(code) {
			return token{}
		}
		return toks[code[k]]
	}
	n := len(code)
	if n > 0 && tokAt(n-1).typ == ';' {
		n--
	}
	replace := map[int]string{} // token index -> replacement text
	drop := map[int]bool{}

	// Placeholders: ? becomes :vN in sqlparser; :name stays.
	for _, i := range code[:n] {
		t := toks[i]
		if t.typ == sqlparser.VALUE_ARG {
			if strings.HasSuffix(strings.TrimSpace(sql[t.start:t.end]), "?") {
				pp.positional++
			} else {
				pp.named = true
			}
		}
		if t.typ == sqlparser.LIST_ARG {
			return "", fmt.Errorf("%w: list placeholders (::name); %s", ErrUnsupported, Supported)
		}
	}
	if pp.positional > 0 && pp.named {
		return "", fmt.Errorf("%w: a statement uses either ? or :name placeholders, not both", ErrUnsupported)
	}

	// FOR LEASE d [WAIT n], or FOR POP [WAIT n], at the end of a SELECT.
	end, err := pp.leaseClause(sql, tokAt, n)
	if err != nil {
		return "", err
	}
	if pp.lease == nil {
		if end, err = pp.waitClause(sql, tokAt, n); err != nil {
			return "", err
		}
	}
	for k := end; k < n; k++ {
		drop[code[k]] = true
	}
	if pp.lease == nil && end >= 2 && tokAt(end-2).typ == sqlparser.FOR {
		last := tokAt(end - 1)
		if last.typ == sqlparser.ID && strings.EqualFold(last.val, "pop") {
			pp.forPop = true
			drop[code[end-2]], drop[code[end-1]] = true, true
		} else if last.typ != sqlparser.UPDATE {
			return "", fmt.Errorf("%w: trailing clause FOR %s; the trailing clauses are FOR POP [WAIT seconds] and FOR LEASE seconds [WAIT seconds]", ErrUnsupported, strings.ToUpper(last.val))
		}
	}

	if n >= 2 && tokAt(0).typ == sqlparser.CREATE && tokAt(1).typ == sqlparser.TABLE {
		k := 2
		if tokAt(2).typ == sqlparser.IF && tokAt(3).typ == sqlparser.NOT && tokAt(4).typ == sqlparser.EXISTS {
			pp.ifNotExists = true
			drop[code[2]], drop[code[3]], drop[code[4]] = true, true, true
			k = 5
		}
		pp.boolCols = map[string]bool{}
		if err := pp.maxAttemptsOption(sql, tokAt, code, n, drop); err != nil {
			return "", err
		}
		for ; k < n; k++ {
			t, prev := tokAt(k), tokAt(k-1)
			switch {
			case (t.typ == sqlparser.BOOL || t.typ == sqlparser.BOOLEAN) && prev.typ == sqlparser.ID:
				// A column type: sqlparser knows BIT, which we read back as BOOLEAN.
				replace[code[k]] = " bit"
				pp.boolCols[strings.ToLower(prev.val)] = true
			case t.typ == sqlparser.DEFAULT:
				v := tokAt(k + 1)
				switch {
				case v.typ == '-' && (tokAt(k+2).typ == sqlparser.INTEGRAL || tokAt(k+2).typ == sqlparser.FLOAT):
					replace[code[k+1]] = " '-" + tokAt(k+2).val + "'"
					drop[code[k+2]] = true
					k += 2
				case v.typ == sqlparser.TRUE || v.typ == sqlparser.FALSE:
					replace[code[k+1]] = " '" + strings.ToLower(v.val) + "'"
					k++
				}
			case (t.typ == sqlparser.INDEX || t.typ == sqlparser.KEY) && tokAt(k+1).typ == '(' &&
				prev.typ != sqlparser.PRIMARY && prev.typ != sqlparser.UNIQUE && prev.typ != sqlparser.SPATIAL && prev.typ != sqlparser.FULLTEXT:
				replace[code[k]] = " INDEX fit"
			}
		}
	}

	if len(replace) == 0 && len(drop) == 0 {
		return sql, nil
	}
	var b strings.Builder
	for i, t := range toks {
		switch {
		case drop[i]:
		case replace[i] != "":
			b.WriteString(replace[i])
		default:
			b.WriteString(sql[t.start:t.end])
		}
	}
	return b.String(), nil
}

func parse(sql string) (*Parsed, error) {
	if len(sql) > MaxStatementSize {
		return nil, fmt.Errorf("%w: statement of %d bytes (at most %d): bind large values to placeholders, or insert in several statements", ErrUnsupported, len(sql), MaxStatementSize)
	}
	if strings.TrimSpace(strings.TrimRight(strings.TrimSpace(sql), ";")) == "" {
		return nil, fmt.Errorf("%w: empty statement; %s", ErrSyntax, Supported)
	}
	toks, err := tokenize(sql)
	if err != nil {
		return nil, err
	}
	var pp prepass
	text, err := pp.run(sql, toks)
	if err != nil {
		return nil, err
	}
	if semis := countStatements(toks); semis > 1 {
		return nil, fmt.Errorf("%w: %d statements in one call; send one statement at a time", ErrUnsupported, semis)
	}
	tree, err := sqlparser.ParseStrictDDL(text)
	if err != nil {
		return nil, syntaxError(text, err)
	}
	c := converter{pp: &pp, lead: leadingWords(toks)}
	st, err := c.statement(tree)
	if err != nil {
		return nil, err
	}
	if sel, ok := st.(*Select); ok {
		sel.ForPop, sel.Lease, sel.Wait = pp.forPop, pp.lease, pp.wait
		for _, w := range []*Value{pp.lease, pp.wait} {
			if w != nil && w.Kind == ValueArg && w.Name != "" {
				c.addName(w.Name)
			}
		}
		clause, verb := "FOR POP", "pop"
		if sel.Lease != nil {
			clause, verb = "FOR LEASE", "lease"
		}
		if sel.Takes() && sel.Limit == nil {
			return nil, fmt.Errorf("%w: %s needs a LIMIT (how many rows to %s)", ErrUnsupported, clause, verb)
		}
		if sel.Takes() && sel.Count {
			return nil, fmt.Errorf("%w: SELECT COUNT(*) ... %s; %s rows, then count them", ErrUnsupported, clause, verb)
		}
	} else if pp.forPop {
		return nil, fmt.Errorf("%w: FOR POP ends a SELECT", ErrUnsupported)
	} else if pp.lease != nil {
		return nil, fmt.Errorf("%w: FOR LEASE ends a SELECT", ErrUnsupported)
	}
	p := &Parsed{Stmt: st, NumInput: pp.positional}
	if pp.named {
		p.NumInput = -1
		p.Names = c.names
	}
	return p, nil
}

// syntaxPosition finds the position in sqlparser's syntax errors: "syntax
// error at position 25 near 'status'".
var syntaxPosition = regexp.MustCompile(`at position (\d+)`)

// syntaxError explains a syntax error of sqlparser's. The lexer is MySQL's,
// so a name that is a keyword there (status, key, order, timestamp) is a
// syntax error: when the error is at such a word, say so, and how to quote it.
func syntaxError(text string, err error) error {
	m := syntaxPosition.FindStringSubmatch(err.Error())
	if m == nil {
		return fmt.Errorf("%w: %v; %s", ErrSyntax, err, Supported)
	}
	pos, _ := strconv.Atoi(m[1])
	toks, _ := tokenize(text)
	first := true
	for _, t := range toks {
		if t.typ == sqlparser.COMMENT {
			continue
		}
		// The parser fails at the token it has just read: the one ending
		// where the tokenizer stopped. The first word starts a statement
		// (LOCK, say) rather than naming something.
		word := strings.TrimSpace(text[t.start:t.end])
		if t.end == pos-1 && sqlparser.KeywordString(t.typ) != "" && isWord(word) {
			if first {
				return fmt.Errorf("%w: statement %s (%v); %s", ErrUnsupported, strings.ToUpper(word), err, Supported)
			}
			return fmt.Errorf("%w: %q is a reserved word; to use it as a name, quote it as `%s` (%v); %s", ErrSyntax, word, word, err, Supported)
		}
		first = false
	}
	return fmt.Errorf("%w: %v; %s", ErrSyntax, err, Supported)
}

func isWord(s string) bool {
	for i, r := range s {
		if !(r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || i > 0 && '0' <= r && r <= '9') {
			return false
		}
	}
	return s != ""
}

// countStatements counts the statements in the token stream: text after a
// semicolon is a second statement.
func countStatements(toks []token) int {
	n, pending := 0, false
	for _, t := range toks {
		switch t.typ {
		case sqlparser.COMMENT:
		case ';':
			if pending {
				n++
			}
			pending = false
		default:
			pending = true
		}
	}
	if pending {
		n++
	}
	return n
}

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
	{"CREATE", "the only CREATE is CREATE TABLE"},
	{"DROP INDEX", "a table's index is fixed when it is created: create a new table and copy the rows"},
	{"DROP", "the only DROP is DROP TABLE"},
	{"ALTER", "a table's columns and index are fixed when it is created: create a new table and copy the rows"},
	{"RENAME", "create a table with the new name and copy the rows"},
	{"TRUNCATE", "DELETE FROM t removes every row, in one small transaction"},
	{"EXPLAIN", "queries take the access path the dialect documents: WHERE id = v reads one row, <= on INDEX columns uses the fit index, anything else scans"},
	{"DESCRIBE", "driver.Tables lists tables and columns; in the shell, \\dt and \\d TABLE"},
	{"DESC", "driver.Tables lists tables and columns; in the shell, \\dt and \\d TABLE"},
	{"SHOW", "driver.Tables lists tables and columns; in the shell, \\dt and \\d TABLE"},
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

// unsupported is the error for one part of a statement outside the
// dialect: it says what, and what to write instead where there is a
// choice, without the whole grammar (Supported), which only a statement
// not understood at all needs.
func unsupported(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnsupported, fmt.Sprintf(format, args...))
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

func tableName(t sqlparser.TableName) (string, error) {
	if !t.Qualifier.IsEmpty() {
		return "", unsupported("qualified table name %s.%s", t.Qualifier.String(), t.Name.String())
	}
	if t.Name.IsEmpty() {
		return "", unsupported("a statement without a table")
	}
	return t.Name.String(), nil
}

func (c *converter) ddl(d *sqlparser.DDL) (Statement, error) {
	// sqlparser reads CREATE VIEW as a create and DROP VIEW as a drop of
	// the view's name: only the leading keywords tell them from a table's.
	switch {
	case d.Action == sqlparser.CreateStr && strings.HasPrefix(c.lead, "CREATE TABLE"):
		return c.createTable(d)
	case d.Action == sqlparser.DropStr && strings.HasPrefix(c.lead, "DROP TABLE"):
		name, err := tableName(d.Table)
		if err != nil {
			return nil, err
		}
		return &DropTable{Name: name, IfExists: d.IfExists}, nil
	}
	return nil, c.unsupportedStatement()
}

func (c *converter) createTable(d *sqlparser.DDL) (Statement, error) {
	name, err := tableName(d.NewName)
	if err != nil {
		return nil, err
	}
	if d.TableSpec == nil {
		return nil, unsupported("CREATE TABLE without columns")
	}
	ts := d.TableSpec
	ct := &CreateTable{Name: name, IfNotExists: c.pp.ifNotExists}
	if strings.TrimSpace(ts.Options) != "" {
		return nil, unsupported("table options %q (the only table option is MAX_ATTEMPTS=n)", strings.TrimSpace(ts.Options))
	}
	ct.MaxAttempts = c.pp.maxAttempts
	for _, cd := range ts.Columns {
		col, err := c.column(cd)
		if err != nil {
			return nil, err
		}
		ct.Columns = append(ct.Columns, col)
	}
	if len(ts.Indexes) > 1 {
		return nil, unsupported("more than one INDEX (a table has one fit index over its resource columns)")
	}
	for _, ix := range ts.Indexes {
		if ix.Info.Primary || ix.Info.Unique || ix.Info.Spatial || ix.Info.Type == "fulltext" {
			return nil, unsupported("%s (keys and uniqueness are not enforced; the only index is the fit index, INDEX name (resource columns))", strings.ToUpper(ix.Info.Type))
		}
		if len(ix.Options) > 0 {
			o := ix.Options[0]
			return nil, unsupported("index option %s (the fit index has no options)", strings.ToUpper(strings.TrimSpace(o.Name+" "+o.Using)))
		}
		ct.IndexName = ix.Info.Name.String()
		for _, ic := range ix.Columns {
			if ic.Length != nil {
				return nil, unsupported("index prefix lengths")
			}
			ct.Index = append(ct.Index, ic.Column.String())
		}
	}
	return ct, nil
}

// columnTypes are the type names the dialect accepts, and their types.
var columnTypes = map[string]Type{
	"int": TypeInt, "integer": TypeInt, "bigint": TypeInt,
	"double": TypeFloat, "float": TypeFloat, "real": TypeFloat,
	"text": TypeText, "varchar": TypeText,
	"blob": TypeBlob, "varbinary": TypeBlob,
	"timestamp": TypeTimestamp, "datetime": TypeTimestamp,
}

// typeList names the accepted types, for errors.
const typeList = "types: INT/INTEGER/BIGINT (64-bit), DOUBLE/FLOAT/REAL (64-bit), TEXT, VARCHAR(n), BLOB, VARBINARY(n), BOOLEAN/BOOL, TIMESTAMP/DATETIME"

// typeInstead says, for a type sqlparser knows and the dialect refuses, why
// and what to declare instead. Types with semantics fdbqueue would not
// enforce (a range, a scale, padding) are refused rather than stored as
// something close: a value the declared type would refuse must not be
// stored silently.
var typeInstead = map[string]string{
	"tinyint":    "its range is not enforced: integers are 64-bit; use INT, or BOOLEAN",
	"smallint":   "its range is not enforced: integers are 64-bit; use INT",
	"mediumint":  "its range is not enforced: integers are 64-bit; use INT",
	"decimal":    "exact decimals are not supported; use INT (in cents, say) or DOUBLE",
	"numeric":    "exact decimals are not supported; use INT (in cents, say) or DOUBLE",
	"char":       "fixed-length, space-padded text is not supported; use VARCHAR(n)",
	"binary":     "fixed-length, zero-padded bytes are not supported; use VARBINARY(n)",
	"tinytext":   "use TEXT or VARCHAR(n)",
	"mediumtext": "use TEXT (a row holds at most 100,000 bytes)",
	"longtext":   "use TEXT (a row holds at most 100,000 bytes)",
	"tinyblob":   "use BLOB or VARBINARY(n)",
	"mediumblob": "use BLOB (a row holds at most 100,000 bytes)",
	"longblob":   "use BLOB (a row holds at most 100,000 bytes)",
	"bit":        "use BOOLEAN",
	"date":       "use TIMESTAMP",
	"time":       "use INT (nanoseconds, say) or TEXT",
	"year":       "use INT",
	"json":       "use TEXT or BLOB",
	"enum":       "use TEXT or INT",
	"set":        "use TEXT",
}

func (c *converter) column(cd *sqlparser.ColumnDefinition) (Column, error) {
	name := cd.Name.String()
	col := Column{Name: name, NotNull: bool(cd.Type.NotNull)}
	ct := &cd.Type
	ty := strings.ToLower(ct.Type)
	var ok bool
	switch col.Type, ok = columnTypes[ty]; {
	case ty == "bit" && c.pp.boolCols[strings.ToLower(name)]:
		col.Type = TypeBool // BOOLEAN, which the prepass spelt BIT
	case !ok && typeInstead[ty] != "":
		return col, unsupported("type %s of column %s (%s; %s)", strings.ToUpper(ty), name, typeInstead[ty], typeList)
	case !ok:
		return col, unsupported("type %s of column %s (%s)", strings.ToUpper(ty), name, typeList)
	}
	if ct.Length != nil {
		decl := fmt.Sprintf("%s(%s)", strings.ToUpper(ty), ct.Length.Val)
		if ct.Scale != nil {
			decl = fmt.Sprintf("%s(%s,%s)", strings.ToUpper(ty), ct.Length.Val, ct.Scale.Val)
		}
		switch {
		case ty == "varchar" || ty == "varbinary":
			n, err := strconv.Atoi(string(ct.Length.Val))
			if err != nil || n < 1 || ct.Scale != nil {
				return col, unsupported("%s of column %s (the length is 1 or more %s)", decl, name, map[string]string{"varchar": "characters", "varbinary": "bytes"}[ty])
			}
			col.Length = n
		case col.Type == TypeInt:
			return col, unsupported("display width %s of column %s (integers are 64-bit; write %s)", decl, name, strings.ToUpper(ty))
		case col.Type == TypeFloat:
			return col, unsupported("precision %s of column %s (values are 64-bit doubles, not rounded; write DOUBLE)", decl, name)
		case col.Type == TypeTimestamp:
			return col, unsupported("precision %s of column %s (timestamps keep nanoseconds; write %s)", decl, name, strings.ToUpper(ty))
		}
	}
	// Column options that fdbqueue would not enforce are refused by name.
	var opt, why string
	switch {
	case bool(ct.Unsigned):
		opt, why = "UNSIGNED", "integers are signed 64-bit; a negative value would not be refused"
	case bool(ct.Zerofill):
		opt, why = "ZEROFILL", "integers are returned as numbers"
	case ct.Charset != "":
		opt, why = "CHARACTER SET "+ct.Charset, "TEXT is always UTF-8; use BLOB for other bytes"
	case ct.Collate != "":
		opt, why = "COLLATE "+ct.Collate, "TEXT compares byte by byte, as utf8mb4_bin"
	case ct.OnUpdate != nil:
		opt, why = "ON UPDATE "+strings.ToUpper(string(ct.OnUpdate.Val)), "rows are not updated in place"
	case bool(ct.Autoincrement):
		opt, why = "AUTO_INCREMENT", "every row has an implicit id, assigned at insert"
	case ct.KeyOpt != 0:
		// sqlparser's key options are unexported; its formatter names them.
		buf := sqlparser.NewTrackedBuffer(nil)
		(&sqlparser.ColumnType{KeyOpt: ct.KeyOpt}).Format(buf)
		opt, why = strings.ToUpper(strings.TrimSpace(buf.String())), "keys and uniqueness are not enforced; every row has an implicit id, its key"
	case ct.Comment != nil:
		opt, why = "COMMENT", "comments are not stored"
	}
	if opt != "" {
		return col, unsupported("%s on column %s (%s)", opt, name, why)
	}
	if d := ct.Default; d != nil {
		var v Value
		switch {
		case d.Type == sqlparser.ValArg && strings.EqualFold(string(d.Val), "null"):
			v = Value{Kind: ValueNull} // sqlparser spells DEFAULT NULL as an argument
		case d.Type == sqlparser.ValArg:
			return col, unsupported("DEFAULT %s of column %s (a DEFAULT is a literal; pass the time as an argument)", strings.ToUpper(string(d.Val)), name)
		default:
			var err error
			if v, err = c.value(d); err != nil {
				return col, err
			}
		}
		col.Default = &v
	}
	return col, nil
}

func (c *converter) insert(s *sqlparser.Insert) (Statement, error) {
	if s.Action != sqlparser.InsertStr {
		return nil, unsupported("REPLACE")
	}
	if s.Ignore != "" || len(s.OnDup) > 0 || len(s.Partitions) > 0 {
		return nil, unsupported("INSERT IGNORE, ON DUPLICATE KEY and PARTITION")
	}
	name, err := tableName(s.Table)
	if err != nil {
		return nil, err
	}
	ins := &Insert{Table: name}
	for _, col := range s.Columns {
		ins.Columns = append(ins.Columns, col.String())
	}
	rows, ok := s.Rows.(sqlparser.Values)
	if !ok {
		return nil, unsupported("INSERT ... SELECT")
	}
	for _, tuple := range rows {
		row := make([]Value, len(tuple))
		for i, e := range tuple {
			v, err := c.expr(e)
			if err != nil {
				return nil, err
			}
			row[i] = v
		}
		ins.Rows = append(ins.Rows, row)
	}
	return ins, nil
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

// selectValue recognises SELECT n (an integer literal, FROM DUAL or no
// FROM, nothing else).
func selectValue(s *sqlparser.Select) (*SelectValue, bool) {
	if len(s.SelectExprs) != 1 || s.Where != nil || s.OrderBy != nil || s.Limit != nil || s.Lock != "" {
		return nil, false
	}
	if len(s.From) != 1 || !strings.EqualFold(sqlparser.String(s.From), "dual") {
		return nil, false
	}
	ae, ok := s.SelectExprs[0].(*sqlparser.AliasedExpr)
	if !ok || !ae.As.IsEmpty() {
		return nil, false
	}
	lit, ok := ae.Expr.(*sqlparser.SQLVal)
	if !ok || lit.Type != sqlparser.IntVal {
		return nil, false
	}
	n, err := strconv.ParseInt(string(lit.Val), 10, 64)
	if err != nil {
		return nil, false
	}
	return &SelectValue{Value: n}, true
}

func (c *converter) selectStmt(s *sqlparser.Select) (Statement, error) {
	if s.Distinct != "" || s.Hints != "" || len(s.GroupBy) > 0 || s.Having != nil || s.Cache != "" {
		return nil, unsupported("DISTINCT, GROUP BY, HAVING and hints")
	}
	if s.Lock != "" {
		return nil, unsupported("%s: transactions are serializable already; FOR POP removes the rows a SELECT reads", strings.ToUpper(strings.TrimSpace(s.Lock)))
	}
	if v, ok := selectValue(s); ok {
		return v, nil
	}
	name, err := c.from(s.From)
	if err != nil {
		return nil, err
	}
	sel := &Select{Table: name}
	for _, se := range s.SelectExprs {
		switch e := se.(type) {
		case *sqlparser.StarExpr:
			if !e.TableName.IsEmpty() {
				return nil, unsupported("qualified *")
			}
			sel.Star = true
		case *sqlparser.AliasedExpr:
			if !e.As.IsEmpty() {
				return nil, unsupported("column aliases (AS)")
			}
			switch x := e.Expr.(type) {
			case *sqlparser.ColName:
				if !x.Qualifier.IsEmpty() {
					return nil, unsupported("qualified column %s", sqlparser.String(x))
				}
				sel.Columns = append(sel.Columns, x.Name.String())
			case *sqlparser.FuncExpr:
				if !x.Name.EqualString("count") || x.Distinct || len(x.Exprs) != 1 {
					return nil, unsupported("function %s (the only one is COUNT(*))", sqlparser.String(x))
				}
				if _, star := x.Exprs[0].(*sqlparser.StarExpr); !star {
					return nil, unsupported("%s (the only count is COUNT(*))", sqlparser.String(x))
				}
				sel.Count = true
			default:
				return nil, unsupported("select expression %s (select columns, * or COUNT(*))", sqlparser.String(e))
			}
		default:
			return nil, unsupported("select expression %s", sqlparser.String(se))
		}
	}
	if sel.Count && (sel.Star || len(sel.Columns) > 0 || len(s.SelectExprs) > 1) {
		return nil, unsupported("COUNT(*) with other columns")
	}
	if sel.Star && len(s.SelectExprs) > 1 {
		return nil, unsupported("* with other columns")
	}
	if sel.Where, err = c.where(s.Where); err != nil {
		return nil, err
	}
	if sel.OrderBy, err = c.orderBy(s.OrderBy); err != nil {
		return nil, err
	}
	if sel.Limit, err = c.limit(s.Limit); err != nil {
		return nil, err
	}
	if sel.Count && (sel.OrderBy != nil || sel.Limit != nil) {
		return nil, unsupported("COUNT(*) with ORDER BY or LIMIT")
	}
	return sel, nil
}

func (c *converter) delete(s *sqlparser.Delete) (Statement, error) {
	if len(s.Targets) > 0 || len(s.Partitions) > 0 {
		return nil, unsupported("multi-table DELETE and PARTITION")
	}
	name, err := c.from(s.TableExprs)
	if err != nil {
		return nil, err
	}
	del := &Delete{Table: name}
	if del.Where, err = c.where(s.Where); err != nil {
		return nil, err
	}
	if del.OrderBy, err = c.orderBy(s.OrderBy); err != nil {
		return nil, err
	}
	if del.Limit, err = c.limit(s.Limit); err != nil {
		return nil, err
	}
	return del, nil
}

func (c *converter) update(s *sqlparser.Update) (Statement, error) {
	if len(s.OrderBy) > 0 || s.Limit != nil {
		return nil, unsupported("UPDATE with ORDER BY or LIMIT")
	}
	name, err := c.from(s.TableExprs)
	if err != nil {
		return nil, err
	}
	up := &Update{Table: name}
	for _, ue := range s.Exprs {
		if !ue.Name.Qualifier.IsEmpty() {
			return nil, unsupported("qualified column %s", sqlparser.String(ue.Name))
		}
		v, err := c.expr(ue.Expr)
		if err != nil {
			return nil, err
		}
		up.Set = append(up.Set, Assignment{Column: ue.Name.Name.String(), Value: v})
	}
	if up.Where, err = c.where(s.Where); err != nil {
		return nil, err
	}
	return up, nil
}

func (c *converter) orderBy(ob sqlparser.OrderBy) (*OrderBy, error) {
	if len(ob) == 0 {
		return nil, nil
	}
	if len(ob) > 1 {
		return nil, unsupported("ORDER BY more than one column (queues are ordered by priority)")
	}
	col, ok := ob[0].Expr.(*sqlparser.ColName)
	if !ok || !col.Qualifier.IsEmpty() {
		return nil, unsupported("ORDER BY %s (queues are ordered by priority)", sqlparser.String(ob[0].Expr))
	}
	return &OrderBy{Column: col.Name.String(), Desc: ob[0].Direction == sqlparser.DescScr}, nil
}

func (c *converter) limit(l *sqlparser.Limit) (*Value, error) {
	if l == nil {
		return nil, nil
	}
	if l.Offset != nil {
		return nil, unsupported("OFFSET (a queue is read from its head)")
	}
	v, err := c.expr(l.Rowcount)
	if err != nil {
		return nil, err
	}
	switch v.Kind {
	case ValueInt:
		if v.Int < 0 {
			return nil, unsupported("LIMIT %d (a count, 0 or more)", v.Int)
		}
	case ValueArg:
	default:
		return nil, unsupported("LIMIT %s (a count, 0 or more)", sqlparser.String(l.Rowcount))
	}
	return &v, nil
}

func (c *converter) where(w *sqlparser.Where) ([]Cond, error) {
	if w == nil {
		return nil, nil
	}
	var conds []Cond
	var walk func(e sqlparser.Expr) error
	walk = func(e sqlparser.Expr) error {
		switch x := e.(type) {
		case *sqlparser.AndExpr:
			if err := walk(x.Left); err != nil {
				return err
			}
			return walk(x.Right)
		case *sqlparser.ParenExpr:
			return walk(x.Expr)
		case *sqlparser.ComparisonExpr:
			cond, err := c.comparison(x)
			if err != nil {
				return err
			}
			conds = append(conds, cond)
			return nil
		}
		return unsupported("WHERE %s (WHERE is an AND of comparisons column op value, op one of = != < <= > >=)", sqlparser.String(e))
	}
	return conds, walk(w.Expr)
}

var ops = map[string]Op{
	sqlparser.EqualStr: OpEq, sqlparser.NotEqualStr: OpNe,
	sqlparser.LessThanStr: OpLt, sqlparser.LessEqualStr: OpLe,
	sqlparser.GreaterThanStr: OpGt, sqlparser.GreaterEqualStr: OpGe,
}

// flipped is the operator with its operands swapped: 5 < x is x > 5.
var flipped = map[Op]Op{OpEq: OpEq, OpNe: OpNe, OpLt: OpGt, OpLe: OpGe, OpGt: OpLt, OpGe: OpLe}

func (c *converter) comparison(x *sqlparser.ComparisonExpr) (Cond, error) {
	op, ok := ops[x.Operator]
	if !ok || x.Escape != nil {
		return Cond{}, unsupported("operator %s (operators: = != < <= > >=)", strings.ToUpper(x.Operator))
	}
	left, right := x.Left, x.Right
	col, isCol := left.(*sqlparser.ColName)
	if !isCol {
		if col, isCol = right.(*sqlparser.ColName); !isCol {
			return Cond{}, unsupported("comparison %s (compare a column with a value)", sqlparser.String(x))
		}
		right, op = left, flipped[op]
	}
	if !col.Qualifier.IsEmpty() {
		return Cond{}, unsupported("qualified column %s", sqlparser.String(col))
	}
	v, err := c.expr(right)
	if err != nil {
		return Cond{}, err
	}
	return Cond{Column: col.Name.String(), Op: op, Value: v}, nil
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

// expr converts a value expression: a literal or a placeholder.
func (c *converter) expr(e sqlparser.Expr) (Value, error) {
	if v, ok, err := c.now(e); ok || err != nil {
		return v, err
	}
	switch x := e.(type) {
	case *sqlparser.SQLVal:
		return c.value(x)
	case *sqlparser.NullVal:
		return Value{Kind: ValueNull}, nil
	case sqlparser.BoolVal:
		return Value{Kind: ValueBool, Bool: bool(x)}, nil
	case *sqlparser.UnaryExpr:
		if x.Operator == sqlparser.UMinusStr {
			if v, ok := x.Expr.(*sqlparser.SQLVal); ok && (v.Type == sqlparser.IntVal || v.Type == sqlparser.FloatVal) {
				neg := *v
				neg.Val = append([]byte{'-'}, v.Val...)
				return c.value(&neg)
			}
		}
	case *sqlparser.ParenExpr:
		return c.expr(x.Expr)
	}
	return Value{}, unsupported("expression %s (values are literals or placeholders); a time may also be NOW() [+|- INTERVAL n SECOND|MINUTE|HOUR]", sqlparser.String(e))
}

func (c *converter) value(v *sqlparser.SQLVal) (Value, error) {
	s := string(v.Val)
	switch v.Type {
	case sqlparser.StrVal:
		return Value{Kind: ValueString, Str: s}, nil
	case sqlparser.IntVal:
		n, err := strconv.ParseInt(s, 0, 64)
		if err != nil {
			return Value{}, unsupported("integer %s (integers are 64-bit)", s)
		}
		return Value{Kind: ValueInt, Int: n}, nil
	case sqlparser.FloatVal:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return Value{}, unsupported("number %s", s)
		}
		return Value{Kind: ValueFloat, Float: f}, nil
	case sqlparser.HexVal:
		b, err := v.HexDecode()
		if err != nil {
			return Value{}, unsupported("hex literal %s", s)
		}
		return Value{Kind: ValueBytes, Str: string(b)}, nil
	case sqlparser.HexNum:
		n, err := strconv.ParseUint(s[2:], 16, 64)
		if err != nil {
			return Value{}, unsupported("hex number %s", s)
		}
		return Value{Kind: ValueInt, Int: int64(n)}, nil
	case sqlparser.ValArg:
		if !strings.HasPrefix(s, ":") {
			// sqlparser spells CURRENT_TIMESTAMP (and DEFAULT NULL) this way.
			return Value{}, unsupported("%s (values are literals or placeholders)", strings.ToUpper(s))
		}
		name := strings.TrimPrefix(s, ":")
		if c.pp.positional > 0 {
			n, err := strconv.Atoi(strings.TrimPrefix(name, "v"))
			if err != nil {
				return Value{}, unsupported("placeholder %s", s)
			}
			return Value{Kind: ValueArg, Ordinal: n}, nil
		}
		c.addName(name)
		return Value{Kind: ValueArg, Name: name}, nil
	}
	return Value{}, unsupported("literal %s", s)
}
