package bench

// fdbqueue bench --model: the in-memory engine on a modeled FoundationDB
// cluster (internal/fdbmodel), which sleeps each wait a statement makes
// and counts them, so that the report gives the waits and read requests of
// each statement beside its throughput and latency.

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	fdbqueue "github.com/fdbqueue/fdbqueue/driver"
	"github.com/fdbqueue/fdbqueue/internal/fdbmodel"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
)

// modelConfig labels the runs on the modeled cluster (JSON config).
const modelConfig = "fdb-model"

// maxModelLatency bounds --model-grv, --model-read and --model-commit.
const maxModelLatency = time.Second

// checkModel checks --model and its latencies; set holds the flags given.
func (o *benchOptions) checkModel(set map[string]bool, lat fdbmodel.Latencies) error {
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"model-grv", lat.GRV}, {"model-read", lat.Read}, {"model-commit", lat.Commit}} {
		switch {
		case set[f.name] && !o.model:
			return usagef("--%s sets a latency of the modeled cluster: give --model too, as in fdbqueue bench --model --%s %v memory:", f.name, f.name, f.d)
		case f.d <= 0 || f.d > maxModelLatency:
			return usagef("--%s %v: a duration above 0 and up to %v, as in 400us or 1.5ms", f.name, f.d, maxModelLatency)
		}
	}
	if !o.model {
		return nil
	}
	if o.cfg.Engine != fdbqueue.EngineMemory || len(o.cfg.Params) > 0 {
		return usagef("--model runs the in-memory engine on the modeled cluster: give memory: (or memory:NAME), without parameters, not %s", o.dsn)
	}
	o.modelLat = lat
	o.config = modelConfig
	return nil
}

// openBenchDB opens the database the bench measures: the DSN's, or with
// --model its in-memory engine on the modeled cluster, each wait slept.
func openBenchDB(o *benchOptions) (*sql.DB, error) {
	if !o.model {
		return sql.Open(fdbqueue.DriverName, o.dsn)
	}
	engine := fdbmodel.Wrap(embedded.Open(o.cfg.Name, embedded.Config{}), fdbmodel.Config{Latencies: o.modelLat, Sleep: fdbmodel.Sleep})
	return sql.OpenDB(fdbqueue.NewConnectorOn(engine)), nil
}

// fdbWaits, when set, is the running total of the waits that the
// FoundationDB engine's transactions in this process made, as the test
// double of libfdb_c (internal/fdbshim) counts them through the real
// bindings: the tests that run the bench over it set it
// (bench_fdb_test.go). A real cluster's client library counts nothing: in
// the fdbqueue binary it stays unset, and fdb: runs have no waits.
var fdbWaits atomic.Pointer[func() fdbmodel.Counts]

// countsWaits reports whether the bench counts its statements' waits: on
// the modeled cluster, or on fdb: over the test double.
func (o *benchOptions) countsWaits() bool {
	return o.model || o.cfg != nil && o.cfg.Engine == fdbqueue.EngineFDB && fdbWaits.Load() != nil
}

// metered runs fn, whose statements a run times, on ctx; where the bench
// counts waits it appends what they cost to into. On the modeled cluster,
// a Collector deeper in fn's context takes the counts of the statements
// under it instead; over the test double, a statement costs the
// difference of the running total, which holds the waits of the
// statements it overlapped too (newWaitStats keeps one client's only).
func (b *bencher) metered(ctx context.Context, into *[]fdbmodel.Counts, fn func(context.Context) error) error {
	if !b.o.model {
		if !b.o.countsWaits() {
			return fn(ctx)
		}
		total := *fdbWaits.Load()
		before := total()
		err := fn(ctx)
		*into = append(*into, total().Sub(before))
		return err
	}
	var col fdbmodel.Collector
	err := fn(fdbmodel.WithCollector(ctx, &col))
	*into = append(*into, col.Counts())
	return err
}

