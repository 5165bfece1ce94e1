package cputime_test

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/internal/cputime"
)

// Spinning uses CPU time, which both clocks see growing.
func TestClocksGrowWithWork(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p0, okP := cputime.Process()
	t0, okT := cputime.Thread()
	if !okP {
		t.Skip("this platform reports no process CPU time")
	}
	x := 0
	for {
		for i := range 1_000_000 {
			x += i
		}
		p1, _ := cputime.Process()
		t1, _ := cputime.Thread()
		if p1 > p0 && (!okT || t1 > t0) {
			require.NotZero(t, x)
			return
		}
	}
}
