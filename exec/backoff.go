package exec

import (
	"fmt"
	"strings"
	"time"

	"github.com/fdbqueue/fdbqueue/parser"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// BACKOFF=EXPONENTIAL(first, max) | CONSTANT(delay): how long a row waits
// after an attempt that failed.
//
// The delay after the n-th attempt (the row's _attempts once leased n
// times) is first·2^(n-1), at most max, or the constant delay; less a
// jitter of up to a quarter of it, d - d/4·j with j in [0, 1) a hash of the
// row's id and n. Rows that failed together come back spread over a
// quarter of their delay, never later than the delay said; and every
// computation of one attempt's delay gives the same time, in any process,
// in a retried statement and in tests, with no random source to seed.
//
// A failed attempt is one of two:
//
//   - A lease that ends with neither an ack nor a release (the worker
//     died, or hung): FOR LEASE d hides the row until now + d + the
//     delay of its new _attempts, computed when the lease is taken, so
//     nothing needs to notice the lease ending. The row's _visible_at says
//     so: it is when the row comes back.
//   - A release without a time: UPDATE t SET _visible_at = NULL WHERE id
//     = v [AND _lease = v] makes the row visible at now + the delay of
//     its _attempts.
//
// A time written explicitly (UPDATE t SET _visible_at = v) is the time the
// row becomes visible, exactly, with no backoff: the release of a worker
// that chose its own retry time, and a heartbeat, whose row, if its
// worker then dies, comes back at the heartbeat's end. A row leased
// MAX_ATTEMPTS times has no backoff: its next lease moves it to the
// dead-letter table, which it should reach without waiting.

// backoffDelay returns how long the row with id waits after its
// attempts-th attempt failed: 0 without BACKOFF, and from MAX_ATTEMPTS
// attempts on.
func (t *Table) backoffDelay(id, attempts int64) time.Duration {
	b := t.Backoff
	if b == nil || attempts <= 0 || t.MaxAttempts > 0 && attempts >= t.MaxAttempts {
		return 0
	}
	d := b.First
	if b.Exponential {
		// At most about 31 doublings: from 1 ms to 30 days.
		for n := int64(1); n < attempts && d < b.Max; n++ {
			d *= 2
		}
		d = min(d, b.Max)
	}
	return d - time.Duration(float64(d/4)*jitter(id, attempts))
}

// jitter returns a number in [0, 1) that is a hash of a row's id and
// attempt (splitmix64's finaliser of each).
func jitter(id, attempts int64) float64 {
	return float64(mix64(uint64(id)^mix64(uint64(attempts)))>>11) / (1 << 53)
}

func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// Options returns the table's options as CREATE TABLE takes them, in the
// order it prints them: MAX_ATTEMPTS=5 BACKOFF=EXPONENTIAL(1 SECOND, 1
// HOUR), or "" for a table with none.
func (t *Table) Options() string {
	var opts []string
	if t.MaxAttempts > 0 {
		opts = append(opts, fmt.Sprintf("MAX_ATTEMPTS=%d", t.MaxAttempts))
	}
	if t.Backoff != nil {
		opts = append(opts, "BACKOFF="+t.Backoff.String())
	}
	return strings.Join(opts, " ")
}

// encodeBackoff is the schema's element for a BACKOFF: (exponential, first
// and max in nanoseconds).
func encodeBackoff(b *parser.Backoff) tuple.Tuple {
	return tuple.Tuple{b.Exponential, int64(b.First), int64(b.Max)}
}

// decodeBackoff decodes the schema's element for a BACKOFF.
func decodeBackoff(el any) (*parser.Backoff, error) {
	t, ok := el.(tuple.Tuple)
	if !ok || len(t) != 3 {
		return nil, fmt.Errorf("%w: unreadable BACKOFF", ErrCatalog)
	}
	exp, ok1 := t[0].(bool)
	first, ok2 := t[1].(int64)
	most, ok3 := t[2].(int64)
	b := &parser.Backoff{Exponential: exp, First: time.Duration(first), Max: time.Duration(most)}
	if !ok1 || !ok2 || !ok3 || b.Check() != nil {
		return nil, fmt.Errorf("%w: unreadable BACKOFF %v", ErrCatalog, t)
	}
	return b, nil
}
