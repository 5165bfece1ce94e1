//go:build fdb

package fdbshim

// #include <stdint.h>
import "C"

import (
	"unsafe"
)

// The C API's functions that need Go, as the test libfdb_c calls them
// (fdbshim.h): handles in, handles and futures out.

func dbOf(p unsafe.Pointer, fn string) *database {
	d, _ := handleValue(p).(*database)
	if d == nil {
		misuse("%s on a database already destroyed", fn)
	}
	return d
}

func txnOf(p unsafe.Pointer, fn string) *txn {
	t, _ := handleValue(p).(*txn)
	if t == nil {
		misuse("%s on a transaction already destroyed", fn)
	}
	return t
}

//export shimCreateDatabase
func shimCreateDatabase(path *C.char, out *unsafe.Pointer) C.int {
	p := ""
	if path != nil {
		p = C.GoString(path)
	}
	cl, code := openClusterFile(p)
	if code != 0 {
		return C.int(code)
	}
	*out = newHandle(newDatabase(cl))
	return 0
}

//export shimCreateDatabaseFromConnectionString
func shimCreateDatabaseFromConnectionString(conn *C.char, out *unsafe.Pointer) C.int {
	if conn == nil {
		return errConnectionStringInvalid
	}
	cl, code := lookupCluster(C.GoString(conn))
	if code != 0 {
		return C.int(code)
	}
	*out = newHandle(newDatabase(cl))
	return 0
}

//export shimDatabaseDestroy
func shimDatabaseDestroy(p unsafe.Pointer) {
	if !tombstone(p) {
		misuse("fdb_database_destroy on a database already destroyed")
	}
}

//export shimDatabaseSetOption
func shimDatabaseSetOption(p unsafe.Pointer, option C.int, value *C.uint8_t, n C.int) C.int {
	return C.int(dbOf(p, "fdb_database_set_option").setOption(int(option), optionValue(value, n)))
}

func optionValue(value *C.uint8_t, n C.int) []byte {
	if value == nil {
		return nil
	}
	return goBytes(value, n)
}

//export shimDatabaseOpenTenant
func shimDatabaseOpenTenant(p unsafe.Pointer, name *C.uint8_t, n C.int, out *unsafe.Pointer) C.int {
	d := dbOf(p, "fdb_database_open_tenant")
	*out = newHandle(&tenant{db: d, name: string(goBytes(name, n))})
	return 0
}

//export shimDatabaseCreateTransaction
func shimDatabaseCreateTransaction(p unsafe.Pointer, out *unsafe.Pointer) C.int {
	d := dbOf(p, "fdb_database_create_transaction")
	*out = newHandle(newTxn(keyspace{db: d}))
	return 0
}

//export shimDatabaseRebootWorker
func shimDatabaseRebootWorker(p unsafe.Pointer, addr *C.uint8_t, n C.int, check C.int, duration C.int) unsafe.Pointer {
	dbOf(p, "fdb_database_reboot_worker")
	return failed(kindInt64, errUnsupportedOperation) // no workers to reboot
}

//export shimDatabaseGetClientStatus
func shimDatabaseGetClientStatus(p unsafe.Pointer) unsafe.Pointer {
	dbOf(p, "fdb_database_get_client_status")
	f := newFuture(kindValue)
	f.bytes(nil, true) // empty: no multi-version client
	f.done()
	return f.ptr()
}

//export shimTenantCreateTransaction
func shimTenantCreateTransaction(p unsafe.Pointer, out *unsafe.Pointer) C.int {
	tn, _ := handleValue(p).(*tenant)
	if tn == nil {
		misuse("fdb_tenant_create_transaction on a tenant already destroyed")
	}
	name := tn.name
	*out = newHandle(newTxn(keyspace{db: tn.db, tenant: &name}))
	return 0
}

//export shimTenantDestroy
func shimTenantDestroy(p unsafe.Pointer) {
	if !tombstone(p) {
		misuse("fdb_tenant_destroy on a tenant already destroyed")
	}
}

//export shimTransactionDestroy
func shimTransactionDestroy(p unsafe.Pointer) {
	txnOf(p, "fdb_transaction_destroy").destroy()
	release(p)
}

//export shimTransactionCancel
func shimTransactionCancel(p unsafe.Pointer) {
	txnOf(p, "fdb_transaction_cancel").cancel()
}

//export shimTransactionSetOption
func shimTransactionSetOption(p unsafe.Pointer, option C.int, value *C.uint8_t, n C.int) C.int {
	return C.int(txnOf(p, "fdb_transaction_set_option").setOption(int(option), optionValue(value, n)))
}

//export shimTransactionSetReadVersion
func shimTransactionSetReadVersion(p unsafe.Pointer, version C.int64_t) {
	// The engine chooses read versions itself.
	txnOf(p, "fdb_transaction_set_read_version").mutate(errUnsupportedOperation, 0, nil)
}

//export shimTransactionGetReadVersion
func shimTransactionGetReadVersion(p unsafe.Pointer) unsafe.Pointer {
	return txnOf(p, "fdb_transaction_get_read_version").getReadVersion()
}

//export shimTransactionGet
func shimTransactionGet(p unsafe.Pointer, key *C.uint8_t, n C.int, snapshot C.int) unsafe.Pointer {
	return txnOf(p, "fdb_transaction_get").get(goBytes(key, n), snapshot != 0)
}

