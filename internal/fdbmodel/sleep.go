package fdbmodel

import (
	"runtime"
	"slices"
	"sync"
	"time"
)

// Sleep blocks for d, accurately below a millisecond, for Config.Sleep.
// time.Sleep rounds such waits up to about a millisecond on Linux (the
// runtime's timers wake it through epoll, whose timeout is in
// milliseconds), which would make a 0.25 ms read a 1 ms one. Sleep instead
// sleeps in the kernel (nanosleep) for d less that call's usual overshoot,
// measured once, then yields until d has passed. Each sleeping goroutine
// holds an OS thread meanwhile.
func Sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	deadline := time.Now().Add(d)
	if s := d - overshoot(); s > 0 {
		nanosleep(s)
	}
	for time.Now().Before(deadline) {
		runtime.Gosched()
	}
}

// calibration is nanosleep's median overshoot, measured once, at most
// maxOvershoot (a busy machine's outliers are not the rule).
var calibration struct {
	once sync.Once
	over time.Duration
}

const (
	calibrationRuns = 21
	calibrationWait = 200 * time.Microsecond
	maxOvershoot    = 200 * time.Microsecond
)

func overshoot() time.Duration {
	calibration.once.Do(func() {
		if !preciseNanosleep {
			return
		}
		over := make([]time.Duration, calibrationRuns)
		for i := range over {
			t0 := time.Now()
			nanosleep(calibrationWait)
			over[i] = time.Since(t0) - calibrationWait
		}
		slices.Sort(over)
		calibration.over = min(max(over[len(over)/2], 0), maxOvershoot)
	})
	return calibration.over
}
