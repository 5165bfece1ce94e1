//go:build fdb

/* The table the test libfdb_c forwards to: the futures of futures.c and the
   functions this package exports (export.go). */

#define _GNU_SOURCE
#include <dlfcn.h>

#include "_cgo_export.h"
#include "fdbshim.h"
#include "futures.h"

static const fdbshim_table table = {
	.abi = FDBSHIM_ABI,

	.future_cancel = shim_future_cancel,
	.future_release_memory = shim_future_release_memory,
	.future_destroy = shim_future_destroy,
	.future_block_until_ready = shim_future_block_until_ready,
	.future_is_ready = shim_future_is_ready,
	.future_set_callback = shim_future_set_callback,
	.future_get_error = shim_future_get_error,
	.future_get_int64 = shim_future_get_int64,
	.future_get_key = shim_future_get_key,
	.future_get_value = shim_future_get_value,
	.future_get_keyvalue_array = shim_future_get_keyvalue_array,
	.future_get_key_array = shim_future_get_key_array,
	.future_get_string_array = shim_future_get_string_array,

	.create_database = shimCreateDatabase,
	.create_database_from_connection_string = shimCreateDatabaseFromConnectionString,
	.database_destroy = shimDatabaseDestroy,
	.database_set_option = shimDatabaseSetOption,
	.database_open_tenant = shimDatabaseOpenTenant,
	.database_create_transaction = shimDatabaseCreateTransaction,
	.database_reboot_worker = shimDatabaseRebootWorker,
	.database_get_client_status = shimDatabaseGetClientStatus,
	.tenant_create_transaction = shimTenantCreateTransaction,
	.tenant_destroy = shimTenantDestroy,

	.transaction_destroy = shimTransactionDestroy,
	.transaction_cancel = shimTransactionCancel,
	.transaction_set_option = shimTransactionSetOption,
	.transaction_set_read_version = shimTransactionSetReadVersion,
	.transaction_get_read_version = shimTransactionGetReadVersion,
	.transaction_get = shimTransactionGet,
	.transaction_get_key = shimTransactionGetKey,
	.transaction_get_addresses_for_key = shimTransactionGetAddressesForKey,
	.transaction_get_range = shimTransactionGetRange,
	.transaction_set = shimTransactionSet,
	.transaction_atomic_op = shimTransactionAtomicOp,
	.transaction_clear = shimTransactionClear,
	.transaction_clear_range = shimTransactionClearRange,
	.transaction_watch = shimTransactionWatch,
	.transaction_commit = shimTransactionCommit,
	.transaction_get_committed_version = shimTransactionGetCommittedVersion,
	.transaction_get_approximate_size = shimTransactionGetApproximateSize,
	.transaction_get_versionstamp = shimTransactionGetVersionstamp,
	.transaction_on_error = shimTransactionOnError,
	.transaction_reset = shimTransactionReset,
	.transaction_add_conflict_range = shimTransactionAddConflictRange,
	.transaction_get_estimated_range_size_bytes = shimTransactionGetEstimatedRangeSizeBytes,
	.transaction_get_range_split_points = shimTransactionGetRangeSplitPoints,
};

int shim_register(void) {
	int (*reg)(const fdbshim_table*) = (int (*)(const fdbshim_table*))dlsym(RTLD_DEFAULT, "fdbshim_register");
	if (!reg)
		return 0; /* the real client library: this package stays idle */
	return reg(&table) == FDBSHIM_ABI;
}
