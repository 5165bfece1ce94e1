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

/* Sequential waits (clock.c): a transaction attempt's logical clock, as
   internal/fdbmodel keeps it, so that the test double counts the round
   trips a client makes one after another through the real bindings. */
enum {
	SHIM_WAIT_GRV = 1,
	SHIM_WAIT_READ = 2,
	SHIM_WAIT_COMMIT = 3,
};

/* What attempts waited, summed (a cluster's): updated atomically. */
typedef struct shim_counts {
	int64_t attempts, grv, reads, commits, requests, hidden, modeled_ns;
} shim_counts;

typedef struct shim_clock shim_clock;

/* A new clock for an attempt, with one reference (the attempt's), adding to
   total; lat_* are the modeled latencies in ns, and sleep says whether each
   wait is slept. */
shim_clock* shim_clock_new(shim_counts* total, int64_t lat_grv, int64_t lat_read, int64_t lat_commit, int sleep);
void shim_clock_unref(shim_clock* c);
/* The attempt's clock now: a request's issue time. */
int64_t shim_clock_now(shim_clock* c);
/* A request issued at issued: a read (SHIM_WAIT_READ, answered a read
   latency after the read version, which the attempt's first request asks
   for) or the read version (SHIM_WAIT_GRV). Returns when it is answered. */
int64_t shim_clock_request(shim_clock* c, int64_t issued, int kind);
/* Times f: answered at ready, a wait of kind when the client blocks on it
   before then; a commit (SHIM_WAIT_COMMIT) first waits for the reads in
   flight, and goes to the cluster only if wrote. */
void shim_future_time(shim_future* f, shim_clock* c, int64_t ready, int kind, int wrote);
/* For futures.c: a reference more; the client blocking on a future
   answered at ready; whether that answer is in by the clock. */
void shim_clock_ref(shim_clock* c);
void shim_clock_wait(shim_clock* c, int64_t ready, int kind, int wrote);
int shim_clock_answered(shim_clock* c, int64_t ready, int kind, int wrote);
/* Snapshots total into out. */
void shim_counts_load(shim_counts* total, shim_counts* out);

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
