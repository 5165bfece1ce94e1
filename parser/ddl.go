package parser

// CREATE TABLE and DROP TABLE: tables, columns, types and the fit index
// (unique keys are in unique.go).

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/xwb1989/sqlparser"
)

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
		return nil, unsupported("table options %q (%s)", strings.TrimSpace(ts.Options), optionsHint)
	}
	ct.MaxAttempts, ct.Backoff = c.pp.maxAttempts, c.pp.backoff
	for _, cd := range ts.Columns {
		col, isUnique, err := c.column(cd)
		if err != nil {
			return nil, err
		}
		ct.Columns = append(ct.Columns, col)
		if isUnique {
			ct.Unique = append(ct.Unique, UniqueKey{Columns: []string{col.Name}})
		}
	}
	fit, keys := 0, 0 // INDEX and UNIQUE keys of the table
	for _, ix := range ts.Indexes {
		switch {
		case ix.Info.Primary:
			return nil, unsupported("PRIMARY KEY (every row has an implicit id, its key; UNIQUE (cols) makes other columns unique)")
		case ix.Info.Unique:
			u, err := c.uniqueKey(ix, keys)
			if err != nil {
				return nil, err
			}
			ct.Unique = append(ct.Unique, u)
			keys++
			continue
		case ix.Info.Spatial || ix.Info.Type == "fulltext":
			return nil, unsupported("%s (the indexes are the fit index, INDEX name (resource columns), and unique keys, UNIQUE [name] (cols))", strings.ToUpper(ix.Info.Type))
		}
		if fit++; fit > 1 {
			return nil, unsupported("more than one INDEX (a table has one fit index over its resource columns)")
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

// column converts a column definition, and reports whether it declares
// the column UNIQUE [KEY] (a unique key over it alone).
func (c *converter) column(cd *sqlparser.ColumnDefinition) (col Column, unique bool, err error) {
	name := cd.Name.String()
	col = Column{Name: name, NotNull: bool(cd.Type.NotNull)}
	ct := &cd.Type
	ty := strings.ToLower(ct.Type)
	var ok bool
	switch col.Type, ok = columnTypes[ty]; {
	case ty == "bit" && c.pp.boolCols[strings.ToLower(name)]:
		col.Type = TypeBool // BOOLEAN, which the prepass spelt BIT
	case !ok && typeInstead[ty] != "":
		return col, false, unsupported("type %s of column %s (%s; %s)", strings.ToUpper(ty), name, typeInstead[ty], typeList)
	case !ok:
		return col, false, unsupported("type %s of column %s (%s)", strings.ToUpper(ty), name, typeList)
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
				return col, false, unsupported("%s of column %s (the length is 1 or more %s)", decl, name, map[string]string{"varchar": "characters", "varbinary": "bytes"}[ty])
			}
			col.Length = n
		case col.Type == TypeInt:
			return col, false, unsupported("display width %s of column %s (integers are 64-bit; write %s)", decl, name, strings.ToUpper(ty))
		case col.Type == TypeFloat:
			return col, false, unsupported("precision %s of column %s (values are 64-bit doubles, not rounded; write DOUBLE)", decl, name)
		case col.Type == TypeTimestamp:
			return col, false, unsupported("precision %s of column %s (timestamps keep nanoseconds; write %s)", decl, name, strings.ToUpper(ty))
		}
	}
	// Column options that fdbqueue would not enforce are refused by name.
	// UNIQUE [KEY] is a unique key over the column.
	var opt, why, keyOpt string
	if ct.KeyOpt != 0 {
		// sqlparser's key options are unexported; its formatter names them.
		buf := sqlparser.NewTrackedBuffer(nil)
		(&sqlparser.ColumnType{KeyOpt: ct.KeyOpt}).Format(buf)
		keyOpt = strings.ToUpper(strings.TrimSpace(buf.String()))
		unique = strings.HasPrefix(keyOpt, "UNIQUE")
	}
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
	case keyOpt != "" && !unique:
		opt, why = keyOpt, "every row has an implicit id, its key; UNIQUE makes a column unique"
	case ct.Comment != nil:
		opt, why = "COMMENT", "comments are not stored"
	}
	if opt != "" {
		return col, false, unsupported("%s on column %s (%s)", opt, name, why)
	}
	if d := ct.Default; d != nil {
		var v Value
		switch {
		case d.Type == sqlparser.ValArg && strings.EqualFold(string(d.Val), "null"):
			v = Value{Kind: ValueNull} // sqlparser spells DEFAULT NULL as an argument
		case d.Type == sqlparser.ValArg:
			return col, false, unsupported("DEFAULT %s of column %s (a DEFAULT is a literal; pass the time as an argument)", strings.ToUpper(string(d.Val)), name)
		default:
			var err error
			if v, err = c.value(d); err != nil {
				return col, false, err
			}
		}
		col.Default = &v
	}
	return col, unique, nil
}
