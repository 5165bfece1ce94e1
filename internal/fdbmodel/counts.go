package fdbmodel

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Counts is what transactions cost on the modeled cluster: their
// sequential waits, the requests they sent, and the time they waited.
type Counts struct {
	// Attempts is how many transaction attempts ran: a retry after
	// OnError is one more, and starts with nothing known.
	Attempts int
	// GRV, Reads and Commits are the sequential waits, by kind: for the
	// read version, for reads (point reads, GetMany rounds, range
	// batches), and for commits. Requests in flight together are one
	// wait.
	GRV, Reads, Commits int
	// Gets and Batches count the point reads and the range batches sent
	// to the cluster; GetManys the GetMany calls that sent any, and
	// GetManyKeys the keys they sent.
	Gets, GetManys, GetManyKeys, Batches int
	// Cached counts the reads that the client's read-your-writes cache
	// answered without a request: keys of Gets and GetManys, and range
	// batches.
	Cached int
	// Hidden counts the requests whose answer was already in when the
	// caller waited for it: their round trip overlapped another wait.
	Hidden int
	// Modeled is the time the attempts waited, on the modeled cluster.
	Modeled time.Duration
}

// Waits returns the sequential waits: a statement's latency on a cluster
// is about this many round trips.
func (c Counts) Waits() int { return c.GRV + c.Reads + c.Commits }

// Add adds o's counts to c's.
func (c *Counts) Add(o Counts) {
	c.Attempts += o.Attempts
	c.GRV += o.GRV
	c.Reads += o.Reads
	c.Commits += o.Commits
	c.Gets += o.Gets
	c.GetManys += o.GetManys
	c.GetManyKeys += o.GetManyKeys
	c.Batches += o.Batches
	c.Cached += o.Cached
	c.Hidden += o.Hidden
	c.Modeled += o.Modeled
}

// Sub returns c's counts less o's: what was counted between two readings
// of a running total.
func (c Counts) Sub(o Counts) Counts {
	return Counts{
		Attempts: c.Attempts - o.Attempts,
		GRV:      c.GRV - o.GRV, Reads: c.Reads - o.Reads, Commits: c.Commits - o.Commits,
		Gets: c.Gets - o.Gets, GetManys: c.GetManys - o.GetManys, GetManyKeys: c.GetManyKeys - o.GetManyKeys,
		Batches: c.Batches - o.Batches, Cached: c.Cached - o.Cached, Hidden: c.Hidden - o.Hidden,
		Modeled: c.Modeled - o.Modeled,
	}
}

// String renders the waits, as "grv=1 reads=5 commit=1 (7)".
func (c Counts) String() string {
	return fmt.Sprintf("grv=%d reads=%d commit=%d (%d)", c.GRV, c.Reads, c.Commits, c.Waits())
}

// Requests renders the requests, as "gets=1 getmanys=1/3 batches=4
// cached=2 hidden=0": GetMany calls, then the keys they sent.
func (c Counts) Requests() string {
	return fmt.Sprintf("gets=%d getmanys=%d/%d batches=%d cached=%d hidden=%d",
		c.Gets, c.GetManys, c.GetManyKeys, c.Batches, c.Cached, c.Hidden)
}

// A Collector sums the counts of the transactions whose context carries it
// (WithCollector): give each statement, or each run, its own. Safe for
// concurrent use.
type Collector struct {
	mu     sync.Mutex // guards counts
	counts Counts
}

// Counts returns the sum of the attempts that ended so far.
func (c *Collector) Counts() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts
}

func (c *Collector) add(o Counts) {
	c.mu.Lock()
	c.counts.Add(o)
	c.mu.Unlock()
}

type collectorKey struct{}

// WithCollector returns a context whose transactions report to c: every
// attempt of a transaction created with it, when the attempt ends (its
// commit, OnError, or Cancel).
func WithCollector(ctx context.Context, c *Collector) context.Context {
	return context.WithValue(ctx, collectorKey{}, c)
}

func collectorOf(ctx context.Context) *Collector {
	c, _ := ctx.Value(collectorKey{}).(*Collector)
	return c
}
