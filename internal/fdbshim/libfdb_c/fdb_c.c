/*
 * libfdb_c for tests: FoundationDB's C API (API version 730) implemented by
 * fdbqueue's Go test package internal/fdbshim over the embedded engine, so
 * that the official Go bindings run end to end inside a test binary.
 *
 * This library is a TEST DOUBLE of the FoundationDB client library, NOT a
 * FoundationDB cluster: no server, no network, one process. See
 * docs/foundationdb.md ("Testing without a cluster") for what it does and
 * where it knowingly differs from a real cluster.
 *
 * It holds what needs no Go: API version selection, error texts and
 * predicates, the network thread's lifecycle. Everything else forwards
 * through the table the Go package registers at init (fdbshim_register);
 * the Go side's functions take void* handles and non-const pointers, hence
 * the casts. Built by build.sh; never part of a non-test build.
 */
#define FDB_API_VERSION 730
#include <foundationdb/fdb_c.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "../fdbshim.h"

#define EXPORT __attribute__((visibility("default")))

static const fdbshim_table* T;
static int api_version;

EXPORT int fdbshim_register(const fdbshim_table* t) {
	if (t->abi != FDBSHIM_ABI) {
		fprintf(stderr, "fdbshim: the Go side speaks table version %d, this libfdb_c %d: rebuild it (build.sh)\n",
		        t->abi, FDBSHIM_ABI);
		return 0;
	}
	T = t;
	return FDBSHIM_ABI;
}

/* Reached only if a program calls into the library without the Go side:
   every path starts with fdb_select_api_version_impl, which refuses. */
static void need_go(void) {
	if (!T) {
		fprintf(stderr, "fdbshim: this libfdb_c is fdbqueue's test double; its Go side (internal/fdbshim) is not "
		                "linked into this program\n");
		abort();
	}
}

/* ---- API version ---- */

EXPORT fdb_error_t fdb_select_api_version_impl(int runtime_version, int header_version) {
	if (!T) {
		fprintf(stderr, "fdbshim: this libfdb_c is fdbqueue's test double; import "
		                "github.com/fdbqueue/fdbqueue/internal/fdbshim in the test binary\n");
		return 2204; /* api_function_missing */
	}
	if (api_version != 0)
		return 2201; /* api_version_already_set */
	if (runtime_version > header_version)
		return 2202; /* api_version_invalid */
	if (header_version > 730 || runtime_version < 13)
		return 2203; /* api_version_not_supported */
	api_version = runtime_version;
	return 0;
}

EXPORT int fdb_get_max_api_version(void) {
	return 730;
}

/* ---- Errors: the real client's codes and texts (error_definitions.h). ---- */

