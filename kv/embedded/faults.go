package embedded

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
)

// Faults makes the engine fail commits the way a FoundationDB cluster does,
// on purpose, so that retry and idempotency paths can be tested without one.
// Each rate is the probability, per read-write commit, of that failure; the
// draws come from a generator seeded with Seed, so a failing run can be
// replayed (exactly, when commits do not race).
type Faults struct {
	Seed uint64
	// Conflict fails the commit with not_committed (1020); nothing is
	// written.
	Conflict float64
	// UnknownApplied commits, then reports commit_unknown_result (1021).
	UnknownApplied float64
	// UnknownNotApplied writes nothing and reports 1021.
	UnknownNotApplied float64
	// TooOld fails the commit with transaction_too_old (1007).
	TooOld float64
	// TimedOut fails the commit with transaction_timed_out (1031).
	TimedOut float64
	// CommitLatency delays every read-write commit before it is resolved,
	// as a cluster's commit round trip does, so contention behaves as it
	// does on one.
	CommitLatency time.Duration
}

type fault int

const (
	faultNone fault = iota
	faultConflict
	faultUnknownApplied
	faultUnknownNotApplied
	faultTooOld
	faultTimedOut
)

// injector draws faults; mu guards rng.
type injector struct {
	f   Faults
	mu  sync.Mutex
	rng *rand.Rand
}

func newInjector(f *Faults) *injector {
	if f == nil {
		return nil
	}
	return &injector{f: *f, rng: rand.New(rand.NewPCG(f.Seed, f.Seed^0x9e3779b97f4a7c15))}
}

func (in *injector) draw() fault {
	in.mu.Lock()
	x := in.rng.Float64()
	in.mu.Unlock()
	for _, c := range []struct {
		p float64
		f fault
	}{
		{in.f.Conflict, faultConflict},
		{in.f.UnknownApplied, faultUnknownApplied},
		{in.f.UnknownNotApplied, faultUnknownNotApplied},
		{in.f.TooOld, faultTooOld},
		{in.f.TimedOut, faultTimedOut},
	} {
		if x < c.p {
			return c.f
		}
		x -= c.p
	}
	return faultNone
}

// before runs ahead of a read-write commit: the latency, then the draw. It
// returns whether to report 1021 after applying, and the error to fail with
// (nil to go on).
func (in *injector) before(ctx context.Context) (bool, error) {
	if d := in.f.CommitLatency; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false, kv.Join(kv.ErrTransactionCancelled, ctx.Err())
		}
	}
	switch in.draw() {
	case faultConflict:
		return false, kv.Errorf(kv.CodeNotCommitted, "injected conflict")
	case faultUnknownNotApplied:
		return false, kv.Errorf(kv.CodeCommitUnknownResult, "injected: not applied")
	case faultTooOld:
		return false, kv.Errorf(kv.CodeTransactionTooOld, "injected")
	case faultTimedOut:
		return false, kv.Errorf(kv.CodeTransactionTimedOut, "injected")
	case faultUnknownApplied:
		return true, nil
	}
	return false, nil
}
