package ui

import (
	"context"
	"database/sql"
	"sync"
	"time"

	"github.com/fdbqueue/fdbqueue/metrics"
)

// sampler reads fdbqueue_queues every interval (metrics.Read: one
// statement, O(1) a table) into a ring of the last history samples, for
// the plots. Its goroutine is the sampler's: stop ends it and waits.
type sampler struct {
	db       *sql.DB
	interval time.Duration
	timeout  time.Duration

	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex // guards the fields below
	ring    []sample   // the samples, oldest first from next once full
	next    int        // where the next sample goes
	full    bool       // the ring has wrapped
	lastErr error      // the last read's error, nil after a success
}

// sample is one read of fdbqueue_queues.
type sample struct {
	at     time.Time
	queues map[string]metrics.Queue
}

func startSampler(db *sql.DB, interval time.Duration, history int, timeout time.Duration) *sampler {
	ctx, cancel := context.WithCancel(context.Background())
	s := &sampler{db: db, interval: interval, timeout: timeout, cancel: cancel, done: make(chan struct{}), ring: make([]sample, history)}
	go s.run(ctx)
	return s
}

// run samples, waiting interval between the end of a read and the next
// (a ticker would catch up after a slow read with samples a moment apart,
// and rates over that moment).
func (s *sampler) run(ctx context.Context) {
	defer close(s.done)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.sampleOnce(ctx)
		t.Reset(s.interval)
	}
}

func (s *sampler) sampleOnce(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, s.timeout)
	qs, err := metrics.Read(rctx, s.db)
	cancel()
	if ctx.Err() != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastErr = err
	if err != nil {
		return
	}
	m := make(map[string]metrics.Queue, len(qs))
	for _, q := range qs {
		m[q.Name] = q
	}
	s.ring[s.next] = sample{at: time.Now(), queues: m}
	s.next = (s.next + 1) % len(s.ring)
	s.full = s.full || s.next == 0
}

// stop ends the sampling and waits for its goroutine.
func (s *sampler) stop() {
	s.cancel()
	<-s.done
}

// samples returns the samples, oldest first, and the last read's error.
func (s *sampler) samples() ([]sample, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []sample
	if s.full {
		out = append(out, s.ring[s.next:]...)
	}
	return append(out, s.ring[:s.next]...), s.lastErr
}

// series is the plots' data: per table, its depth (rows), its oldest
// visible row's age, and the rates of rows pushed and done (popped or
// acked) between samples, at times T (unix milliseconds).
type series struct {
	T      []int64                 `json:"t"`
	Tables map[string]*tableSeries `json:"tables"`
}

type tableSeries struct {
	Depth []int64   `json:"depth"`
	AgeS  []int64   `json:"ageS"`
	Dead  []int64   `json:"dead"`
	InPS  []float64 `json:"inPerS"`
	OutPS []float64 `json:"outPerS"`
}

// toSeries turns samples into series. A table missing from a sample (not
// created yet, or dropped) has -1 there; the rates of the first sample,
// and across a gap, are -1 too (the page leaves them out).
func toSeries(ss []sample) series {
	out := series{T: make([]int64, len(ss)), Tables: map[string]*tableSeries{}}
	for i, s := range ss {
		out.T[i] = s.at.UnixMilli()
		for name := range s.queues {
			if out.Tables[name] == nil {
				ts := &tableSeries{Depth: make([]int64, len(ss)), AgeS: make([]int64, len(ss)), Dead: make([]int64, len(ss)),
					InPS: make([]float64, len(ss)), OutPS: make([]float64, len(ss))}
				for j := range ss {
					ts.Depth[j], ts.AgeS[j], ts.Dead[j], ts.InPS[j], ts.OutPS[j] = -1, -1, -1, -1, -1
				}
				out.Tables[name] = ts
			}
		}
	}
	for name, ts := range out.Tables {
		for i, s := range ss {
			q, ok := s.queues[name]
			if !ok {
				continue
			}
			ts.Depth[i], ts.AgeS[i], ts.Dead[i] = q.Rows, int64(q.OldestVisibleAge/time.Second), q.Dead
			if i == 0 {
				continue
			}
			p, ok := ss[i-1].queues[name]
			dt := s.at.Sub(ss[i-1].at).Seconds()
			if !ok || dt <= 0 {
				continue
			}
			ts.InPS[i] = max(0, float64(q.Pushed-p.Pushed)/dt)
			ts.OutPS[i] = max(0, float64(q.Popped+q.Acked-p.Popped-p.Acked)/dt)
		}
	}
	return out
}