static const struct {
	int code;
	const char* text;
} errors[] = {
	{ 0, "Success" },
	{ 1000, "Operation failed" },
	{ 1004, "Operation timed out" },
	{ 1007, "Transaction is too old to perform reads or be committed" },
	{ 1009, "Request for future version" },
	{ 1020, "Transaction not committed due to conflict with another transaction" },
	{ 1021, "Transaction may or may not have committed" },
	{ 1025, "Operation aborted because the transaction was cancelled" },
	{ 1029, "Watch cancelled because storage server watch limit exceeded" },
	{ 1031, "Operation aborted because the transaction timed out" },
	{ 1032, "Too many watches currently set" },
	{ 1034, "Watches cannot be set if read your writes is disabled" },
	{ 1036, "Read or wrote an unreadable key" },
	{ 1037, "Storage process does not have recent mutations" },
	{ 1038, "Database is locked" },
	{ 1039, "The protocol version of the cluster has changed" },
	{ 1042, "CommitProxy commit memory limit exceeded" },
	{ 1051, "Batch GRV request rate limit exceeded" },
	{ 1078, "GetReadVersion proxy memory limit exceeded" },
	{ 1079, "BlobGranule request failed" },
	{ 1101, "Asynchronous operation cancelled" },
	{ 1102, "Future has been released" },
	{ 1213, "Transaction tag is being throttled" },
	{ 1223, "Exceeded maximum proxy tag throttling duration" },
	{ 1510, "Disk i/o operation failed" },
	{ 1513, "File could not be read" },
	{ 1515, "No cluster file found in current directory or default location" },
	{ 2000, "Invalid API call" },
	{ 2004, "Key outside legal range" },
	{ 2005, "Range begin key larger than end key" },
	{ 2006, "Option set with an invalid value" },
	{ 2007, "Option not valid in this context" },
	{ 2008, "Action not possible before the network is configured" },
	{ 2009, "Network can be configured only once" },
	{ 2010, "Transaction already has a read version set" },
	{ 2011, "Version not valid" },
	{ 2012, "Range limits not valid" },
	{ 2013, "Database name must be 'DB'" },
	{ 2015, "Future not ready" },
	{ 2016, "Future not an error" },
	{ 2017, "Operation issued while a commit was outstanding" },
	{ 2018, "Unrecognized atomic mutation type" },
	{ 2020, "Transaction does not have a valid commit version" },
	{ 2021, "Transaction is read-only and therefore does not have a commit version" },
	{ 2023, "Attempted to commit a transaction specified as read-only" },
	{ 2025, "Network can only be started once" },
	{ 2026, "Detected a deadlock in a callback called from the network thread" },
	{ 2101, "Transaction exceeds byte limit" },
	{ 2102, "Key length exceeds limit" },
	{ 2103, "Value length exceeds limit" },
	{ 2104, "Connection string invalid" },
	{ 2108, "Operation is not supported" },
	{ 2130, "Tenant name must be specified to access data in the cluster" },
	{ 2131, "Tenant does not exist" },
	{ 2134, "Tenant name cannot begin with \\xff" },
	{ 2136, "Tenants have been disabled in the cluster" },
	{ 2200, "API version is not set" },
	{ 2201, "API version may be set only once" },
	{ 2202, "API version not valid" },
	{ 2203, "API version not supported" },
	{ 2204, "Failed to load a required FDB API function." },
	{ 2210, "EXACT streaming mode requires limits, but none were given" },
	{ 4000, "An unknown error occurred" },
	{ 4100, "An internal error occurred" },
};

EXPORT const char* fdb_get_error(fdb_error_t code) {
	/* As the real client: out-of-range codes become unknown_error, codes it
	   does not define read "UNKNOWN_ERROR" (this table holds the codes an
	   application meets, not the server-internal ones). */
	if (code < 0 || code > 30000)
		code = 4000;
	for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
		if (errors[i].code == code)
			return errors[i].text;
	return "UNKNOWN_ERROR";
}

/* fdb_error_predicate: FDB_ERROR_PREDICATE_RETRYABLE (50000),
   _MAYBE_COMMITTED (50001), _RETRYABLE_NOT_COMMITTED (50002). */
EXPORT fdb_bool_t fdb_error_predicate(int predicate_test, fdb_error_t code) {
	if (predicate_test == 50000)
		return fdb_error_predicate(50001, code) || fdb_error_predicate(50002, code);
	if (predicate_test == 50001)
		return code == 1021 || code == 1039;
	if (predicate_test == 50002)
		return code == 1020 || code == 1007 || code == 1009 || code == 1038 || code == 1078 || code == 1042 ||
		       code == 1051 || code == 1037 || code == 1213 || code == 1223;
	return 0;
}

/* ---- The network thread: nothing to run, only its lifecycle. ---- */

static pthread_mutex_t net_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t net_cond = PTHREAD_COND_INITIALIZER;
static int net_setup, net_running, net_stopped;

EXPORT fdb_error_t fdb_network_set_option(FDBNetworkOption option, uint8_t const* value, int value_length) {
	(void)option, (void)value, (void)value_length;
	return api_version ? 0 : 2200; /* accepted and ignored: TLS, tracing, knobs... */
}

EXPORT fdb_error_t fdb_setup_network(void) {
	pthread_mutex_lock(&net_mu);
	int err = !api_version ? 2200 : net_setup ? 2009 : 0;
	if (!err)
		net_setup = 1;
	pthread_mutex_unlock(&net_mu);
	return err;
}

