// Package parser turns fdbqueue's SQL dialect into small statement types.
//
// This package is an internal building block of fdbqueue (for packages
// exec and driver), exported rather than kept under internal/. It is not
// supported API for Go programs: it has no compatibility promise yet and
// may change in any release. Programs use package driver through
// database/sql.
//
// It is the only package that imports github.com/xwb1989/sqlparser, whose
// lexer and grammar are MySQL's. Parse takes one statement's text through
// four steps (parse.go):
//
//  1. The lexer: sqlparser's tokenizer over the text, which also refuses
//     names no table or column may have (not UTF-8, blank, longer than
//     MaxNameSize) and says to quote a name outside ASCII in backticks.
//  2. The pre-pass, over those tokens: it counts the placeholders (? or
//     :name, not both), takes off the trailing FOR POP [WAIT n] and FOR
//     LEASE d [WAIT n] clauses and CREATE TABLE's IF NOT EXISTS, table
//     options (MAX_ATTEMPTS=n, BACKOFF=...) and unique keys' windows (FOR
//     n unit), keeping their values, and respells what sqlparser does not
//     accept: BOOL and BOOLEAN column types, negative and boolean
//     DEFAULTs, and an INDEX or UNIQUE key without a name.
//  3. sqlparser.ParseStrictDDL over the rewritten text (which, unlike
//     Parse, fails on partial DDL and never logs). A syntax error at one of
//     MySQL's reserved words says to quote it in backticks.
//  4. The conversion of sqlparser's tree into the types in ast.go, with
//     what the pre-pass kept. Each part outside the dialect is refused by
//     name, with what to write instead.
//
// Errors wrap ErrSyntax (text not understood), ErrUnsupported (SQL outside
// the dialect) or ErrValue (a value out of its range). Parsed statements
// are cached by their text (see Parse). The dialect's accepted and refused
// statements are in testdata, each with the statement it parses to or its
// exact error (datadriven_test.go).
//
// # Files
//
//	doc.go       this overview
//	ast.go       the statement types: Statement, Value, Cond, the pseudo-columns
//	parse.go     parse: the steps above, and the checks on a SELECT's trailing clause
//	cache.go     Parse: the cache of parsed statements, keyed by the text without
//	             the comments around it
//	errors.go    ErrSyntax, ErrUnsupported, ErrValue, syntax errors explained, and
//	             the limits on a statement's text and names
//	lex.go       the text as sqlparser's tokens
//	prepass.go   the pre-pass: placeholders, trailing clauses, CREATE TABLE's spellings
//	options.go   CREATE TABLE's table options, MAX_ATTEMPTS=n and BACKOFF=..., read by the
//	             pre-pass
//	wait.go      FOR POP WAIT n, and the longest wait
//	lease.go     FOR LEASE d [WAIT n], and the longest lease
//	convert.go   the conversion: which statements are in the dialect, table names
//	ddl.go       CREATE TABLE and DROP TABLE: columns, types, the fit index
//	unique.go    unique keys: UNIQUE [KEY|INDEX] [name] (cols) [FOR n unit], a column's
//	             UNIQUE [KEY]
//	dml.go       INSERT [IGNORE], SELECT, DELETE and UPDATE, with ORDER BY and LIMIT
//	redrive.go   INSERT ... SELECT ... LIMIT n [FOR POP]: rows copied or moved between tables
//	schedule.go  CREATE SCHEDULE, DROP SCHEDULE, SHOW SCHEDULES, read before sqlparser
//	expr.go      WHERE comparisons, literals, placeholders, NOW() and INTERVAL
package parser
