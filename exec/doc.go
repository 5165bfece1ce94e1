// Package exec runs fdbqueue's SQL statements, each (or each sql.Tx's
// statements together) as one kv transaction over the queue recipes.
//
// # Catalog
//
// Table schemas live in the key space, so every client of a database sees
// the same tables. Every key is the root followed by a packed tuple (see
// keys.go):
//
//	root ("catalog", name)              -> schema (a packed tuple; name lower-cased)
//	root ("next_table_id")              -> the last table id handed out (little-endian int64)
//	root ("t", table id, ...)           -> the table's queue (see package queues)
//	root ("ddl", token)                 -> "": a CREATE or DROP TABLE was applied (see ddlDone)
//	root ("ddl-expiry", expiry, token)  -> "": when that token may go (unix nanoseconds)
//
// Every statement reads its table's catalog key inside its own
// transaction, so a concurrent DROP TABLE conflicts with it instead of
// racing it. Each CREATE TABLE takes a fresh table id, so a table dropped and
// created again never sees the old rows.
//
// # Rows
//
// A row is stored as the queue item's value: a packed tuple of every
// declared column, in order. A column named priority makes the table a
// priority queue; INDEX (cols) names the resource columns of the fit index.
// The implicit id column is the item's id.
//
// # Files
//
//	executor.go  Executor, Auto (autocommit with retries and spread pops) and Exec
//	ddl.go       CREATE and DROP TABLE, and their retry tokens
//	insert.go    INSERT
//	plan.go      WHERE binding, the choice of access path, finding rows
//	read.go      SELECT and row decoding
//	write.go     DELETE and UPDATE
//	catalog.go   table schemas and their cache
//	keys.go      every key exec builds under the root
//	convert.go   value conversion, encoding and comparison
//	errors.go    the errors exec returns
package exec