EXPORT fdb_error_t fdb_run_network(void) {
	pthread_mutex_lock(&net_mu);
	int err = !net_setup ? 2008 : (net_running || net_stopped) ? 2025 : 0;
	if (!err) {
		net_running = 1;
		while (!net_stopped)
			pthread_cond_wait(&net_cond, &net_mu);
		net_running = 0;
	}
	pthread_mutex_unlock(&net_mu);
	return err;
}

EXPORT fdb_error_t fdb_stop_network(void) {
	pthread_mutex_lock(&net_mu);
	int err = !net_setup ? 2008 : 0;
	if (!err) {
		net_stopped = 1;
		pthread_cond_broadcast(&net_cond);
	}
	pthread_mutex_unlock(&net_mu);
	return err;
}

static int network_ready(void) {
	pthread_mutex_lock(&net_mu);
	int ok = net_setup && !net_stopped;
	pthread_mutex_unlock(&net_mu);
	return ok;
}

/* ---- Futures ---- */

EXPORT void fdb_future_cancel(FDBFuture* f) {
	need_go();
	T->future_cancel(f);
}
EXPORT void fdb_future_release_memory(FDBFuture* f) {
	need_go();
	T->future_release_memory(f);
}
EXPORT void fdb_future_destroy(FDBFuture* f) {
	need_go();
	T->future_destroy(f);
}
EXPORT fdb_error_t fdb_future_block_until_ready(FDBFuture* f) {
	need_go();
	return T->future_block_until_ready(f);
}
EXPORT fdb_bool_t fdb_future_is_ready(FDBFuture* f) {
	need_go();
	return T->future_is_ready(f);
}
EXPORT fdb_error_t fdb_future_set_callback(FDBFuture* f, FDBCallback callback, void* callback_parameter) {
	need_go();
	return T->future_set_callback(f, (void (*)(void*, void*))callback, callback_parameter);
}
EXPORT fdb_error_t fdb_future_get_error(FDBFuture* f) {
	need_go();
	return T->future_get_error(f);
}
EXPORT fdb_error_t fdb_future_get_int64(FDBFuture* f, int64_t* out) {
	need_go();
	return T->future_get_int64(f, out);
}
EXPORT fdb_error_t fdb_future_get_key(FDBFuture* f, uint8_t const** out_key, int* out_key_length) {
	need_go();
	return T->future_get_key(f, out_key, out_key_length);
}
EXPORT fdb_error_t fdb_future_get_value(FDBFuture* f, fdb_bool_t* out_present, uint8_t const** out_value,
                                        int* out_value_length) {
	need_go();
	return T->future_get_value(f, out_present, out_value, out_value_length);
}
EXPORT fdb_error_t fdb_future_get_keyvalue_array(FDBFuture* f, FDBKeyValue const** out_kv, int* out_count,
                                                 fdb_bool_t* out_more) {
	need_go();
	return T->future_get_keyvalue_array(f, (const void**)out_kv, out_count, out_more);
}
EXPORT fdb_error_t fdb_future_get_key_array(FDBFuture* f, FDBKey const** out_key_array, int* out_count) {
	need_go();
	return T->future_get_key_array(f, (const void**)out_key_array, out_count);
}
EXPORT fdb_error_t fdb_future_get_string_array(FDBFuture* f, const char*** out_strings, int* out_count) {
	need_go();
	return T->future_get_string_array(f, out_strings, out_count);
}

/* ---- Databases and tenants ---- */

