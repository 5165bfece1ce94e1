//go:build unix

package embedded_test

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time the process used so far, user and
// system, or -1 where it cannot tell.
func processCPU() time.Duration {
	var u syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &u) != nil {
		return -1
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