//export shimTransactionGetKey
func shimTransactionGetKey(p unsafe.Pointer, key *C.uint8_t, n C.int, orEqual C.int, offset C.int, snapshot C.int) unsafe.Pointer {
	return txnOf(p, "fdb_transaction_get_key").getKey(goBytes(key, n), orEqual != 0, int(offset), snapshot != 0)
}

//export shimTransactionGetAddressesForKey
func shimTransactionGetAddressesForKey(p unsafe.Pointer, key *C.uint8_t, n C.int) unsafe.Pointer {
	txnOf(p, "fdb_transaction_get_addresses_for_key")
	f := newFuture(kindStrings)
	f.strings([]string{"127.0.0.1:4500"}) // the address the cluster file names
	f.done()
	return f.ptr()
}

//export shimTransactionGetRange
func shimTransactionGetRange(p unsafe.Pointer, bkey *C.uint8_t, blen C.int, bOrEqual C.int, bOffset C.int,
	ekey *C.uint8_t, elen C.int, eOrEqual C.int, eOffset C.int, limit C.int, targetBytes C.int, mode C.int,
	iteration C.int, snapshot C.int, reverse C.int) unsafe.Pointer {
	t := txnOf(p, "fdb_transaction_get_range")
	b, e := goBytes(bkey, blen), goBytes(ekey, elen)
	return t.getRange(newSelector(b, bOrEqual != 0, int(bOffset)), newSelector(e, eOrEqual != 0, int(eOffset)),
		b, e, int(limit), int(targetBytes), int(mode), int(iteration), snapshot != 0, reverse != 0)
}

//export shimTransactionSet
func shimTransactionSet(p unsafe.Pointer, key *C.uint8_t, klen C.int, value *C.uint8_t, vlen C.int) {
	txnOf(p, "fdb_transaction_set").set(goBytes(key, klen), goBytes(value, vlen))
}

//export shimTransactionAtomicOp
func shimTransactionAtomicOp(p unsafe.Pointer, key *C.uint8_t, klen C.int, param *C.uint8_t, plen C.int, op C.int) {
	txnOf(p, "fdb_transaction_atomic_op").atomicOp(goBytes(key, klen), goBytes(param, plen), int(op))
}

//export shimTransactionClear
func shimTransactionClear(p unsafe.Pointer, key *C.uint8_t, n C.int) {
	txnOf(p, "fdb_transaction_clear").clear(goBytes(key, n))
}

//export shimTransactionClearRange
func shimTransactionClearRange(p unsafe.Pointer, bkey *C.uint8_t, blen C.int, ekey *C.uint8_t, elen C.int) {
	txnOf(p, "fdb_transaction_clear_range").clearRange(goBytes(bkey, blen), goBytes(ekey, elen))
}

//export shimTransactionWatch
func shimTransactionWatch(p unsafe.Pointer, key *C.uint8_t, n C.int) unsafe.Pointer {
	return txnOf(p, "fdb_transaction_watch").watch(goBytes(key, n))
}

//export shimTransactionCommit
func shimTransactionCommit(p unsafe.Pointer) unsafe.Pointer {
	return txnOf(p, "fdb_transaction_commit").commit()
}

//export shimTransactionGetCommittedVersion
func shimTransactionGetCommittedVersion(p unsafe.Pointer, out *C.int64_t) C.int {
	txnOf(p, "fdb_transaction_get_committed_version")
	return errUnsupportedOperation // the engine does not tell a commit's version
}

//export shimTransactionGetApproximateSize
func shimTransactionGetApproximateSize(p unsafe.Pointer) unsafe.Pointer {
	return txnOf(p, "fdb_transaction_get_approximate_size").approximateSize()
}

//export shimTransactionGetVersionstamp
func shimTransactionGetVersionstamp(p unsafe.Pointer) unsafe.Pointer {
	txnOf(p, "fdb_transaction_get_versionstamp")
	return failed(kindKey, errUnsupportedOperation) // no commit versions (see ops.go)
}

//export shimTransactionOnError
func shimTransactionOnError(p unsafe.Pointer, code C.int) unsafe.Pointer {
	return txnOf(p, "fdb_transaction_on_error").onError(int(code)).ptr()
}

//export shimTransactionReset
func shimTransactionReset(p unsafe.Pointer) {
	txnOf(p, "fdb_transaction_reset").reset()
}

//export shimTransactionAddConflictRange
func shimTransactionAddConflictRange(p unsafe.Pointer, bkey *C.uint8_t, blen C.int, ekey *C.uint8_t, elen C.int, kind C.int) C.int {
	return C.int(txnOf(p, "fdb_transaction_add_conflict_range").addConflictRange(goBytes(bkey, blen), goBytes(ekey, elen), int(kind)))
}

//export shimTransactionGetEstimatedRangeSizeBytes
func shimTransactionGetEstimatedRangeSizeBytes(p unsafe.Pointer, bkey *C.uint8_t, blen C.int, ekey *C.uint8_t, elen C.int) unsafe.Pointer {
	return txnOf(p, "fdb_transaction_get_estimated_range_size_bytes").estimatedRangeSize(goBytes(bkey, blen), goBytes(ekey, elen))
}

//export shimTransactionGetRangeSplitPoints
func shimTransactionGetRangeSplitPoints(p unsafe.Pointer, bkey *C.uint8_t, blen C.int, ekey *C.uint8_t, elen C.int, chunk C.int64_t) unsafe.Pointer {
	return txnOf(p, "fdb_transaction_get_range_split_points").rangeSplitPoints(goBytes(bkey, blen), goBytes(ekey, elen), int64(chunk))
}
