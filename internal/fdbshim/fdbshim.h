/*
 * The table through which the test libfdb_c (libfdb_c/fdb_c.c) reaches the
 * Go package that implements it (package fdbshim). The library exports the
 * fdb_* functions of FoundationDB's C API; each forwards to this table, which
 * the Go package registers at init (fdbshim_register). The types are those of
 * the functions cgo exports (non-const pointers, void* handles), not those of
 * fdb_c.h: the library casts.
 *
 * A test double of the FoundationDB client library, not a cluster. Never
 * used outside tests.
 */
#ifndef FDBSHIM_H
#define FDBSHIM_H

#include <stdint.h>

/* Bumped whenever the table changes: the library refuses another. */
#define FDBSHIM_ABI 1

typedef struct fdbshim_table {
	int abi;

	/* Futures (futures.c). */
	void (*future_cancel)(void* f);
	void (*future_release_memory)(void* f);
	void (*future_destroy)(void* f);
	int (*future_block_until_ready)(void* f);
	int (*future_is_ready)(void* f);
	int (*future_set_callback)(void* f, void (*cb)(void*, void*), void* arg);
	int (*future_get_error)(void* f);
	int (*future_get_int64)(void* f, int64_t* out);
	int (*future_get_key)(void* f, const uint8_t** out, int* len);
	int (*future_get_value)(void* f, int* present, const uint8_t** out, int* len);
	int (*future_get_keyvalue_array)(void* f, const void** out, int* count, int* more);
	int (*future_get_key_array)(void* f, const void** out, int* count);
	int (*future_get_string_array)(void* f, const char*** out, int* count);

	/* Databases and tenants (Go). */
	int (*create_database)(char* cluster_file, void** out);
	int (*create_database_from_connection_string)(char* conn, void** out);
	void (*database_destroy)(void* d);
	int (*database_set_option)(void* d, int option, uint8_t* value, int len);
	int (*database_open_tenant)(void* d, uint8_t* name, int len, void** out);
	int (*database_create_transaction)(void* d, void** out);
	void* (*database_reboot_worker)(void* d, uint8_t* addr, int len, int check, int duration);
	void* (*database_get_client_status)(void* d);
	int (*tenant_create_transaction)(void* t, void** out);
	void (*tenant_destroy)(void* t);

	/* Transactions (Go). */
	void (*transaction_destroy)(void* tr);
	void (*transaction_cancel)(void* tr);
	int (*transaction_set_option)(void* tr, int option, uint8_t* value, int len);
	void (*transaction_set_read_version)(void* tr, int64_t version);
	void* (*transaction_get_read_version)(void* tr);
	void* (*transaction_get)(void* tr, uint8_t* key, int len, int snapshot);
	void* (*transaction_get_key)(void* tr, uint8_t* key, int len, int or_equal, int offset, int snapshot);
	void* (*transaction_get_addresses_for_key)(void* tr, uint8_t* key, int len);
	void* (*transaction_get_range)(void* tr, uint8_t* bkey, int blen, int bor_equal, int boffset, uint8_t* ekey,
	                               int elen, int eor_equal, int eoffset, int limit, int target_bytes, int mode,
	                               int iteration, int snapshot, int reverse);
	void (*transaction_set)(void* tr, uint8_t* key, int klen, uint8_t* value, int vlen);
	void (*transaction_atomic_op)(void* tr, uint8_t* key, int klen, uint8_t* param, int plen, int op);
	void (*transaction_clear)(void* tr, uint8_t* key, int len);
	void (*transaction_clear_range)(void* tr, uint8_t* bkey, int blen, uint8_t* ekey, int elen);
	void* (*transaction_watch)(void* tr, uint8_t* key, int len);
	void* (*transaction_commit)(void* tr);
	int (*transaction_get_committed_version)(void* tr, int64_t* out);
	void* (*transaction_get_approximate_size)(void* tr);
	void* (*transaction_get_versionstamp)(void* tr);
	void* (*transaction_on_error)(void* tr, int code);
	void (*transaction_reset)(void* tr);
	int (*transaction_add_conflict_range)(void* tr, uint8_t* bkey, int blen, uint8_t* ekey, int elen, int type);
	void* (*transaction_get_estimated_range_size_bytes)(void* tr, uint8_t* bkey, int blen, uint8_t* ekey, int elen);
	void* (*transaction_get_range_split_points)(void* tr, uint8_t* bkey, int blen, uint8_t* ekey, int elen,
	                                            int64_t chunk);
} fdbshim_table;

/* Exported by the library: installs the table; returns FDBSHIM_ABI. */
int fdbshim_register(const fdbshim_table* t);

#endif