EXPORT fdb_error_t fdb_create_database(const char* cluster_file_path, FDBDatabase** out_database) {
	need_go();
	if (!network_ready())
		return 2008; /* network_not_setup */
	return T->create_database((char*)cluster_file_path, (void**)out_database);
}
EXPORT fdb_error_t fdb_create_database_from_connection_string(const char* connection_string,
                                                              FDBDatabase** out_database) {
	need_go();
	if (!network_ready())
		return 2008;
	return T->create_database_from_connection_string((char*)connection_string, (void**)out_database);
}
EXPORT void fdb_database_destroy(FDBDatabase* d) {
	need_go();
	T->database_destroy(d);
}
EXPORT fdb_error_t fdb_database_set_option(FDBDatabase* d, FDBDatabaseOption option, uint8_t const* value,
                                           int value_length) {
	need_go();
	return T->database_set_option(d, option, (uint8_t*)value, value_length);
}
EXPORT fdb_error_t fdb_database_open_tenant(FDBDatabase* d, uint8_t const* tenant_name, int tenant_name_length,
                                            FDBTenant** out_tenant) {
	need_go();
	return T->database_open_tenant(d, (uint8_t*)tenant_name, tenant_name_length, (void**)out_tenant);
}
EXPORT fdb_error_t fdb_database_create_transaction(FDBDatabase* d, FDBTransaction** out_transaction) {
	need_go();
	return T->database_create_transaction(d, (void**)out_transaction);
}
EXPORT FDBFuture* fdb_database_reboot_worker(FDBDatabase* db, uint8_t const* address, int address_length,
                                             fdb_bool_t check, int duration) {
	need_go();
	return T->database_reboot_worker(db, (uint8_t*)address, address_length, check, duration);
}
EXPORT FDBFuture* fdb_database_get_client_status(FDBDatabase* db) {
	need_go();
	return T->database_get_client_status(db);
}
EXPORT fdb_error_t fdb_tenant_create_transaction(FDBTenant* tenant, FDBTransaction** out_transaction) {
	need_go();
	return T->tenant_create_transaction(tenant, (void**)out_transaction);
}
EXPORT void fdb_tenant_destroy(FDBTenant* tenant) {
	need_go();
	T->tenant_destroy(tenant);
}

/* ---- Transactions ---- */

