package exec

import (
	"bytes"
	"strings"

	"github.com/fdbqueue/fdbqueue/tuple"
)

// The first element of every key exec builds under the root: the package
// doc lists the layout. Tags are never renamed (stored data would be
// lost), and a table id is never reused, so a table dropped and created
// again never sees the old rows.
const (
	tagCatalog      = "catalog"
	tagNextTableID  = "next_table_id"
	tagNextRowID    = "next_row_id"
	tagTable        = "t"
	tagDDL          = "ddl"        // earlier versions' DDL receipts, cleared by the new
	tagDDLExpiry    = "ddl-expiry" // the same, by expiry
	tagDDLReceipts  = "ddl-receipts"
	tagSchedule     = "schedule"      // a schedule's definition (schedule.go)
	tagScheduleNext = "schedule-next" // a schedule's next run
)

// rootKey returns root followed by the packed elems (strings and int64s,
// which always pack).
func rootKey(root []byte, elems ...any) []byte {
	k, _ := tuple.Tuple(elems).AppendPack(bytes.Clone(root))
	return k
}

// catalogKey is the key of a table's schema. Names are matched without
// regard to case.
func catalogKey(root []byte, name string) []byte {
	return rootKey(root, tagCatalog, strings.ToLower(name))
}

// catalogPrefix is the prefix of every schema.
func catalogPrefix(root []byte) []byte { return rootKey(root, tagCatalog) }

// nextRowIDKey holds the first row id no handle has reserved
// (queues.IDs).
func nextRowIDKey(root []byte) []byte { return rootKey(root, tagNextRowID) }

// nextTableIDKey holds the last table id handed out.
func nextTableIDKey(root []byte) []byte { return rootKey(root, tagNextTableID) }

// tableKey is the prefix of a table's queue.
func tableKey(root []byte, id int64) []byte { return rootKey(root, tagTable, id) }
