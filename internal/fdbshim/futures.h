/* Futures of the test libfdb_c: plain C, so that the bindings' calls on a
   future (is_ready, get_*, set_callback) never enter Go. The Go side creates
   a future, completes it once from any goroutine, and drops its reference. */
#ifndef FDBSHIM_FUTURES_H
#define FDBSHIM_FUTURES_H

#include <stdint.h>

enum {
	SHIM_VOID = 0,
	SHIM_INT64 = 1,
	SHIM_KEY = 2,
	SHIM_VALUE = 3,
	SHIM_KEYVALUES = 4,
	SHIM_KEYS = 5,
	SHIM_STRINGS = 6,
};

typedef struct shim_future shim_future;

/* A new future, with two references: the client's (dropped by
   fdb_future_destroy) and the producer's (dropped by shim_future_done). */
shim_future* shim_future_new(int kind);
/* Completes f: err, or the result (data is malloc'd; f owns it from now on,
   and frees it at once if f was already complete). Fires the callbacks.
   Returns 1 if this call completed f. */
int shim_future_complete(shim_future* f, int err, int64_t i64, int present, void* data, int len, int count, int more);
/* Takes one more reference, and drops one. */
void shim_future_ref(shim_future* f);
void shim_future_done(shim_future* f);
int shim_future_ready(shim_future* f);

/* The fdb_future_* functions. */
void shim_future_cancel(void* f);
void shim_future_release_memory(void* f);
void shim_future_destroy(void* f);
int shim_future_block_until_ready(void* f);
int shim_future_is_ready(void* f);
int shim_future_set_callback(void* f, void (*cb)(void*, void*), void* arg);
int shim_future_get_error(void* f);
int shim_future_get_int64(void* f, int64_t* out);
int shim_future_get_key(void* f, const uint8_t** out, int* len);
int shim_future_get_value(void* f, int* present, const uint8_t** out, int* len);
int shim_future_get_keyvalue_array(void* f, const void** out, int* count, int* more);
int shim_future_get_key_array(void* f, const void** out, int* count);
int shim_future_get_string_array(void* f, const char*** out, int* count);

/* Registers the table with the library, if the program's libfdb_c is the
   test double (dlsym finds fdbshim_register). Returns 1 if registered. */
int shim_register(void);

#endif