// waitStats are the modeled costs of a run's statements (JSON "waits",
// "lease_waits", "ack_waits"): a statement's sequential waits (its latency
// on a cluster is about that many round trips), nearest-rank percentiles
// as the latencies'; the read requests it sent and the transaction
// attempts it took, means.
type waitStats struct {
	Samples  int64   `json:"samples"` // statements counted: those timed
	P50      int     `json:"p50"`
	P99      int     `json:"p99"`
	Max      int     `json:"max"`
	Mean     float64 `json:"mean"`
	Requests float64 `json:"requests_per_stmt"` // point reads, GetMany keys and range batches sent
	Attempts float64 `json:"attempts_per_stmt"` // 1 + retries
}

// newWaitStats sums up samples, one a statement, those of each client
// apart; nil where the bench counts no waits, for no statement, and over
// the test double for statements of several clients (each one's count
// holds the others' it overlapped).
func (b *bencher) newWaitStats(samples ...[]fdbmodel.Counts) *waitStats {
	all := slices.Concat(samples...)
	if !b.o.countsWaits() || len(all) == 0 {
		return nil
	}
	if !b.o.model && len(slices.DeleteFunc(slices.Clone(samples), func(s []fdbmodel.Counts) bool { return len(s) == 0 })) > 1 {
		return nil
	}
	waits := make([]int, len(all))
	var total fdbmodel.Counts
	for i, c := range all {
		waits[i] = c.Waits()
		total.Add(c)
	}
	slices.Sort(waits)
	n := float64(len(all))
	return &waitStats{
		Samples: int64(len(all)),
		P50:     nearestRank(waits, 50), P99: nearestRank(waits, 99), Max: waits[len(waits)-1],
		Mean:     float64(total.Waits()) / n,
		Requests: float64(total.Gets+total.GetManyKeys+total.Batches) / n,
		Attempts: float64(total.Attempts) / n,
	}
}

// modelMeta is the modeled cluster's latencies, on every JSON line of a
// --model bench (JSON "model").
type modelMeta struct {
	GRVMS    float64 `json:"grv_ms"`
	ReadMS   float64 `json:"read_ms"`
	CommitMS float64 `json:"commit_ms"`
}

func newModelMeta(o *benchOptions) *modelMeta {
	if !o.model {
		return nil
	}
	return &modelMeta{GRVMS: ms(o.modelLat.GRV), ReadMS: ms(o.modelLat.Read), CommitMS: ms(o.modelLat.Commit)}
}

// modelHeader is the header's lines on the waits: the modeled cluster's
// latencies, or why a run on FoundationDB has no waits columns.
func modelHeader(o *benchOptions) string {
	switch {
	case o.model:
		l := o.modelLat
		return fmt.Sprintf("modeled FoundationDB cluster (internal/fdbmodel): the in-memory engine, each wait slept: GRV %.3f ms, read %.3f ms, commit %.3f ms\n"+
			"waits p50/p99/max (push, pop, get_task, lease): a statement's sequential waits (round trips), nearest-rank; reqs/stmt: read requests it sent, mean; modeled, not measured on a cluster\n",
			ms(l.GRV), ms(l.Read), ms(l.Commit))
	case o.countsWaits():
		return "waits p50/p99/max: a statement's sequential waits through the real bindings, counted by the FoundationDB test double (internal/fdbshim) by the model's rules, one client's runs only; not a cluster\n"
	case o.cfg != nil && o.cfg.Engine == fdbqueue.EngineFDB:
		return "waits: not counted on a cluster (the FoundationDB engine has no counter); fdbqueue bench --model memory: gives the modeled waits of these statements\n"
	}
	return ""
}

// waitsHead is the header of a row's waits columns, label before each,
// and waitsCells their cells: none off the modeled cluster, n/a for a run
// with no statement counted.
func (r *benchReport) waitsHead(label string) string {
	if !r.o.countsWaits() {
		return ""
	}
	return fmt.Sprintf("  %s %s", label+"waits p50/p99/max", label+"reqs/stmt")
}

func (r *benchReport) waitsCells(label string, w *waitStats) string {
	if !r.o.countsWaits() {
		return ""
	}
	waits, reqs := "n/a", "n/a"
	if w != nil {
		waits, reqs = fmt.Sprintf("%d/%d/%d", w.P50, w.P99, w.Max), fmt.Sprintf("%.1f", w.Requests)
	}
	return fmt.Sprintf("  %*s %*s", len(label+"waits p50/p99/max"), waits, len(label+"reqs/stmt"), reqs)
}
