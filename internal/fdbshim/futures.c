//go:build fdb

#include "futures.h"

#include <pthread.h>
#include <stdlib.h>

#define ERR_OPERATION_CANCELLED 1101
#define ERR_FUTURE_RELEASED 1102
#define ERR_CLIENT_INVALID_OPERATION 2000
#define ERR_FUTURE_NOT_SET 2015

typedef struct {
	void (*fn)(void*, void*);
	void* arg;
} shim_cb;

struct shim_future {
	pthread_mutex_t mu; /* guards every field below */
	pthread_cond_t cond;
	int refs;
	int kind;
	int ready, err, released;
	int64_t i64;
	int present;
	void* data;
	int len, count, more;
	shim_cb* cbs;
	int ncbs, capcbs;
	/* Timed (shim_future_time): answered at ready_at by clock, a wait of
	   wkind; accounted once the client blocked on it. */
	shim_clock* clock;
	int64_t ready_at;
	int wkind, wrote, accounted;
};

shim_future* shim_future_new(int kind) {
	shim_future* f = calloc(1, sizeof(*f));
	if (!f)
		abort();
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cond, NULL);
	f->refs = 2;
	f->kind = kind;
	return f;
}

static void unref_locked_and_unlock(shim_future* f) {
	int last = --f->refs == 0;
	pthread_mutex_unlock(&f->mu);
	if (last) {
		if (f->clock)
			shim_clock_unref(f->clock);
		free(f->data);
		free(f->cbs);
		pthread_cond_destroy(&f->cond);
		pthread_mutex_destroy(&f->mu);
		free(f);
	}
}

/* Takes the callbacks of a future that just became ready; the caller fires
   them after unlocking. */
static shim_cb* take_callbacks_locked(shim_future* f, int* n) {
	shim_cb* cbs = f->cbs;
	*n = f->ncbs;
	f->cbs = NULL;
	f->ncbs = f->capcbs = 0;
	return cbs;
}

static void fire(shim_future* f, shim_cb* cbs, int n) {
	for (int i = 0; i < n; i++)
		cbs[i].fn(f, cbs[i].arg);
	free(cbs);
}

void shim_future_time(shim_future* f, shim_clock* c, int64_t ready, int kind, int wrote) {
	shim_clock_ref(c);
	pthread_mutex_lock(&f->mu);
	if (f->clock)
		shim_clock_unref(f->clock);
	f->clock = c;
	f->ready_at = ready;
	f->wkind = kind;
	f->wrote = wrote;
	pthread_mutex_unlock(&f->mu);
}

/* account is the client blocking on f, which is complete: by f's clock, a
   wait unless its answer is in (clock.c). Once. */
static void account(shim_future* f) {
	pthread_mutex_lock(&f->mu);
	shim_clock* c = f->clock;
	if (!c || f->accounted) {
		pthread_mutex_unlock(&f->mu);
		return;
	}
	f->accounted = 1;
	int64_t ready = f->ready_at;
	int kind = f->wkind, wrote = f->wrote;
	pthread_mutex_unlock(&f->mu);
	shim_clock_wait(c, ready, kind, wrote);
}

/* answered reports whether f is ready for a client that does not block:
   complete, and in by its clock. */
static int answered(shim_future* f) {
	pthread_mutex_lock(&f->mu);
	int r = f->ready;
	shim_clock* c = r && !f->accounted ? f->clock : NULL;
	int64_t ready = f->ready_at;
	int kind = f->wkind, wrote = f->wrote;
	pthread_mutex_unlock(&f->mu);
	if (c) {
		r = shim_clock_answered(c, ready, kind, wrote);
		if (r)
			account(f); /* in: the client takes it without blocking */
	}
	return r;
}

int shim_future_complete(shim_future* f, int err, int64_t i64, int present, void* data, int len, int count, int more) {
	pthread_mutex_lock(&f->mu);
	if (f->ready) {
		pthread_mutex_unlock(&f->mu);
		free(data);
		return 0;
	}
	f->ready = 1;
	f->err = err;
	if (!err) {
		f->i64 = i64;
		f->present = present;
		f->data = data;
		f->len = len;
		f->count = count;
		f->more = more;
	} else {
		free(data);
	}
	int n;
	shim_cb* cbs = take_callbacks_locked(f, &n);
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->mu);
	/* The producer's reference keeps f alive while the callbacks run. A
	   callback is the client blocking on f. */
	if (n > 0)
		account(f);
	fire(f, cbs, n);
	return 1;
}

void shim_future_ref(shim_future* f) {
	pthread_mutex_lock(&f->mu);
	f->refs++;
	pthread_mutex_unlock(&f->mu);
}

void shim_future_done(shim_future* f) {
	pthread_mutex_lock(&f->mu);
	unref_locked_and_unlock(f);
}

int shim_future_ready(shim_future* f) {
	pthread_mutex_lock(&f->mu);
	int r = f->ready;
	pthread_mutex_unlock(&f->mu);
	return r;
}