EXPORT void fdb_transaction_destroy(FDBTransaction* tr) {
	need_go();
	T->transaction_destroy(tr);
}
EXPORT void fdb_transaction_cancel(FDBTransaction* tr) {
	need_go();
	T->transaction_cancel(tr);
}
EXPORT fdb_error_t fdb_transaction_set_option(FDBTransaction* tr, FDBTransactionOption option, uint8_t const* value,
                                              int value_length) {
	need_go();
	return T->transaction_set_option(tr, option, (uint8_t*)value, value_length);
}
EXPORT void fdb_transaction_set_read_version(FDBTransaction* tr, int64_t version) {
	need_go();
	T->transaction_set_read_version(tr, version);
}
EXPORT FDBFuture* fdb_transaction_get_read_version(FDBTransaction* tr) {
	need_go();
	return T->transaction_get_read_version(tr);
}
EXPORT FDBFuture* fdb_transaction_get(FDBTransaction* tr, uint8_t const* key_name, int key_name_length,
                                      fdb_bool_t snapshot) {
	need_go();
	return T->transaction_get(tr, (uint8_t*)key_name, key_name_length, snapshot);
}
EXPORT FDBFuture* fdb_transaction_get_key(FDBTransaction* tr, uint8_t const* key_name, int key_name_length,
                                          fdb_bool_t or_equal, int offset, fdb_bool_t snapshot) {
	need_go();
	return T->transaction_get_key(tr, (uint8_t*)key_name, key_name_length, or_equal, offset, snapshot);
}
EXPORT FDBFuture* fdb_transaction_get_addresses_for_key(FDBTransaction* tr, uint8_t const* key_name,
                                                        int key_name_length) {
	need_go();
	return T->transaction_get_addresses_for_key(tr, (uint8_t*)key_name, key_name_length);
}
EXPORT FDBFuture* fdb_transaction_get_range(FDBTransaction* tr, uint8_t const* begin_key_name,
                                            int begin_key_name_length, fdb_bool_t begin_or_equal, int begin_offset,
                                            uint8_t const* end_key_name, int end_key_name_length,
                                            fdb_bool_t end_or_equal, int end_offset, int limit, int target_bytes,
                                            FDBStreamingMode mode, int iteration, fdb_bool_t snapshot,
                                            fdb_bool_t reverse) {
	need_go();
	return T->transaction_get_range(tr, (uint8_t*)begin_key_name, begin_key_name_length, begin_or_equal,
	                                begin_offset, (uint8_t*)end_key_name, end_key_name_length, end_or_equal,
	                                end_offset, limit, target_bytes, mode, iteration, snapshot, reverse);
}
EXPORT void fdb_transaction_set(FDBTransaction* tr, uint8_t const* key_name, int key_name_length,
                                uint8_t const* value, int value_length) {
	need_go();
	T->transaction_set(tr, (uint8_t*)key_name, key_name_length, (uint8_t*)value, value_length);
}
EXPORT void fdb_transaction_atomic_op(FDBTransaction* tr, uint8_t const* key_name, int key_name_length,
                                      uint8_t const* param, int param_length, FDBMutationType operation_type) {
	need_go();
	T->transaction_atomic_op(tr, (uint8_t*)key_name, key_name_length, (uint8_t*)param, param_length,
	                         operation_type);
}
EXPORT void fdb_transaction_clear(FDBTransaction* tr, uint8_t const* key_name, int key_name_length) {
	need_go();
	T->transaction_clear(tr, (uint8_t*)key_name, key_name_length);
}
EXPORT void fdb_transaction_clear_range(FDBTransaction* tr, uint8_t const* begin_key_name, int begin_key_name_length,
                                        uint8_t const* end_key_name, int end_key_name_length) {
	need_go();
	T->transaction_clear_range(tr, (uint8_t*)begin_key_name, begin_key_name_length, (uint8_t*)end_key_name,
	                           end_key_name_length);
}
EXPORT FDBFuture* fdb_transaction_watch(FDBTransaction* tr, uint8_t const* key_name, int key_name_length) {
	need_go();
	return T->transaction_watch(tr, (uint8_t*)key_name, key_name_length);
}
EXPORT FDBFuture* fdb_transaction_commit(FDBTransaction* tr) {
	need_go();
	return T->transaction_commit(tr);
}
EXPORT fdb_error_t fdb_transaction_get_committed_version(FDBTransaction* tr, int64_t* out_version) {
	need_go();
	return T->transaction_get_committed_version(tr, out_version);
}
EXPORT FDBFuture* fdb_transaction_get_approximate_size(FDBTransaction* tr) {
	need_go();
	return T->transaction_get_approximate_size(tr);
}
EXPORT FDBFuture* fdb_transaction_get_versionstamp(FDBTransaction* tr) {
	need_go();
	return T->transaction_get_versionstamp(tr);
}
EXPORT FDBFuture* fdb_transaction_on_error(FDBTransaction* tr, fdb_error_t error) {
	need_go();
	return T->transaction_on_error(tr, error);
}
EXPORT void fdb_transaction_reset(FDBTransaction* tr) {
	need_go();
	T->transaction_reset(tr);
}
EXPORT fdb_error_t fdb_transaction_add_conflict_range(FDBTransaction* tr, uint8_t const* begin_key_name,
                                                      int begin_key_name_length, uint8_t const* end_key_name,
                                                      int end_key_name_length, FDBConflictRangeType type) {
	need_go();
	return T->transaction_add_conflict_range(tr, (uint8_t*)begin_key_name, begin_key_name_length,
	                                         (uint8_t*)end_key_name, end_key_name_length, type);
}
EXPORT FDBFuture* fdb_transaction_get_estimated_range_size_bytes(FDBTransaction* tr, uint8_t const* begin_key_name,
                                                                 int begin_key_name_length,
                                                                 uint8_t const* end_key_name,
                                                                 int end_key_name_length) {
	need_go();
	return T->transaction_get_estimated_range_size_bytes(tr, (uint8_t*)begin_key_name, begin_key_name_length,
	                                                     (uint8_t*)end_key_name, end_key_name_length);
}
EXPORT FDBFuture* fdb_transaction_get_range_split_points(FDBTransaction* tr, uint8_t const* begin_key_name,
                                                         int begin_key_name_length, uint8_t const* end_key_name,
                                                         int end_key_name_length, int64_t chunk_size) {
	need_go();
	return T->transaction_get_range_split_points(tr, (uint8_t*)begin_key_name, begin_key_name_length,
	                                             (uint8_t*)end_key_name, end_key_name_length, chunk_size);
}
