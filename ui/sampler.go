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
	history int        // the samples kept at most
	ring    []sample   // the samples, grown to history, oldest first from next once full
	next    int        // where the next sample goes
	full    bool       // the ring has wrapped
	lastErr error      // the last read's error, nil after a success
	lastSet *tableSet  // the last sample's tables, shared by the next while the same
}

// sameNames says whether qs are the tables of names, in its order.
func sameNames(names []string, qs []metrics.Queue) bool {
	if len(names) != len(qs) {
		return false
	}
	for i, q := range qs {
		if names[i] != q.Name {
			return false
		}
	}
	return true
}

// sample is one read of fdbqueue_queues: a point a table, in the order
// of tables.names. Samples share their tableSet while the tables stay
// the same, so a sample costs 40 bytes a table: history × tables × 40
// bytes in all (12 MB for 1,000 tables and 300 samples).
type sample struct {
	at     time.Time
	tables *tableSet
	points []point
}

// tableSet is the tables of a sample, and where each is in its points.
type tableSet struct {
	names []string
	index map[string]int
}

// point is what the plots show of one table at one sample.
type point struct {
	rows, ageS, dead int64
	pushed, done     int64 // counters: done is popped + acked
}

func startSampler(db *sql.DB, interval time.Duration, history int, timeout time.Duration) *sampler {
	ctx, cancel := context.WithCancel(context.Background())
	s := &sampler{db: db, interval: interval, timeout: timeout, cancel: cancel, done: make(chan struct{}), history: history}
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
	set := s.lastSet
	if set == nil || !sameNames(set.names, qs) {
		set = &tableSet{names: make([]string, len(qs)), index: make(map[string]int, len(qs))}
		for i, q := range qs {
			set.names[i] = q.Name
			set.index[q.Name] = i
		}
		s.lastSet = set
	}
	pts := make([]point, len(qs))
	for i, q := range qs {
		pts[i] = point{rows: q.Rows, ageS: int64(q.OldestVisibleAge / time.Second), dead: q.Dead, pushed: q.Pushed, done: q.Popped + q.Acked}
	}
	smp := sample{at: time.Now(), tables: set, points: pts}
	if len(s.ring) < s.history {
		// Grown as samples come, not made at its full length: a long
		// history costs what it holds.
		s.ring = append(s.ring, smp)
		s.next = len(s.ring) % s.history
		s.full = s.next == 0
		return
	}
	s.ring[s.next] = smp
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
// acked) between samples, at times T (unix milliseconds); Total is the
// rates summed over every table.
type series struct {
	T      []int64                 `json:"t"`
	Tables map[string]*tableSeries `json:"tables"`
	Total  rates                   `json:"total"`
}

type tableSeries struct {
	Depth []int64 `json:"depth"`
	AgeS  []int64 `json:"ageS"`
	Dead  []int64 `json:"dead"`
	rates
}

type rates struct {
	InPS  []float64 `json:"inPerS"`
	OutPS []float64 `json:"outPerS"`
}

// toSeries turns samples into series: of the tables want says (every
// table for nil), and Total of all. A table missing from a sample (not
// created yet, or dropped) has -1 there; the rates of the first sample,
// and across a gap, are -1 too (the page leaves them out), and a Total
// is -1 where no table has a rate.
func toSeries(ss []sample, want func(string) bool) series {
	out := series{T: make([]int64, len(ss)), Tables: map[string]*tableSeries{},
		Total: rates{InPS: make([]float64, len(ss)), OutPS: make([]float64, len(ss))}}
	var seen *tableSet
	for i, s := range ss {
		out.T[i] = s.at.UnixMilli()
		out.Total.InPS[i], out.Total.OutPS[i] = -1, -1
		if s.tables == seen {
			continue
		}
		seen = s.tables
		for _, name := range s.tables.names {
			if out.Tables[name] != nil || want != nil && !want(name) {
				continue
			}
			ts := &tableSeries{Depth: make([]int64, len(ss)), AgeS: make([]int64, len(ss)), Dead: make([]int64, len(ss)),
				rates: rates{InPS: make([]float64, len(ss)), OutPS: make([]float64, len(ss))}}
			for j := range ss {
				ts.Depth[j], ts.AgeS[j], ts.Dead[j], ts.InPS[j], ts.OutPS[j] = -1, -1, -1, -1, -1
			}
			out.Tables[name] = ts
		}
	}
	for i, s := range ss {
		var prev *sample
		dt := 0.0
		if i > 0 {
			prev = &ss[i-1]
			dt = s.at.Sub(prev.at).Seconds()
		}
		for j, name := range s.tables.names {
			p := s.points[j]
			ts := out.Tables[name]
			if ts != nil {
				ts.Depth[i], ts.AgeS[i], ts.Dead[i] = p.rows, p.ageS, p.dead
			}
			if prev == nil || dt <= 0 {
				continue
			}
			k, ok := prev.tables.index[name]
			if !ok {
				continue
			}
			in := max(0, float64(p.pushed-prev.points[k].pushed)/dt)
			done := max(0, float64(p.done-prev.points[k].done)/dt)
			if ts != nil {
				ts.InPS[i], ts.OutPS[i] = in, done
			}
			out.Total.InPS[i] = max(0, out.Total.InPS[i]) + in
			out.Total.OutPS[i] = max(0, out.Total.OutPS[i]) + done
		}
	}
	return out
}

// lastRates are a table's rates between the last two samples, -1 when
// either lacks it.
func lastRates(ss []sample, name string) (in, out float64) {
	if len(ss) < 2 {
		return -1, -1
	}
	a, b := ss[len(ss)-2], ss[len(ss)-1]
	i, ok := a.tables.index[name]
	j, ok2 := b.tables.index[name]
	dt := b.at.Sub(a.at).Seconds()
	if !ok || !ok2 || dt <= 0 {
		return -1, -1
	}
	return max(0, float64(b.points[j].pushed-a.points[i].pushed)/dt), max(0, float64(b.points[j].done-a.points[i].done)/dt)
}