/* Cancels f if it is not ready: it fails with operation_cancelled, as the
   real client's futures do. */
static void cancel(shim_future* f) {
	pthread_mutex_lock(&f->mu);
	if (f->ready) {
		pthread_mutex_unlock(&f->mu);
		return;
	}
	f->ready = 1;
	f->err = ERR_OPERATION_CANCELLED;
	int n;
	shim_cb* cbs = take_callbacks_locked(f, &n);
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->mu);
	fire(f, cbs, n);
}

void shim_future_cancel(void* p) {
	cancel(p);
}

void shim_future_release_memory(void* p) {
	shim_future* f = p;
	pthread_mutex_lock(&f->mu);
	if (f->ready && !f->err) {
		free(f->data);
		f->data = NULL;
		f->released = 1;
	}
	pthread_mutex_unlock(&f->mu);
}

void shim_future_destroy(void* p) {
	shim_future* f = p;
	cancel(f);
	pthread_mutex_lock(&f->mu);
	unref_locked_and_unlock(f);
}

int shim_future_block_until_ready(void* p) {
	shim_future* f = p;
	pthread_mutex_lock(&f->mu);
	while (!f->ready)
		pthread_cond_wait(&f->cond, &f->mu);
	pthread_mutex_unlock(&f->mu);
	account(f);
	return 0;
}

int shim_future_is_ready(void* p) {
	return answered(p);
}

int shim_future_set_callback(void* p, void (*cb)(void*, void*), void* arg) {
	shim_future* f = p;
	pthread_mutex_lock(&f->mu);
	if (f->ready) {
		/* As the real client: a ready future calls back at once, on the
		   calling thread (once its answer is in by its clock). */
		pthread_mutex_unlock(&f->mu);
		account(f);
		cb(f, arg);
		return 0;
	}
	if (f->ncbs == f->capcbs) {
		f->capcbs = f->capcbs ? 2 * f->capcbs : 2;
		f->cbs = realloc(f->cbs, f->capcbs * sizeof(shim_cb));
		if (!f->cbs)
			abort();
	}
	f->cbs[f->ncbs].fn = cb;
	f->cbs[f->ncbs].arg = arg;
	f->ncbs++;
	pthread_mutex_unlock(&f->mu);
	return 0;
}

int shim_future_get_error(void* p) {
	shim_future* f = p;
	pthread_mutex_lock(&f->mu);
	int err = f->ready ? f->err : ERR_FUTURE_NOT_SET;
	pthread_mutex_unlock(&f->mu);
	return err;
}

/* Locks f and returns the error a getter of kind must report, or 0 with f
   still locked. */
static int get_locked(shim_future* f, int kind) {
	pthread_mutex_lock(&f->mu);
	int err = !f->ready ? ERR_FUTURE_NOT_SET
	          : f->err  ? f->err
	          : f->kind != kind ? ERR_CLIENT_INVALID_OPERATION
	          : f->released ? ERR_FUTURE_RELEASED
	                        : 0;
	if (err)
		pthread_mutex_unlock(&f->mu);
	return err;
}

int shim_future_get_int64(void* p, int64_t* out) {
	shim_future* f = p;
	int err = get_locked(f, SHIM_INT64);
	if (err)
		return err;
	*out = f->i64;
	pthread_mutex_unlock(&f->mu);
	return 0;
}

int shim_future_get_key(void* p, const uint8_t** out, int* len) {
	shim_future* f = p;
	int err = get_locked(f, SHIM_KEY);
	if (err)
		return err;
	*out = f->data;
	*len = f->len;
	pthread_mutex_unlock(&f->mu);
	return 0;
}

int shim_future_get_value(void* p, int* present, const uint8_t** out, int* len) {
	shim_future* f = p;
	int err = get_locked(f, SHIM_VALUE);
	if (err)
		return err;
	*present = f->present;
	*out = f->data;
	*len = f->len;
	pthread_mutex_unlock(&f->mu);
	return 0;
}

int shim_future_get_keyvalue_array(void* p, const void** out, int* count, int* more) {
	shim_future* f = p;
	int err = get_locked(f, SHIM_KEYVALUES);
	if (err)
		return err;
	*out = f->data;
	*count = f->count;
	*more = f->more;
	pthread_mutex_unlock(&f->mu);
	return 0;
}

int shim_future_get_key_array(void* p, const void** out, int* count) {
	shim_future* f = p;
	int err = get_locked(f, SHIM_KEYS);
	if (err)
		return err;
	*out = f->data;
	*count = f->count;
	pthread_mutex_unlock(&f->mu);
	return 0;
}

int shim_future_get_string_array(void* p, const char*** out, int* count) {
	shim_future* f = p;
	int err = get_locked(f, SHIM_STRINGS);
	if (err)
		return err;
	*out = f->data;
	*count = f->count;
	pthread_mutex_unlock(&f->mu);
	return 0;
}
