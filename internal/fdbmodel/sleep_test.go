package fdbmodel_test

import (
	"slices"
	"testing"
	"time"

	"github.com/fdbqueue/fdbqueue/internal/fdbmodel"
)

// BenchmarkSleep measures how far past its wait each way of sleeping
// wakes, for the model's latencies: mean, median and p99 in microseconds.
// Not asserted: it depends on the machine and its load.
//
//	go test -run - -bench Sleep ./internal/fdbmodel/
func BenchmarkSleep(b *testing.B) {
	for _, s := range []struct {
		name  string
		sleep func(time.Duration)
	}{{"time.Sleep", time.Sleep}, {"fdbmodel.Sleep", fdbmodel.Sleep}} {
		for _, d := range []time.Duration{
			fdbmodel.DefaultLatencies.Read,
			fdbmodel.DefaultLatencies.GRV,
			fdbmodel.DefaultLatencies.Commit / 2,
		} {
			b.Run(s.name+"/"+d.String(), func(b *testing.B) {
				var late []time.Duration
				for b.Loop() {
					t0 := time.Now()
					s.sleep(d)
					late = append(late, time.Since(t0)-d)
				}
				slices.Sort(late)
				var sum time.Duration
				for _, l := range late {
					sum += l
				}
				us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
				b.ReportMetric(us(sum/time.Duration(len(late))), "late-us-mean")
				b.ReportMetric(us(late[(len(late)-1)/2]), "late-us-p50")
				b.ReportMetric(us(late[(len(late)-1)*99/100]), "late-us-p99")
			})
		}
	}
}
