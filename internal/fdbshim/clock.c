//go:build fdb

/* Sequential waits: each attempt of a transaction keeps a logical clock, as
   internal/fdbmodel's attempt does (its package comment has the rules and
   their sources in the real client), and a wait is counted only where the
   client blocks on a future whose answer is not in yet by that clock:
   requests issued together are one wait. The test double answers every
   request at once; the clock says when a cluster would have, and, when
   asked to (FDBSHIM_*_LATENCY, Config.Latencies), the waits are slept. */

#include "futures.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

struct shim_clock {
	pthread_mutex_t mu; /* guards every field below */
	int refs;
	shim_counts* total;
	int64_t lat_grv, lat_read, lat_commit;
	int sleep;
	int used;
	int64_t now;
	int grv_asked;
	int64_t grv_ready;
	int64_t in_flight; /* when the last read issued is answered */
};

shim_clock* shim_clock_new(shim_counts* total, int64_t lat_grv, int64_t lat_read, int64_t lat_commit, int sleep) {
	shim_clock* c = calloc(1, sizeof(*c));
	if (!c)
		abort();
	pthread_mutex_init(&c->mu, NULL);
	c->refs = 1;
	c->total = total;
	c->lat_grv = lat_grv;
	c->lat_read = lat_read;
	c->lat_commit = lat_commit;
	c->sleep = sleep;
	return c;
}

static void ref(shim_clock* c) {
	pthread_mutex_lock(&c->mu);
	c->refs++;
	pthread_mutex_unlock(&c->mu);
}

void shim_clock_unref(shim_clock* c) {
	pthread_mutex_lock(&c->mu);
	int last = --c->refs == 0;
	pthread_mutex_unlock(&c->mu);
	if (last) {
		pthread_mutex_destroy(&c->mu);
		free(c);
	}
}

static void add(int64_t* counter, int64_t n) {
	__atomic_add_fetch(counter, n, __ATOMIC_RELAXED);
}

/* use_locked counts the attempt, once, when it first asks the cluster. */
static void use_locked(shim_clock* c) {
	if (!c->used) {
		c->used = 1;
		add(&c->total->attempts, 1);
	}
}

int64_t shim_clock_now(shim_clock* c) {
	pthread_mutex_lock(&c->mu);
	int64_t now = c->now;
	pthread_mutex_unlock(&c->mu);
	return now;
}

static void ask_grv_locked(shim_clock* c, int64_t at) {
	if (!c->grv_asked) {
		c->grv_asked = 1;
		c->grv_ready = at + c->lat_grv;
	}
}

int64_t shim_clock_request(shim_clock* c, int64_t issued, int kind) {
	pthread_mutex_lock(&c->mu);
	use_locked(c);
	ask_grv_locked(c, issued);
	int64_t ready = c->grv_ready;
	if (kind == SHIM_WAIT_READ) {
		ready = (issued > c->grv_ready ? issued : c->grv_ready) + c->lat_read;
		if (ready > c->in_flight)
			c->in_flight = ready;
		add(&c->total->requests, 1);
	}
	pthread_mutex_unlock(&c->mu);
	return ready;
}

/* advance_locked is one wait, of kind, until the clock reads to. */
static void advance_locked(shim_clock* c, int64_t to, int kind) {
	switch (kind) {
	case SHIM_WAIT_GRV:
		add(&c->total->grv, 1);
		break;
	case SHIM_WAIT_READ:
		add(&c->total->reads, 1);
		break;
	case SHIM_WAIT_COMMIT:
		add(&c->total->commits, 1);
		break;
	}
	c->now = to;
}

/* await_locked blocks until ready: for the read version first if it is
   not in yet, then for the rest. It reports whether the answer was in. */
static int await_locked(shim_clock* c, int64_t ready, int kind) {
	if (ready <= c->now)
		return 1;
	if (c->grv_asked && c->grv_ready > c->now)
		advance_locked(c, c->grv_ready, SHIM_WAIT_GRV);
	if (ready > c->now)
		advance_locked(c, ready, kind);
	return 0;
}

static void sleep_ns(int64_t ns) {
	struct timespec ts = {.tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000};
	while (nanosleep(&ts, &ts) != 0) {
	}
}

/* clock_wait is the client blocking on a future answered at ready. */
static void clock_wait(shim_clock* c, int64_t ready, int kind, int wrote) {
	pthread_mutex_lock(&c->mu);
	int64_t start = c->now;
	if (kind == SHIM_WAIT_COMMIT) {
		/* The commit waits for every read in flight; a read-only one
		   asks the cluster nothing. */
		await_locked(c, c->in_flight, SHIM_WAIT_READ);
		if (wrote) {
			use_locked(c);
			ask_grv_locked(c, c->now);
			await_locked(c, c->grv_ready, SHIM_WAIT_GRV);
			advance_locked(c, c->now + c->lat_commit, SHIM_WAIT_COMMIT);
		}
	} else if (await_locked(c, ready, kind) && kind == SHIM_WAIT_READ) {
		add(&c->total->hidden, 1);
	}
	int64_t waited = c->now - start;
	int sleep = c->sleep;
	pthread_mutex_unlock(&c->mu);
	add(&c->total->modeled_ns, waited);
	if (sleep && waited > 0)
		sleep_ns(waited);
}

/* The future's side, in futures.c. */
void shim_future_account(shim_future* f);

void shim_clock_ref(shim_clock* c) {
	ref(c);
}

void shim_clock_wait(shim_clock* c, int64_t ready, int kind, int wrote) {
	clock_wait(c, ready, kind, wrote);
}

int shim_clock_answered(shim_clock* c, int64_t ready, int kind, int wrote) {
	pthread_mutex_lock(&c->mu);
	int in = kind == SHIM_WAIT_COMMIT ? c->in_flight <= c->now && !wrote : ready <= c->now;
	pthread_mutex_unlock(&c->mu);
	return in;
}

void shim_counts_load(shim_counts* total, shim_counts* out) {
	out->attempts = __atomic_load_n(&total->attempts, __ATOMIC_RELAXED);
	out->grv = __atomic_load_n(&total->grv, __ATOMIC_RELAXED);
	out->reads = __atomic_load_n(&total->reads, __ATOMIC_RELAXED);
	out->commits = __atomic_load_n(&total->commits, __ATOMIC_RELAXED);
	out->requests = __atomic_load_n(&total->requests, __ATOMIC_RELAXED);
	out->hidden = __atomic_load_n(&total->hidden, __ATOMIC_RELAXED);
	out->modeled_ns = __atomic_load_n(&total->modeled_ns, __ATOMIC_RELAXED);
}
