//go:build fdb

package fdbshim

/*
#include <stdlib.h>
#include "futures.h"
*/
import "C"

import (
	"os"
	"runtime"
	"time"
	"unsafe"

	"github.com/fdbqueue/fdbqueue/internal/fdbmodel"
)

// Sequential waits, counted through the real bindings. Every attempt of a
// transaction keeps a logical clock (clock.c) by internal/fdbmodel's rules
// (its package comment gives them, with their sources in the client): the
// first request asks for the read version, a read is answered a read
// latency after it, a read the read-your-writes cache can answer (keys the
// attempt read, wrote or cleared, and the spans of its range batches) asks
// nothing, the metadata version comes with the read version, and a commit
// waits for the reads in flight, then goes to the cluster only if the
// attempt wrote. The test double answers at once; a wait is counted where
// the client blocks on a future (the bindings' is_ready, then a callback;
// or block_until_ready) whose answer is not in yet by that clock, so
// requests issued together are one wait, exactly as the model counts them,
// but of the requests the bindings really send. With Latencies.Sleep, each
// wait is also slept.

// Latencies are the modeled durations of the waits the test double counts
// (internal/fdbmodel's): their order decides what overlaps.
type Latencies struct {
	GRV, Read, Commit time.Duration
	// Sleep sleeps each wait, so that a run takes a cluster's time.
	Sleep bool
}

// latenciesFromEnv returns cfg's latencies, FDBSHIM_GRV_LATENCY,
// FDBSHIM_READ_LATENCY and FDBSHIM_COMMIT_LATENCY (durations, as 400us)
// where it has none, and the model's defaults for the rest; any variable
// set turns the sleeps on.
func latenciesFromEnv(l Latencies) Latencies {
	def := fdbmodel.DefaultLatencies
	for _, v := range []struct {
		env string
		d   *time.Duration
		def time.Duration
	}{{"FDBSHIM_GRV_LATENCY", &l.GRV, def.GRV}, {"FDBSHIM_READ_LATENCY", &l.Read, def.Read}, {"FDBSHIM_COMMIT_LATENCY", &l.Commit, def.Commit}} {
		if *v.d > 0 {
			continue
		}
		if d, err := time.ParseDuration(os.Getenv(v.env)); err == nil && d > 0 {
			*v.d, l.Sleep = d, true
			continue
		}
		*v.d = v.def
	}
	return l
}

// Waits returns what the transactions on the cluster waited so far, in
// fdbmodel's Counts: attempts, the sequential waits by kind, the read
// requests (as Gets; range batches and point reads alike), the requests
// whose answer was in when waited for (Hidden), and the modeled time.
// Statements run one after another each cost the difference.
func (c *Cluster) Waits() fdbmodel.Counts {
	var s C.shim_counts
	C.shim_counts_load(c.waits.c, &s)
	return fdbmodel.Counts{
		Attempts: int(s.attempts), GRV: int(s.grv), Reads: int(s.reads), Commits: int(s.commits),
		Gets: int(s.requests), Hidden: int(s.hidden), Modeled: time.Duration(s.modeled_ns),
	}
}

// waitCounts are a cluster's counters, in C (clocks add to them), and its
// latencies. They live as long as the process: a clock may outlive its
// cluster.
type waitCounts struct {
	c   *C.shim_counts
	lat Latencies
}

func newWaitCounts(lat Latencies) *waitCounts {
	return &waitCounts{c: (*C.shim_counts)(C.calloc(1, C.size_t(unsafe.Sizeof(C.shim_counts{})))), lat: lat}
}

// clock is an attempt's logical clock, and what its read-your-writes cache
// knows (used only by the executor's goroutine, as the requests it times).
type clock struct {
	c     *C.shim_clock
	known fdbmodel.Known
	fills []fill
}

// fill is a span the cache will know once the request reading it is in.
type fill struct {
	b, e  []byte
	ready int64
}

// newClock returns a clock for an attempt on cl; nil for an unreachable
// cluster. The attempt's reference goes when the clock is unreachable (the
// executor may still time an attempt's requests after its end); its
// futures hold their own.
func newClock(cl *Cluster) *clock {
	if cl == nil {
		return nil
	}
	l := cl.waits.lat
	sleep := C.int(0)
	if l.Sleep {
		sleep = 1
	}
	k := &clock{c: C.shim_clock_new(cl.waits.c, C.int64_t(l.GRV), C.int64_t(l.Read), C.int64_t(l.Commit), sleep)}
	runtime.SetFinalizer(k, func(k *clock) { C.shim_clock_unref(k.c) })
	return k
}

// now is the attempt's clock: a request's issue time.
func (k *clock) now() int64 {
	if k == nil {
		return 0
	}
	return int64(C.shim_clock_now(k.c))
}

// read times f, a read of [b, e) issued at issued: a request unless the
// cache knows the span, which it knows once the request is in.
func (k *clock) read(f *future, issued int64, b, e []byte) {
	if k == nil {
		return
	}
	k.settle(issued)
	if k.known.Covers(b, e) {
		return // answered by the client: no request, no wait
	}
	ready := int64(C.shim_clock_request(k.c, C.int64_t(issued), C.SHIM_WAIT_READ))
	k.fills = append(k.fills, fill{b: b, e: e, ready: ready})
	C.shim_future_time(f.c, k.c, C.int64_t(ready), C.SHIM_WAIT_READ, 0)
}

// readVersion times f, answered with the read version (the metadata
// version comes with it).
func (k *clock) readVersion(f *future, issued int64) {
	if k == nil {
		return
	}
	ready := C.shim_clock_request(k.c, C.int64_t(issued), C.SHIM_WAIT_GRV)
	C.shim_future_time(f.c, k.c, ready, C.SHIM_WAIT_GRV, 0)
}

// commit times f, the commit's: it goes to the cluster if wrote.
func (k *clock) commit(f *future, wrote bool) {
	if k == nil {
		return
	}
	w := C.int(0)
	if wrote {
		w = 1
	}
	C.shim_future_time(f.c, k.c, 0, C.SHIM_WAIT_COMMIT, w)
}

// wrote makes [b, e) known: the attempt wrote or cleared it.
func (k *clock) wrote(b, e []byte) {
	if k != nil {
		k.known.Add(b, e)
	}
}

// settle moves the spans of the requests in by now into the cache.
func (k *clock) settle(now int64) {
	kept := k.fills[:0]
	for _, f := range k.fills {
		if f.ready <= now {
			k.known.Add(f.b, f.e)
		} else {
			kept = append(kept, f)
		}
	}
	k.fills = kept
}
