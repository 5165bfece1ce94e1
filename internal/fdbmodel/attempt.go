package fdbmodel

import "time"

// attempt is one attempt of a transaction, as the client sees it: a
// logical clock, the read version, the requests in flight, the
// read-your-writes cache, and what its waits cost. OnError starts a new one
// from nothing, as FoundationDB's reset does.
//
// The clock is the time the caller has spent blocked so far. A request is
// issued at the current time and its answer is ready some latency later; a
// wait happens only when the caller blocks on an answer not yet ready, and
// moves the clock to it. So requests issued together are one wait, and a
// request issued early is free by the time the caller needs it if other
// waits covered its round trip.
type attempt struct {
	db *DB
	// now is the attempt's logical clock.
	now time.Duration
	// grv is the read version: asked for by the first request, ready a
	// GRV latency later.
	grvAsked bool
	grvReady time.Duration
	// inFlight is when the last request issued is answered: FoundationDB's
	// commit waits for every read still in flight (RYW commit waits for
	// its reading futures).
	inFlight time.Duration
	// known is the read-your-writes cache; fills are the spans of requests
	// in flight, known once answered (settle).
	known known
	fills []fill
	// wrote is set by a mutation or a write conflict: only then does the
	// commit go to the cluster.
	wrote bool
	// bumped is set once the attempt bumped the metadata version, which it
	// may then not read (metadata.go).
	bumped bool
	// used is set by any operation: an attempt that did nothing is not
	// reported.
	used bool
	c    Counts
	// pin, if set, is called when the read version arrives: the engine
	// below takes its own then (timed runs).
	pin func()
}

// fill is a span the cache will know once the request reading it is
// answered.
type fill struct {
	span
	ready time.Duration
}

// waitKind is what a wait is for.
type waitKind int

const (
	waitGRV waitKind = iota
	waitRead
	waitCommit
)

func newAttempt(db *DB) *attempt {
	return &attempt{db: db}
}

// askGRV asks for the read version, if no request did yet.
func (a *attempt) askGRV() {
	if !a.grvAsked {
		a.grvAsked = true
		a.grvReady = a.now + a.db.lat.GRV
	}
}

// issue sends a read request now and returns when it is answered: a read
// latency after the read version, which the attempt's first request asks
// for.
func (a *attempt) issue() time.Duration {
	a.askGRV()
	ready := max(a.now, a.grvReady) + a.db.lat.Read
	a.inFlight = max(a.inFlight, ready)
	return ready
}

// await blocks the caller until ready: first for the read version if it is
// not in yet (a GRV wait), then for the rest (a wait of kind). It reports
// whether the answer was already in.
func (a *attempt) await(ready time.Duration, kind waitKind) bool {
	if ready <= a.now {
		return true
	}
	if a.grvAsked && a.grvReady > a.now {
		a.advance(a.grvReady, waitGRV)
	}
	if ready > a.now {
		a.advance(ready, kind)
	}
	return false
}

// advance is one wait, of kind, until the clock reads to.
func (a *attempt) advance(to time.Duration, kind waitKind) {
	switch kind {
	case waitGRV:
		a.c.GRV++
	case waitRead:
		a.c.Reads++
	case waitCommit:
		a.c.Commits++
	}
	a.db.sleep(to - a.now)
	a.now = to
	if kind == waitGRV && a.pin != nil {
		a.pin()
	}
}

// fetch accounts for a read of the span [b, e) made now: unless the cache
// knows the span, it is a request (sent), and the span is known once it is
// answered. It returns when the answer is ready: now if the cache answers.
func (a *attempt) fetch(b, e string) (ready time.Duration, sent bool) {
	a.used = true
	a.settle()
	if a.known.covers(b, e) {
		a.c.Cached++
		return a.now, false
	}
	ready = a.issue()
	a.fills = append(a.fills, fill{span{b, e}, ready})
	return ready, true
}

// settle moves the spans of the requests answered by now into the cache.
func (a *attempt) settle() {
	kept := a.fills[:0]
	for _, f := range a.fills {
		if f.ready <= a.now {
			a.known.add(f.b, f.e)
		} else {
			kept = append(kept, f)
		}
	}
	a.fills = kept
}

// wait blocks the caller on a read answered at ready, counting a request
// that overlapped earlier waits as hidden.
func (a *attempt) wait(ready time.Duration, sent bool) {
	if a.await(ready, waitRead) && sent {
		a.c.Hidden++
	}
}

// write records a mutation; the keys of [b, e), if any, become known.
func (a *attempt) write(b, e string) {
	a.used, a.wrote = true, true
	a.known.add(b, e)
}

// beforeCommit waits for the reads in flight, and for a read version if
// the attempt writes without having read (FoundationDB asks for one at
// commit). It reports whether the commit goes to the cluster: a read-only
// commit returns at once.
func (a *attempt) beforeCommit() bool {
	a.used = true
	a.await(a.inFlight, waitRead)
	if !a.wrote {
		return false
	}
	a.askGRV()
	a.await(a.grvReady, waitGRV)
	return true
}

// commit is the commit's wait, with send, the engine's commit, half-way
// through it: its conflict check at the proxy and resolvers, before the
// rest of the round trip.
func (a *attempt) commit(send func() error) error {
	lat := a.db.lat.Commit
	a.c.Commits++
	a.db.sleep(lat / 2)
	err := send()
	a.db.sleep(lat - lat/2)
	a.now += lat
	return err
}

// ended returns the attempt's counts, as one attempt.
func (a *attempt) ended() Counts {
	c := a.c
	c.Attempts = 1
	c.Modeled = a.now
	return c
}
